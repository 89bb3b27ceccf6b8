"""The venv sets how torch's idle threads wait as its interpreter starts (the Makefile's .pth
line): before torch loads libgomp, for every program, and never over the user's own setting."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPENMP_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def spin_count() -> str:
    """The Makefile's ``SPIN_COUNT``."""
    return re.search(r"^SPIN_COUNT := (\d+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)


def run_python(code: str, **env: str) -> str:
    """``code`` in a fresh interpreter of this venv, the OpenMP wait variables only as given."""
    clean = {k: v for k, v in os.environ.items() if k not in OPENMP_WAIT_VARIABLES}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_the_interpreter_sets_the_spin_count_before_anything_is_imported():
    out = run_python("import os, sys; print(os.environ.get('GOMP_SPINCOUNT'), 'torch' in sys.modules)")
    assert out == f"{spin_count()} False"


def test_a_program_and_its_subprocesses_run_with_it():
    code = ("import os, subprocess, sys, train; print(os.environ['GOMP_SPINCOUNT'], subprocess.run([sys.executable, "
            "'-c', 'import os; print(os.environ.get(\"GOMP_SPINCOUNT\"))'], capture_output=True, text=True).stdout.strip())")
    assert run_python(code) == f"{spin_count()} {spin_count()}"


@pytest.mark.parametrize("user_setting", [{"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": "7"}])
def test_a_users_own_setting_is_kept(user_setting):
    out = run_python(f"import os; print({{k: os.environ.get(k) for k in {OPENMP_WAIT_VARIABLES!r}}})", **user_setting)
    assert out == str({name: user_setting.get(name) for name in OPENMP_WAIT_VARIABLES})


def test_no_module_sets_it_on_import():
    # DESIGN.md: no import-time side effects beyond gymnasium registration.
    sources = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and p != Path(__file__)]
    assert not [p for p in sources if "environ[\"GOMP_SPINCOUNT\"] =" in p.read_text() or "import openmp_wait" in p.read_text()]
