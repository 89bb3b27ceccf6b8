"""Each program, handed a bad file of each class the fuzz tests cover (tests/test_input_fuzz.py,
tests/env/test_map_fuzz.py), ends with one line naming the file, exit status 2, no traceback and
nothing written."""
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT


def bad_files(folder):
    """A file of each class: garbage bytes as weights, a config that is not YAML, a report that is
    not JSON, a map of NaN."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "weights.pt").write_bytes(b"\x80\x04not a checkpoint")
    (folder / "config.yaml").write_text("model: [\n")
    (folder / "report.json").write_text('{"seed":')
    np.save(folder / "map.npy", np.full((8, 8), np.nan))
    return folder


@pytest.mark.parametrize("argv, culprit", [
    (["evaluate.py", "--checkpoint", "{d}/weights.pt", "--json", "{d}/out.json"], "weights.pt"),
    (["visualize.py", "--checkpoint", "{d}/weights.pt", "--out", "{d}/out"], "weights.pt"),
    (["train.py", "--init-from", "{d}/weights.pt", "run.run_dir={d}/out"], "weights.pt"),
    (["train.py", "--config", "{d}/config.yaml", "run.run_dir={d}/out"], "config.yaml"),
    (["evaluate.py", "--config", "{d}/config.yaml", "--policy", "greedy", "--json", "{d}/out.json"], "config.yaml"),
    (["compare.py", "{d}/report.json", "{d}/report.json"], "report.json"),
    (["evaluate.py", "--policy", "greedy", "--env", "map_file={d}/map.npy", "--json", "{d}/out.json"], "map.npy"),
    (["python", "-m", "run.pretrained", "{d}/weights.pt", "{d}/out.pt"], "weights.pt"),
])
def test_a_bad_file_ends_the_program_in_one_line_naming_it(tmp_path, argv, culprit):
    folder = bad_files(tmp_path / "in")
    command = [arg.format(d=folder) for arg in argv]
    command = [sys.executable, *command[1:]] if command[0] == "python" else [sys.executable, *command]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert culprit in done.stderr.strip().splitlines()[-1], done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml", "map.npy", "report.json", "weights.pt"]


def test_a_report_of_the_wrong_shape_is_named_by_compare(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"per_episode": []}))
    (tmp_path / "b.json").write_text(json.dumps([1, 2]))
    done = subprocess.run([sys.executable, "compare.py", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "a.json" in done.stderr.strip().splitlines()[-1]
