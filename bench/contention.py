"""A short training alone and beside a second CPU-bound torch process, under each OpenMP wait setting.

    python -m bench.contention [--config configs/default.yaml] [--updates 3] [--settings project libgomp ...]
    python -m bench.contention --competitor libgomp --settings project
    python -m bench.contention --alone-rounds 3 --settings project libgomp THREADS=1

The settings of torch's OpenMP runtime (libgomp): ``project`` (nothing set: the programs' own
choice: the venv's ``GOMP_SPINCOUNT``, the Makefile's ``SPIN_COUNT`` rounds of spinning before an
idle thread sleeps),
``libgomp`` (libgomp's default, 300,000 rounds; set explicitly, since our programs would
otherwise set their own), ``ACTIVE`` / ``PASSIVE`` (``OMP_WAIT_POLICY``: spin for ever / sleep at
once), ``SPIN=N`` (``GOMP_SPINCOUNT=N``) or ``THREADS=N`` (the project's setting with
``run.torch_threads=N``). Under each, runs ``train.py`` for ``--updates`` updates alone, then
again beside a competitor: a second process doing torch matrix products on every core (another
training, an evaluation or the tests, as users run them), under the same setting or, with
``--competitor libgomp``, under libgomp's default (any other torch program). Prints each
training's env steps/s (from the run's ``charts/SPS``), the ratio beside / alone (a fair share
of the cores would be 0.5x), and the competitor's products per second alone and beside. With
``--alone-rounds R`` it only trains alone, the settings taking turns for R rounds (for the
speed alone, which the machine's noise blurs in a single run). Takes a few minutes (more for
``libgomp``, whose training beside a competitor crawls); run it alone on the machine. The
settings take effect only in a process that has not imported torch yet, hence the subprocesses.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from config import load_config
from learning import tags

OPENMP_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""libgomp's two settings of how an idle thread waits; the venv sets the second unless either is set."""
LIBGOMP_SPIN_COUNT = 300_000
"""libgomp's own spin count when neither OpenMP wait variable is set."""

ROOT = Path(__file__).resolve().parents[1]
COMPETITOR = """
import signal, sys, time, torch
x = torch.randn(384, 384)
count, start = 0, time.perf_counter()
def stop(*_):
    print(count / (time.perf_counter() - start), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
while True:
    x = torch.tanh(x @ x)
    count += 1
"""


def environment(setting: str) -> dict[str, str]:
    """This process's environment with the OpenMP variables of ``setting`` (and no others)."""
    env = {k: v for k, v in os.environ.items() if k not in OPENMP_WAIT_VARIABLES}
    if setting in ("ACTIVE", "PASSIVE"):
        env["OMP_WAIT_POLICY"] = setting
    elif setting == "libgomp":
        env["GOMP_SPINCOUNT"] = str(LIBGOMP_SPIN_COUNT)
    elif setting.startswith("SPIN="):
        env["GOMP_SPINCOUNT"] = setting.removeprefix("SPIN=")
    elif setting != "project" and not setting.startswith("THREADS="):
        raise SystemExit(f"unknown setting {setting!r}: project, libgomp, ACTIVE, PASSIVE, SPIN=N or THREADS=N")
    return env


def thread_overrides(setting: str) -> list[str]:
    """``train.py`` overrides of a ``THREADS=N`` setting (none for the others)."""
    return [f"run.torch_threads={setting.removeprefix('THREADS=')}"] if setting.startswith("THREADS=") else []


def start_competitor(setting: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", COMPETITOR], cwd=ROOT, env=environment(setting),
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def stop_competitor(process: subprocess.Popen) -> float:
    """Its matrix products per second."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    return float(out.strip())


def training_sps(config: str, updates: int, setting: str, run_dir: Path) -> float:
    """env steps/s over a short ``train.py`` run's updates (its last ``charts/SPS``)."""
    steps = f"ppo.total_timesteps={updates * load_config(config).batch_size}"
    subprocess.run([sys.executable, "train.py", "--config", config, steps, "run.image_every=0",
                    f"run.run_dir={run_dir}", *thread_overrides(setting)], cwd=ROOT, env=environment(setting),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return events.Scalars(tags.SPS)[-1].value


def competitor_alone(setting: str, seconds: float) -> float:
    process = start_competitor(setting)
    time.sleep(seconds)
    return stop_competitor(process)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--settings", nargs="+", default=["project", "libgomp"])
    parser.add_argument("--competitor", choices=("same", "libgomp"), default="same",
                        help="the competitor's OpenMP setting: the training's, or libgomp's default")
    parser.add_argument("--seconds", type=float, default=10, help="how long the competitor is timed alone")
    parser.add_argument("--alone-rounds", type=int, default=0, help="only train alone, settings alternating")
    args = parser.parse_args(argv)
    if args.alone_rounds:
        with tempfile.TemporaryDirectory() as tmp:
            print("| round | " + " | ".join(f"{setting} (steps/s)" for setting in args.settings) + " |")
            print("|" + " --- |" * (len(args.settings) + 1))
            for round_ in range(1, args.alone_rounds + 1):
                rates = [training_sps(args.config, args.updates, setting, Path(tmp) / f"{round_}_{i}")
                         for i, setting in enumerate(args.settings)]
                print(f"| {round_} | " + " | ".join(f"{rate:.0f}" for rate in rates) + " |", flush=True)
        return
    print(f"competitor's setting: {args.competitor}")
    print("| OpenMP setting | training alone (steps/s) | beside a competitor | beside / alone | "
          "competitor alone (products/s) | competitor beside |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for i, setting in enumerate(args.settings):
            rival = setting if args.competitor == "same" else "libgomp"
            alone = training_sps(args.config, args.updates, setting, Path(tmp) / f"{i}_alone")
            competitor_solo = competitor_alone(rival, args.seconds)
            competitor = start_competitor(rival)
            beside = training_sps(args.config, args.updates, setting, Path(tmp) / f"{i}_beside")
            competitor_beside = stop_competitor(competitor)
            print(f"| {setting} | {alone:.0f} | {beside:.0f} | {beside / alone:.2f}x | {competitor_solo:.0f} | "
                  f"{competitor_beside:.0f} |", flush=True)


if __name__ == "__main__":
    main()
