"""How far greedy is from the best possible: greedy against lookaheads that roll greedy out.

    python -m experiments.headroom [--episodes 40] [--seed 0] [--config configs/default.yaml]
                             [--env KEY=VALUE ...] [--reveal D ...] [--reveal-noise P ...] [--worlds K]
                             [--json headroom.json]

A lookahead (``planner.lookahead``) tries every valid move in a copy of the env and plays greedy to the
end of the episode from there; it takes the move whose finished episode travelled least. Two
copies are compared:

- ``oracle``: ``GridExploreEnv.lookahead_copy``, which holds the true map. No policy can match it; it
  shows how much shorter than greedy's a route can be on these maps, i.e. the room above greedy.
- ``belief lookahead``: ``planner.worlds.belief_world``, the robot's belief with every
  unknown cell a wall, so it knows what the agent knows and nothing more. Its rollouts price the
  cost of clearing the frontiers already seen (leaving a pocket behind shows as a return trip).
  It shows how much of that room a one-step lookahead can reach without the map.
- ``revealed_D`` (with ``--reveal D``): the lookahead in a world that holds the true map within D
  steps of the cells the robot knows free and walls beyond (``planner.lookahead.revealed_within``),
  with a lattice of its own (``planner.worlds.imagined_world``). A diagnostic between the
  two: how far past what it has seen a planner must know the map to take the oracle's gain,
  i.e. how much a map predictor would have to get right. ``revealed_D_noise_P`` (with
  ``--reveal-noise P``, for each D): the same with each unknown cell of that reach guessed wrong
  with probability P, drawn afresh each step: how exact such a prediction must be. With
  ``--worlds K`` (K > 1) it prices each move by its mean cost over K such worlds, each wrong on
  cells of its own (noise seeds ``--seed`` .. ``--seed`` + K - 1), as ``revealed_D_noise_P_worlds_K``:
  whether several rough guesses stand in for one sharp one.

Runs nearest frontier, greedy and both lookaheads on the held-out maps of ``evaluate.py`` (the
``--config``'s env, changed by ``--env`` as there; with a ``map_dir``, episode i plays map i) and
prints the per-map travel ratios; ``--json`` keeps every episode, as ``evaluate.py --json`` does,
for ``compare.py``. A lookahead costs about (valid moves) x (moves left) env steps per step: on the
reference's floor plans (``configs/dungeon.yaml``) about 30 ms a state, 1 s an episode.
Ctrl-C or SIGTERM stops after the map in play and reports the maps every policy finished, as
``evaluate.py`` does.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config import load_config
from env.baselines import greedy, nearest_frontier
from evaluation.play import STOP_PLAN, evaluate_actors, map_dir_size
from experiments.travel_report import report_travel
from learning.envs import with_env_overrides
from planner.lookahead import belief_lookahead, greedy_lookahead_oracle, guessed_lookahead, revealed_within
from run.interrupt import StopOnSignal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default="configs/default.yaml", help="the env to play (default: %(default)s)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable)")
    parser.add_argument("--reveal", type=int, action="append", default=[], metavar="D",
                        help="also the lookahead knowing the true map D steps past the known free cells (repeatable)")
    parser.add_argument("--reveal-noise", type=float, action="append", default=[], metavar="P",
                        help="also each --reveal D with every unknown cell in reach guessed wrong with probability P "
                             "(repeatable)")
    parser.add_argument("--worlds", type=int, default=1, metavar="K",
                        help="price each --reveal-noise lookahead's moves over K noisy worlds, not one")
    parser.add_argument("--json", type=Path, help="write every episode's result here, as evaluate.py --json")
    args = parser.parse_args()
    if any(d < 0 for d in args.reveal):
        parser.error(f"--reveal {min(args.reveal)}: a distance in cells must be 0 or more")
    if args.reveal_noise and not args.reveal:
        parser.error("--reveal-noise needs --reveal D (the reach whose cells it guesses wrong)")
    if any(not 0 <= p <= 1 for p in args.reveal_noise):
        parser.error(f"--reveal-noise {[p for p in args.reveal_noise if not 0 <= p <= 1][0]}: a probability, "
                     f"between 0 and 1")
    if args.worlds < 1:
        parser.error(f"--worlds {args.worlds}: a number of worlds, 1 or more")
    if args.worlds > 1 and not args.reveal_noise:
        parser.error("--worlds needs --reveal-noise P (the noisy worlds it averages over)")
    env_config = with_env_overrides(load_config(args.config).env, args.env)
    episodes = min(args.episodes, map_dir_size(env_config) or args.episodes)
    actors = {"nearest_frontier": nearest_frontier, "greedy": greedy, "oracle": greedy_lookahead_oracle,
              "belief_lookahead": belief_lookahead,
              **{f"revealed_{d}": guessed_lookahead(revealed_within(d)) for d in args.reveal},
              **{f"revealed_{d}_noise_{p:g}" + (f"_worlds_{args.worlds}" if args.worlds > 1 else ""):
                 guessed_lookahead(*(revealed_within(d, noise=p, seed=args.seed + k) for k in range(args.worlds)))
                 for d in args.reveal for p in args.reveal_noise}}
    with StopOnSignal(STOP_PLAN) as stop:
        results = evaluate_actors(actors, env_config, episodes, args.seed, stop=stop)
    pairs = [(ours, reference) for ours in list(actors)[1:] for reference in ("nearest_frontier", "greedy")
             if ours != reference]
    return report_travel(results, pairs, args.json, episodes, args.seed, env_config, stop)


if __name__ == "__main__":
    sys.exit(main())
