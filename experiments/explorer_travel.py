"""The Explorer on a robot loop against evaluate.py's agent: travel per map on the same maps.

    python -m experiments.explorer_travel [--checkpoint pretrained/default.pt] [--episodes 12]
        [--seed 0] [--layout] [--no-sides] [--env KEY=VALUE ...]

On ``evaluate.py``'s held-out maps (``--seed``; with a ``map_dir``, episode i plays map i), the
agent plays each map in the env as ``evaluate.py`` does, and the ``Explorer`` explores it again
in examples/robot_loop.py's simulator (its own ray casting; ``--no-sides``: a sensor that does
not see the sides of the free cells it sees, as the env's does), from the belief alone or, with
``--layout``, given the map's walls. Prints the Explorer's travel over the env agent's, map by
map, mean ± 95% CI, and the lowest coverage it left a map at.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from env.episode import run_episode
from evaluation.play import episode_options, load_policy
from evaluation.stats import format_mean_ci, mean_ci
from examples.robot_loop import Simulator, explore
from explorer import Explorer
from graph_batch import argmax_actor
from learning.envs import make_env, with_env_overrides
from run.seeding import eval_episode_seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("pretrained/default.pt"))
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layout", action="store_true", help="give the Explorer the map's walls")
    parser.add_argument("--no-sides", action="store_true", help="a simulated sensor that sees no sides of free cells")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes {args.episodes}: 1 or more maps")
    policy, config = load_policy(args.checkpoint)
    env_config = with_env_overrides(config.env, args.env)
    env = make_env(env_config)
    ratios, coverages = [], []
    for i in range(args.episodes):
        result, _ = run_episode(env, argmax_actor(policy), eval_episode_seed(args.seed, i),
                                options=episode_options(env_config, i))
        world = env.unwrapped.grid_map
        explorer = Explorer(policy, env_config.kwargs, layout=world.occupied if args.layout else None)
        simulator = Simulator(world.occupied, world.start, explorer.sensor_range, sees_sides=not args.no_sides)
        explore(explorer, simulator)
        ratios.append(simulator.travel / result.travel_distance)
        coverages.append(simulator.coverage())
    source = "the map's walls" if args.layout else "the belief alone"
    sensor = "no sides seen" if args.no_sides else "sides seen"
    print(f"{args.checkpoint} on {args.episodes} held-out maps (--seed {args.seed}), lattice from {source}, {sensor}: "
          f"Explorer's travel / evaluate.py's {format_mean_ci(*mean_ci(ratios), 3)}; lowest coverage {min(coverages):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
