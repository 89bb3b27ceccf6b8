"""Map files fuzzed: whatever a user points ``map_file`` or ``map_dir`` at loads as a map or is refused
with a ``MapError`` naming the file, never another exception.

The classes of input covered: ``.npy`` arrays of every numeric dtype and of strings, 0 to 3
dimensions, any shape from empty to a few hundred cells a side, NaN and infinite values, all
walls; PNG images of every mode PIL writes as PNG (1, L, LA, P, RGB, RGBA, I;16) and bit depth, of any
size from 1 x 1; any file truncated at any byte, random bytes under a map's name, an empty file;
and, through ``evaluate.py``, a folder whose one map has no free cell: exit status 2, one line
naming the file, no report written.
"""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from env.map_io import MapError, load_map
from tests.helpers import ROOT

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def loads_or_is_named(path) -> None:
    """The property: a map comes back, or a ``MapError`` whose message starts with the file."""
    try:
        loaded = load_map(path)
    except MapError as error:
        assert str(error).startswith((str(path), f"map file {str(path)!r}")), error
        return
    assert loaded.occupied.dtype == bool and loaded.occupied.ndim == 2 and not loaded.occupied.all()


numeric = st.one_of(hnp.boolean_dtypes(), hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(),
                    hnp.floating_dtypes(), hnp.unicode_string_dtypes(max_len=2))


@FUZZ
@given(array=hnp.arrays(numeric, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=40)))
def test_any_npy_array_loads_or_is_refused_naming_the_file(tmp_path, array):
    path = tmp_path / "map.npy"
    np.save(path, array)
    loads_or_is_named(path)


@FUZZ
@given(mode=st.sampled_from(["1", "L", "LA", "P", "RGB", "RGBA", "I;16"]), height=st.integers(1, 60),
       width=st.integers(1, 60), seed=st.integers(0, 2**16))
def test_any_png_loads_or_is_refused_naming_the_file(tmp_path, mode, height, width, seed):
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width), dtype=np.uint8)
    path = tmp_path / "map.png"
    Image.fromarray(pixels, "L").convert(mode).save(path)
    loads_or_is_named(path)


@FUZZ
@given(suffix=st.sampled_from([".npy", ".png"]), keep=st.floats(0, 1), junk=st.binary(max_size=64))
def test_a_truncated_or_garbled_file_is_refused_naming_the_file(tmp_path, suffix, keep, junk):
    path = tmp_path / f"map{suffix}"
    if suffix == ".npy":
        np.save(path, np.eye(12, dtype=np.uint8))
    else:
        Image.fromarray(np.eye(12, dtype=np.uint8) * 255).save(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: int(keep * len(whole))] + junk)
    loads_or_is_named(path)


@pytest.mark.parametrize("values, named", [(np.full((8, 8), np.nan), "NaN or infinite"),
                                           (np.ones((8, 8)), "the map has no free cell"),
                                           (np.full((8, 8), "a"), "holds numbers")])
def test_a_map_that_is_no_map_is_named_for_what_it_is(tmp_path, values, named):
    path = tmp_path / "map.npy"
    np.save(path, values)
    with pytest.raises(MapError, match=named):
        load_map(path)


def test_evaluating_a_folder_whose_map_has_no_free_cell_is_one_line_and_writes_nothing(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    np.save(folder / "walls.npy", np.ones((16, 16), dtype=bool))
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "evaluate.py", "--episodes", "1", "--policy", "greedy", "--env",
                           f"map_dir={folder}", "--json", str(report)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"error: {folder / 'walls.npy'}: the map has no free cell (dark pixels, or nonzero .npy "
                    f"values, are obstacles); nothing was written")
    assert not report.exists()
