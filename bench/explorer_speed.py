"""Benchmark: the ``Explorer``'s time a decision, agent and planner, next to evaluate.py's move.

    python -m bench.explorer_speed [--checkpoint pretrained/dungeon.pt] [--episodes 5]
        [--seed 0] [--env KEY=VALUE ...]

On ``evaluate.py``'s held-out maps (with a ``map_dir``, episode i plays map i), a robot loop
(examples/robot_loop.py's simulator, its own sensor) feeds the ``Explorer`` from the belief
alone, and each ``Explorer.step`` is timed: the lattice and graph rebuilt from the belief, the
observation, the agent's forward pass (or the planner's lookahead in its predictor's guess), the
cycle rule. Beside it, the peer: the same agent's (and planner's) time a move in ``evaluate.py``
(its move and the env's step, the graph grown rather than rebuilt). One torch thread, after a
warm-up map. Run it alone. Ctrl-C stops it with no figures (exit code 130).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

from bench.planner_speed import seconds_and_moves
from bench.train_speed import timing
from evaluation.play import absent_map_dir_note, episode_options, load_policy
from examples.robot_loop import Simulator, explore
from explorer import Explorer
from graph_batch import argmax_actor
from learning.envs import make_env, with_env_overrides
from planner.actor import planner_actor
from planner.files import read_planner
from run.checkpoint import CheckpointError
from run.seeding import eval_episode_seed


def decision_seconds(explorer: Explorer, maps: list) -> list[float]:
    """Wall seconds of each ``explorer.step`` over whole robot loops on ``maps`` ([(walls, start)])."""
    seconds: list[float] = []
    with timing(explorer, "step", seconds):
        for walls, start in maps:
            explore(explorer, Simulator(walls, start, explorer.sensor_range))
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("pretrained/dungeon.pt"),
                        help="a pretrained file, checkpoint or run folder (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable)")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes {args.episodes}: 1 or more maps")
    try:
        policy, config = load_policy(args.checkpoint)
        planner = read_planner(args.checkpoint)
    except (CheckpointError, FileNotFoundError) as error:
        parser.error(f"--checkpoint: {error}")
    if note := absent_map_dir_note(config.env, args.env, args.checkpoint):
        parser.error(note)
    env_config = with_env_overrides(config.env, args.env)
    torch.set_num_threads(1)
    env = make_env(env_config)
    maps = []
    for i in range(args.episodes + 1):  # the first: a warm-up
        env.reset(seed=eval_episode_seed(args.seed, i), options=episode_options(env_config, i))
        maps.append((env.unwrapped.grid_map.occupied, env.unwrapped.grid_map.start))
    players = {"agent": argmax_actor(policy)}
    if planner is not None:
        players["planner"] = planner_actor(policy, planner)
    rows = []
    try:
        for name, actor in players.items():
            explorer = Explorer(policy, env_config.kwargs, actor)
            decision_seconds(explorer, maps[:1])
            seconds = decision_seconds(explorer, maps[1:])
            peer, moves = seconds_and_moves(actor, env_config, args.episodes, args.seed, 1)
            rows.append((name, 1000 * statistics.median(seconds), 1000 * statistics.mean(seconds), len(seconds),
                         1000 * peer / moves))
    except KeyboardInterrupt:
        print("explorer_speed: stopped before its players were timed; no figures", file=sys.stderr)
        return 130
    height, width = maps[0][0].shape
    print(f"{args.checkpoint} on {args.episodes} map(s) of {height} x {width} cells from episode 1 "
          f"(seed {args.seed}), one torch thread")
    print("| player | Explorer: ms a decision, median | mean | decisions | evaluate.py: ms a move | ratio |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for name, median, mean, count, peer in rows:
        print(f"| {name} | {median:.1f} | {mean:.1f} | {count} | {peer:.1f} | {mean / peer:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
