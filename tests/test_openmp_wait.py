"""Every program sets how torch's idle threads wait before torch loads libgomp, and respects the user's own setting."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openmp_wait import OPENMP_WAIT_VARIABLES, SPIN_COUNT

ROOT = Path(__file__).resolve().parents[1]


def programs() -> list[Path]:
    """The files run as programs: those at the top level and in bench/ with a ``__main__`` block."""
    files = sorted(ROOT.glob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
    return [f for f in files if 'if __name__ == "__main__":' in f.read_text()]


def first_import(path: Path) -> str:
    """The module named by the first import statement other than ``from __future__``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            return node.names[0].name
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            return node.module
    return ""


def test_the_programs_are_found():
    names = {p.name for p in programs()}
    assert {"train.py", "evaluate.py", "ablate.py", "visualize.py", "encoder_vs_torch.py"} <= names


@pytest.mark.parametrize("path", programs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_program_imports_openmp_wait_first(path):
    assert first_import(path) == "openmp_wait", f"{path.name} must import openmp_wait before anything else"


def run_python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in OPENMP_WAIT_VARIABLES}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_training_sets_the_spin_count_before_torch_is_loaded():
    out = run_python("import os, sys, train; order = list(sys.modules); "
                     "print(os.environ['GOMP_SPINCOUNT'], order.index('openmp_wait') < order.index('torch'))")
    assert out == f"{SPIN_COUNT} True"


@pytest.mark.parametrize("user_setting", [{"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": "7"}])
def test_a_users_own_setting_is_kept(user_setting):
    out = run_python("import os, openmp_wait; print({k: os.environ.get(k) for k in openmp_wait.OPENMP_WAIT_VARIABLES})",
                     **user_setting)
    expected = {name: user_setting.get(name) for name in OPENMP_WAIT_VARIABLES}
    assert out == str(expected)
