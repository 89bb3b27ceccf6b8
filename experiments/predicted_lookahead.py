"""Plan in the predicted map: greedy against the lookahead in a world the map predictor guesses.

    python -m experiments.predicted_lookahead [--predictor runs/map_predictor.pt] [--checkpoint WEIGHTS]
        [--prior-weight W ...] [--end-price LAM] [--candidates K] [--threshold 0.5] [--within H] [--opening W]
        [--told A-B [--doubted P]]
        [--episodes 100] [--first-episode 0] [--seed 0]
        [--config configs/dungeon.yaml] [--env KEY=VALUE ...] [--json predicted.json]

The predictor is ``--predictor``'s file, else the one ``--checkpoint`` carries
(``pretrained/dungeon.pt``). Plays, on the held-out maps of ``evaluate.py`` (with a ``map_dir``, episode i plays map i):

- ``greedy``;
- ``predicted_lookahead``: ``planner.lookahead.guessed_lookahead`` with ``planner.actor``'s
  guess (a cell is a wall where the predictor gives it more than ``--threshold``; opened by
  ``--opening`` W, by default as the checkpoint's planner opens it: ``predicted_guess``),
  taking greedy's move where it would go round, as the planners do (``env.baselines.greedy_on_return``);
- with ``--checkpoint``, ``agent`` (the policy's argmax) and, for each ``--prior-weight W``,
  ``planner_W``: ``planner.actor.planning_actor``, the lookahead's cost in node spacings less
  W times the policy's log-probability; with ``--end-price LAM``, each play-out's cost plus LAM
  per step from where it ends to the unknown the guess does not reach
  (``planner.lookahead.far_unknown_price``: docs/results.md section 6, v18 and v26); with
  ``--candidates K``, pricing only the policy's K likeliest valid moves (v28).

``--told A-B`` is a diagnostic: the guess takes the true map on the unknown cells A to B steps past
a known free cell (with ``--doubted P``, only those whose wall probability lies between P and
1 - P), so the lookahead and the planners show what a predictor right on those cells would gain
(docs/results.md section 5, "Which cells would pay?").

It prints each one's per-map travel against greedy's (and the planners' against the agent's);
``--json`` keeps every episode for ``compare.py``. A lookahead costs about 50 ms a floor-plan
state (the predictor, a lattice of the guessed world, greedy's play-outs there).
Ctrl-C or SIGTERM stops after the map in play and reports the maps every policy finished, as
``evaluate.py`` does.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config import load_config
from env.baselines import greedy, greedy_on_return
from evaluation.play import AGENT, STOP_PLAN, evaluate_actors, load_policy, map_dir_size
from experiments.travel_report import report_travel
from graph_batch import argmax_actor
from learning.envs import with_env_overrides
from planner.actor import Told, planning_actor, predicted_guess
from planner.files import planner_for
from planner.lookahead import far_unknown_price, guessed_lookahead, within_steps
from run.interrupt import StopOnSignal


def steps_band(text: str) -> tuple[int, int]:
    """``--told``'s "A-B": the steps A to B (inclusive, 0 <= A <= B) past a known free cell."""
    try:
        near, far = (int(part) for part in text.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: steps A-B, e.g. 0-5 or 6-10") from None
    if not 0 <= near <= far:
        raise argparse.ArgumentTypeError(f"{text!r}: A-B with 0 <= A <= B")
    return near, far


def told_cells(band: tuple[int, int], doubted: float | None) -> Told:
    """The cells ``band`` steps past a known free cell (``planner.lookahead.within_steps``), with
    ``doubted`` P only those whose wall probability lies strictly between P and 1 - P."""
    near, far = band

    def told(world, wall_probability):
        cells = within_steps(world, far)
        if near > 0:
            cells &= ~within_steps(world, near - 1)
        if doubted is not None:
            cells &= (wall_probability > doubted) & (wall_probability < 1 - doubted)
        return cells

    return told


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predictor", type=Path, help="a file of python -m planner.train_predictor (default: the one "
                                                       "--checkpoint carries)")
    parser.add_argument("--checkpoint", type=Path, help="a policy to plan with (run folder, checkpoint or pretrained file)")
    parser.add_argument("--prior-weight", type=float, action="append", default=[], metavar="W",
                        help="a planner weighing the policy's log-probability by W (repeatable; needs --checkpoint)")
    parser.add_argument("--end-price", type=float, metavar="LAM",
                        help="the planners add LAM cells a step from a play-out's end to the unknown cells more "
                             "than 12 steps past the known free cells (default: none)")
    parser.add_argument("--candidates", type=int, metavar="K",
                        help="the planners price only the policy's K likeliest valid moves (default: every move)")
    parser.add_argument("--threshold", type=float, default=0.5, help="a cell is a wall above this probability")
    parser.add_argument("--within", type=int, metavar="H",
                        help="guess walls beyond H steps of a known free cell (default: the predictor everywhere)")
    parser.add_argument("--opening", type=int, metavar="W",
                        help="open the guess by W x W squares of free cells, 0 not at all (default: as the "
                             "checkpoint's planner does)")
    parser.add_argument("--told", type=steps_band, metavar="A-B",
                        help="a diagnostic: the true map on the unknown cells A to B steps past a known free cell")
    parser.add_argument("--doubted", type=float, metavar="P",
                        help="with --told, only the cells whose wall probability lies between P and 1 - P")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--first-episode", type=int, default=0,
                        help="start at this held-out episode (with a map_dir: this map), to split a run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default="configs/dungeon.yaml", help="the env to play (default: %(default)s)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable)")
    parser.add_argument("--json", type=Path, help="write every episode's result here, as evaluate.py --json")
    args = parser.parse_args()
    if args.prior_weight and args.checkpoint is None:
        parser.error("--prior-weight needs --checkpoint (the policy whose preferences it weighs)")
    if args.first_episode < 0:
        parser.error(f"--first-episode {args.first_episode}: an episode index must be 0 or more")
    if any(w < 0 for w in args.prior_weight):
        parser.error(f"--prior-weight {min(args.prior_weight)}: a weight must be 0 or more")
    if args.end_price is not None and (args.checkpoint is None or not args.end_price >= 0):
        parser.error(f"--end-price {args.end_price}: cells a step, 0 or more, with --checkpoint (it prices the planners)")
    if args.candidates is not None and (args.checkpoint is None or args.candidates < 1):
        parser.error(f"--candidates {args.candidates}: 1 or more of the policy's moves, with --checkpoint")
    if args.opening is not None and args.opening < 0:
        parser.error(f"--opening {args.opening}: the side of a square of free cells, or 0 for none")
    if args.doubted is not None and (args.told is None or not 0 < args.doubted < 0.5):
        parser.error(f"--doubted {args.doubted}: a probability between 0 and 0.5, with --told")
    planner = None if args.checkpoint is None and args.predictor is None else planner_for(args.checkpoint,
                                                                                              args.predictor)
    if planner is None:
        parser.error("name a --predictor, or a --checkpoint that carries one (python -m planner.files --planner)")
    planner = planner.overridden(opening=args.opening)
    told = None if args.told is None else told_cells(args.told, args.doubted)
    guess = predicted_guess(planner.predictor, args.threshold, args.within, planner.opening, told)
    env_config = with_env_overrides(load_config(args.config).env, args.env)
    maps = map_dir_size(env_config)
    episodes = min(args.episodes, maps - args.first_episode) if maps else args.episodes
    actors = {"greedy": greedy, "predicted_lookahead": greedy_on_return(guessed_lookahead(guess))}
    if args.checkpoint is not None:
        policy, _ = load_policy(args.checkpoint)
        actors[AGENT] = argmax_actor(policy)
        end_price = far_unknown_price(args.end_price) if args.end_price else None  # 0: no price to compute
        actors.update({f"planner_{w:g}": planning_actor(policy, guess, w, end_price, args.candidates)
                       for w in args.prior_weight})
    with StopOnSignal(STOP_PLAN) as stop:
        results = evaluate_actors(actors, env_config, episodes, args.seed, first_episode=args.first_episode, stop=stop)
    pairs = [(ours, "greedy") for ours in list(actors)[1:]] + [(ours, AGENT) for ours in actors if ours.startswith("planner_")]
    return report_travel(results, pairs, args.json, episodes, args.seed, env_config, stop, args.first_episode)


if __name__ == "__main__":
    sys.exit(main())
