"""How long torch's idle CPU threads spin before they sleep: briefly, so a process beside ours keeps its share.

torch's CPU wheels run their threads on libgomp (GNU OpenMP). Between two parallel operations a
thread with nothing to do spins, by default for 300,000 rounds, before it sleeps. Alone on the
machine that saves waking it for the next operation. Beside another process using the same
cores it is a collapse: each process's spinning threads hold the cores that the other's threads
need to reach the next barrier. A default training beside a second torch process ran at 0.06x
its speed alone (docs/performance.md, "Sharing the machine").

Importing this module, before torch, sets ``GOMP_SPINCOUNT`` to ``SPIN_COUNT`` rounds: as fast as
the default alone, at least a fair share beside a competitor (same section). libgomp reads its
settings once, when torch loads it, so every program that runs torch imports this module first:
``train.py``, ``evaluate.py``, ``ablate.py``, ``visualize.py`` and the benchmarks. Their
subprocesses (async envs, Ray workers started by them) inherit it. A user's own
``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is left as it is. Imported after torch (in the tests,
say) it reaches only the subprocesses.
"""
from __future__ import annotations

import os

SPIN_COUNT = 1000
"""Rounds an idle thread spins before it sleeps (libgomp's default is 300,000; 0 is ``PASSIVE``)."""

OPENMP_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

if not any(name in os.environ for name in OPENMP_WAIT_VARIABLES):
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
