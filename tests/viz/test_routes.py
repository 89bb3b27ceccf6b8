"""viz.routes: players' last frames side by side, one panel each."""
import numpy as np
import pytest
from PIL import Image

from viz.routes import routes_figure


def test_one_panel_per_route_and_one_map_only(tmp_path):
    frames = {f"player {i}": np.full((40, 60, 3), 60 * i, dtype=np.uint8) for i in range(3)}
    path = tmp_path / "routes.png"
    routes_figure(frames, path)
    wide = np.asarray(Image.open(path).convert("RGB")).shape
    routes_figure(dict(list(frames.items())[:1]), path)
    single = np.asarray(Image.open(path).convert("RGB")).shape
    assert wide[1] > 2.5 * single[1]  # three panels against one
    with pytest.raises(ValueError, match="draw routes on one map"):
        routes_figure({"a": frames["player 0"], "b": np.zeros((40, 61, 3), np.uint8)}, path)
    with pytest.raises(ValueError, match="no routes"):
        routes_figure({}, path)
