"""Benchmark: a training's collection and PPO update, a config against variants of it, alternating.

    python -m bench.train_speed [--config configs/dungeon.yaml] [--init-from pretrained/dungeon.pt]
        [--variant "ppo.update_dtype=bfloat16"] ... [--updates 3] [--rounds 2] [key=value ...]

Each round builds one ``learning.trainer.Trainer`` per setting (the config with the trailing overrides,
then each ``--variant``'s overrides on top), from the same weights and seed, and runs
``--updates`` updates of ``train.py``'s loop (no images, no checkpoints written until the end),
timing the collection (``collector.collect``) and the PPO update (``ppo_update``) apart. The first
update of each trainer is a warm-up and is not counted. Settings alternate within a round, so
drift on a shared machine hits each alike. Prints, per setting, the median over rounds of seconds
per update for each part, env steps/s, and the speed-up over the first setting. Run it alone.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import learning.trainer
from config import load_config
from learning.trainer import Trainer


def timed(function: Callable, seconds: list[float]) -> Callable:
    """``function``, appending the wall seconds of each call to ``seconds``."""
    def wrapped(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)
    return wrapped


@contextmanager
def timing(owner: object, name: str, seconds: list[float]) -> Iterator[None]:
    """``owner.name`` replaced, while the block runs, by ``timed`` of it (the original put back after)."""
    original = getattr(owner, name)
    setattr(owner, name, timed(original, seconds))
    try:
        yield
    finally:
        setattr(owner, name, original)


def time_updates(config_path: str, overrides: list[str], updates: int, run_dir: Path) -> tuple[float, float, int]:
    """(collection s, update s) per update, median over updates 2..``updates``, and the batch size."""
    batch = load_config(config_path, overrides).batch_size
    config = load_config(config_path, [*overrides, f"ppo.total_timesteps={batch * updates}", "run.image_every=0",
                                       f"run.checkpoint_every={updates}"])
    collect_s: list[float] = []
    update_s: list[float] = []
    trainer = Trainer.create(config, run_dir)
    trainer.collector.collect = timed(trainer.collector.collect, collect_s)
    with timing(learning.trainer, "ppo_update", update_s):
        trainer.train(progress=False)
    return statistics.median(collect_s[1:]), statistics.median(update_s[1:]), batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/dungeon.yaml")
    parser.add_argument("--init-from", default="pretrained/dungeon.pt", help="weights every setting starts from; '' for random")
    parser.add_argument("--variant", action="append", default=[], help="space-separated overrides on top of the base")
    parser.add_argument("--updates", type=int, default=3, help="updates per trainer; the first is not counted")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config, for every setting")
    args = parser.parse_args()
    if args.updates < 2:
        parser.error(f"--updates must be at least 2 (the first is a warm-up), got {args.updates}")
    base = [*args.overrides, *([f"run.init_from={args.init_from}"] if args.init_from else [])]
    settings = {"base": base, **{variant: [*base, *variant.split()] for variant in args.variant}}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}
    batch: dict[str, int] = {}  # env steps an update: a variant may change num_envs or num_steps
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for i, (name, overrides) in enumerate(settings.items()):
                collect_s, update_s, batch[name] = time_updates(args.config, overrides, args.updates,
                                                                Path(tmp) / f"{r}_{i}")
                times[name].append((collect_s, update_s))
                print(f"round {r}, {name}: collection {collect_s:.2f} s, update {update_s:.2f} s", flush=True)
    print(f"\n{args.config} {' '.join(base)}: seconds per update, median of {args.rounds} rounds")
    print("| setting | env steps an update | collection s | PPO update s | env steps/s | speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    base_sps = None
    for name, pairs in times.items():
        collect_s, update_s = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        sps = batch[name] / (collect_s + update_s)
        base_sps = base_sps or sps
        print(f"| {name} | {batch[name]} | {collect_s:.2f} | {update_s:.2f} | {sps:.0f} | {sps / base_sps:.2f}x |")


if __name__ == "__main__":
    main()
