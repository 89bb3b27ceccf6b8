"""Benchmark: the planner's time a move and where it goes, next to its agent's and greedy's.

    python -m bench.planner_speed [--checkpoint pretrained/default.pt] [--episodes 5]
        [--first-episode 0] [--seed 0] [--env KEY=VALUE ...]

Plays a pretrained file's planner (``planner.actor.planner_actor``: the agent planning in its map
predictor's guess), the agent alone (its argmax) and greedy on the same held-out maps of
``evaluate.py`` (with a ``map_dir``, episode i plays map i), one torch thread, each after a warm-up
episode on the first map. Prints each one's seconds a map and milliseconds a move, and how a
planner's move splits: the guess (the predictor), building the guessed world
(``planner.worlds.imagined_world``: its lattice and graph), greedy's play-outs in it
(``planner.lookahead.lookahead_costs``), the agent's forward pass, and the rest (the real env's
step, the choice). The parts are wall-clock timers around those functions, not a profiler, so
they cost what they cost in an evaluation. Run it alone: on a shared 2-core VM whole-episode
times move by 10-20% from run to run, so compare two versions by alternating them. Ctrl-C stops
it with no figures (exit code 130).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import torch

from bench.train_speed import timed, timing
from config import EnvConfig
from env.baselines import greedy
from evaluation.play import AGENT, PLANNER, absent_map_dir_note, evaluate_actors, load_policy
from graph_batch import argmax_actor
from learning.envs import with_env_overrides
from planner import actor as actor_module
from planner import lookahead as lookahead_module
from planner.actor import planning_actor, predicted_guess
from planner.files import read_planner
from run.checkpoint import CheckpointError

PARTS = {
    "guess": "the guess (the map predictor)",
    "world": "building the guessed world",
    "play-outs": "greedy's play-outs in it",
    "policy": "the agent's forward pass",
}


def seconds_and_moves(actor: Callable, env_config: EnvConfig, episodes: int, seed: int, first_episode: int,
                      after_warm_up: Callable[[], None] = lambda: None) -> tuple[float, int]:
    """Wall seconds of ``actor`` on the maps, after a warm-up episode on the first (then
    ``after_warm_up()``), and its moves."""
    evaluate_actors({"warm-up": actor}, env_config, 1, seed, first_episode=first_episode, progress=False)
    after_warm_up()
    start = time.perf_counter()
    results = evaluate_actors({"timed": actor}, env_config, episodes, seed, first_episode=first_episode, progress=False)
    return time.perf_counter() - start, sum(result.steps for result in results["timed"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("pretrained/default.pt"),
                        help="a pretrained file that carries a planner (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--first-episode", type=int, default=0, help="the first held-out episode (with a map_dir: map)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable)")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.first_episode < 0:
        parser.error(f"--episodes {args.episodes} --first-episode {args.first_episode}: 1 or more maps from "
                     f"episode 0 or later")
    try:
        planner = read_planner(args.checkpoint)
        policy, config = load_policy(args.checkpoint)
    except (CheckpointError, FileNotFoundError) as error:
        parser.error(f"--checkpoint: {error}")
    if planner is None:
        parser.error(f"{args.checkpoint} carries no planner (python -m planner.files --planner adds one)")
    if note := absent_map_dir_note(config.env, args.env, args.checkpoint):
        parser.error(note)
    env_config = with_env_overrides(config.env, args.env)
    torch.set_num_threads(1)

    parts: dict[str, list[float]] = {part: [] for part in PARTS}

    def forget_the_warm_up() -> None:
        for seconds in parts.values():
            seconds.clear()

    guess = timed(predicted_guess(planner.predictor, opening=planner.opening), parts["guess"])
    try:
        with ExitStack() as stack:
            stack.enter_context(timing(lookahead_module, "imagined_world", parts["world"]))
            stack.enter_context(timing(lookahead_module, "lookahead_costs", parts["play-outs"]))
            stack.enter_context(timing(actor_module, "forward_each", parts["policy"]))
            planner_timing = seconds_and_moves(planning_actor(policy, guess, planner.prior_weight), env_config,
                                               args.episodes, args.seed, args.first_episode,
                                               after_warm_up=forget_the_warm_up)
        timings = {PLANNER: planner_timing,
                   AGENT: seconds_and_moves(argmax_actor(policy), env_config, args.episodes, args.seed,
                                            args.first_episode),
                   "greedy": seconds_and_moves(greedy, env_config, args.episodes, args.seed, args.first_episode)}
    except KeyboardInterrupt:
        print("planner_speed: stopped before its policies were timed; no figures", file=sys.stderr)
        return 130
    planner_seconds, planner_moves = planner_timing

    print(f"{args.checkpoint} on {args.episodes} map(s) from episode {args.first_episode} (seed {args.seed}), "
          f"one torch thread")
    print("| policy | s a map | ms a move | moves |\n| --- | --- | --- | --- |")
    for name, (seconds, moves) in timings.items():
        print(f"| {name} | {seconds / args.episodes:.3f} | {1000 * seconds / moves:.2f} | {moves} |")
    print("\nA planner's move:\n| part | ms a move | share |\n| --- | --- | --- |")
    rest = planner_seconds - sum(sum(seconds) for seconds in parts.values())
    for label, seconds in [*((PARTS[part], sum(parts[part])) for part in PARTS), ("the rest (the env's step, the choice)", rest)]:
        print(f"| {label} | {1000 * seconds / planner_moves:.2f} | {seconds / planner_seconds:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
