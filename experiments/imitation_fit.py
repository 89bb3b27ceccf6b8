"""Benchmark: how well networks fit the lookahead's labels, judged on states of other episodes.

    python -m experiments.imitation_fit --states runs/fitdata --train 0 1 --held-out 2 [--epochs 8]
        [--variant "model.embed_dim=128 model.n_heads=8"] ... [--config configs/dungeon.yaml]
        [--learning-rate 3e-4] [--temperature T] [--json fit.json] [--save DIR] [key=value ...]

``--states`` is an ``planner.imitation --out`` folder; its ``states_NN.npz`` hold the states a policy
visited with C(s, .) for every move. Each setting (the config with the trailing overrides, then
each ``--variant``'s overrides on top; ``run.init_from=WEIGHTS`` starts from weights, otherwise
the network is fresh) trains with ``planner.imitation``'s loss and optimiser on the ``--train``
rounds' states, one epoch at a time, and after each epoch is judged on the ``--held-out`` round's
states: its expected regret (node spacings), how often its argmax is a best move, and that
move's mean regret (what the move it plays loses). Each round of
``planner.imitation`` plays new episodes, each on a map drawn afresh, so the held-out states come from
episodes the training never saw, mostly on maps it never saw (``planner.imitation.collect``: of the
5,072 training floor plans about one in five recurs after 40,000 training states).
A setting may drop trailing feature columns the states carry (e.g. ``--variant
"env.kwargs.privileged_features=false"`` on states collected with them): every setting then
trains on the same states, with or without those columns. No map is played: the question is
only whether a network (another size, another start, other inputs) can fit the labels better
than the shipped one, which the DAgger rounds could not show (their fit stayed at 0.66-0.69
spacings, docs/results.md section 4). Prints one line per epoch and a table.
``--save DIR`` keeps each setting's trained weights as a pretrained file (``DIR/base.pt``,
``DIR/variant_1.pt``, ...), for ``planner.imitation --init-from`` to go on with DAgger rounds.
Ctrl-C ends the whole benchmark: the epochs finished so far are printed and written, no later
setting starts, and the stopped setting's weights are not saved.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from config import load_config
from env.observation import env_feature_names
from learning.ppo import adam, update_dtype
from planner.imitation import Labelled, fit_on, node_spacing, train_epochs, write_round
from policy import build_policy
from run.interrupt import StopOnSignal
from run.pretrained import load_initial_weights


def fit_curve(name: str, config_path: str, overrides: list[str], train: Labelled, held_out: Labelled, epochs: int,
              learning_rate: float, minibatch: int, ent_coef: float, temperature: float, stop: StopOnSignal,
              save: Path | None = None) -> list[dict]:
    """Per epoch (0: before training) the held-out fit, the training loss parts and seconds, each
    printed as it comes, up to a stop (the epoch in progress is dropped); the trained weights go
    to ``save`` as a pretrained file when given, unless stopped."""
    config = load_config(config_path, overrides)
    torch.manual_seed(config.seed)
    policy = build_policy(config)
    if config.run.init_from:
        load_initial_weights(policy, config)
    optimizer = adam(policy.parameters(), learning_rate)
    spacing = node_spacing(config.env.kwargs)
    buckets = config.ppo.size_buckets
    curve = [{"epoch": 0, "held_out": fit_on(policy, held_out, spacing, buckets), "seconds": 0.0}]
    report(name, curve[-1])
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        trained = train_epochs(policy, optimizer, train, 1, minibatch, spacing, ent_coef, buckets,
                               config.seed * 1_000 + epoch, stop, temperature, update_dtype(config.ppo))
        if stop.requested:
            break
        seconds = time.perf_counter() - start
        curve.append({"epoch": epoch, "held_out": fit_on(policy, held_out, spacing, buckets),
                      "train": trained, "seconds": seconds})
        report(name, curve[-1])
    if save and not stop.requested:
        write_round(save, policy, config, {"from": "experiments.imitation_fit", "epochs": len(curve) - 1,
                                           "states": len(train), "overrides": overrides})
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=Path, required=True, help="an planner.imitation --out folder")
    parser.add_argument("--train", type=int, nargs="+", required=True, help="rounds to train on")
    parser.add_argument("--held-out", type=int, required=True, help="round to judge on")
    parser.add_argument("--config", default="configs/dungeon.yaml")
    parser.add_argument("--variant", action="append", default=[], help="space-separated overrides on top of the base")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--temperature", type=float, default=0.0, help="as planner.imitation's (0: the expected regret)")
    parser.add_argument("--json", type=Path, help="write every setting's curve here")
    parser.add_argument("--save", type=Path, metavar="DIR", help="keep each setting's trained weights here")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config, for every setting")
    args = parser.parse_intermixed_args()
    if args.held_out in args.train:
        parser.error(f"--held-out {args.held_out} is also in --train {args.train}")
    if args.epochs < 1 or args.minibatch < 1 or not args.learning_rate > 0 or args.temperature < 0:
        parser.error(f"--epochs and --minibatch must be at least 1, --learning-rate > 0 and --temperature >= 0; got "
                     f"{args.epochs}, {args.minibatch}, {args.learning_rate} and {args.temperature}")
    settings = {"base": args.overrides, **{v: [*args.overrides, *v.split()] for v in args.variant}}
    columns = {name: env_feature_names(load_config(args.config, overrides).env.kwargs)
               for name, overrides in settings.items()}
    widest = max(columns.values(), key=len)
    for name, names in columns.items():
        if names != widest[:len(names)]:
            parser.error(f"setting {name!r} reads node features {names}, not the leading columns of "
                         f"{widest}: the settings' features must differ only in trailing columns")
    files = {r: args.states / f"states_{r:02d}.npz" for r in [*args.train, args.held_out]}
    missing = [str(path) for path in files.values() if not path.exists()]
    if missing:
        parser.error(f"no such states file: {', '.join(missing)}")
    train = Labelled.join([Labelled.load(files[r], len(widest)) for r in args.train])
    held_out = Labelled.load(files[args.held_out], len(widest))
    print(f"{len(train)} training states (rounds {args.train}), {len(held_out)} held-out (round {args.held_out})")
    curves = {}
    with StopOnSignal("stopping: the epoch in progress is dropped, no later setting starts") as stop:
        for i, (name, overrides) in enumerate(settings.items()):
            if stop.requested:
                break
            save = args.save / (f"variant_{i}.pt" if i else "base.pt") if args.save else None
            n = len(columns[name])
            curves[name] = fit_curve(name, args.config, overrides, train.leading_features(n),
                                     held_out.leading_features(n), args.epochs, args.learning_rate,
                                     args.minibatch, args.ent_coef, args.temperature, stop, save)
            if args.json:
                args.json.write_text(json.dumps(curves, indent=2))
    print("\n| setting | held-out regret, first / best / last epoch | argmax best, last | argmax regret, last "
          "| s an epoch |")
    print("| --- | --- | --- | --- | --- |")
    for name, curve in curves.items():
        regrets = [p["held_out"]["regret"] for p in curve]
        last = curve[-1]["held_out"]
        print(f"| {name} | {regrets[0]:.3f} / {min(regrets):.3f} / {regrets[-1]:.3f} | {last['argmax_best']:.3f} | "
              f"{last['argmax_regret']:.3f} | {curve[-1]['seconds']:.0f} |")


def report(name: str, point: dict) -> None:
    """One epoch of a setting's curve, as a line."""
    fitted = point.get("train", {}).get("regret", float("nan"))
    held_out = point["held_out"]
    print(f"{name}, epoch {point['epoch']}: held-out regret {held_out['regret']:.3f}, argmax best "
          f"{held_out['argmax_best']:.3f}, argmax regret {held_out['argmax_regret']:.3f}; training regret "
          f"{fitted:.3f}; {point['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
