"""Benchmark: how often the agent's move and greedy's (and the planner's) are the best one, on the same states.

    python -m experiments.best_move [--checkpoint pretrained/dungeon.pt] [--episodes 24] [--seed 10000]
        [--reveal D ...] [--picture PATH] [--env KEY=VALUE ...]

The agent (its argmax) plays ``--episodes`` episodes of its own config's env (``--env`` changes it,
as in ``evaluate.py``; seeds ``--seed``, ``--seed + 1``, ...; with a ``map_dir``, episode i plays map i
of the collection's order, each map once, as ``evaluate.py``'s do). At every state the lookahead prices
each valid move on the true map (``planner.lookahead.lookahead_costs``: C(s, a), the travel when the
robot takes a and greedy finishes), and the agent's move and greedy's are scored against the
cheapest: how often each is a best move, their mean regret in node spacings (capped at
``planner.imitation.REGRET_CAP``), how often the two agree, and where they differ, which is cheaper.
It shows how far the agent's decisions are from greedy's, state by state, which the travel
ratios of whole episodes do not. When the checkpoint carries a map predictor
(as both ``pretrained/`` files do), the planner's move on the same states is scored too; each
``--reveal D`` scores the lookahead in a world that knows the true map D steps past the known
cells (``planner.lookahead.revealed_within``, a diagnostic).

Then by what is at stake: on the states where the agent's two likeliest moves differ in C, binned
by that difference in cells (``STAKES``), how often each move is *right* (no dearer than the
cheaper of the two) and what share of the agent's regret over the cheaper of the two falls in the
bin. A policy could lose its travel in many small decisions or in a few costly ones; this says
which (docs/results.md, section 4, "Where the agent loses"). ``--picture PATH`` draws the costliest
of the agent's mistakes there (``planner.decision_picture``): the state where its first move is dearer than its
second by the most, with the route greedy travels after each on the true map.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import env  # noqa: F401  (registers the envs)
from env.baselines import greedy
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from evaluation.play import PLANNER, episode_options, load_policy, map_dir_size
from graph_batch import forward_each
from learning.envs import with_env_overrides
from planner.actor import planner_actor
from planner.files import read_planner
from planner.imitation import REGRET_CAP, node_spacing
from planner.lookahead import guessed_lookahead, lookahead_costs, played_after, revealed_within
from run.atomic import check_writable

STAKES = (0.0, 2.0, 4.0, 8.0, 16.0, 32.0, np.inf)
"""Bin edges, in cells, of the difference in C between the agent's two likeliest moves."""


def stakes_table(first: np.ndarray, second: np.ndarray, chosen: dict[str, np.ndarray]) -> list[str]:
    """Markdown rows, one per ``STAKES`` bin, over the states where the agent's two likeliest moves
    differ in cost: [S] C of its ``first`` and ``second`` move, and ``chosen[name]`` [S] the C of each
    scored move. A move is right when no dearer than the cheaper of the two; the agent's regret is
    C(first) less that."""
    gap, cheaper = np.abs(first - second), np.minimum(first, second)
    regret = first - cheaper
    names = list(chosen)
    lines = [f"| at stake (cells) | states | {' | '.join(f'{n} right' for n in names)} | "
             "share of the agent's regret |", "| --- " * (len(names) + 3) + "|"]
    for low, high in zip(STAKES[:-1], STAKES[1:]):
        rows = (gap > low) & (gap <= high)
        if not rows.any():
            continue
        right = " | ".join(f"{np.mean(chosen[n][rows] <= cheaper[rows]):.3f}" for n in names)
        bin_name = f"({low:g}, {high:g}]" if np.isfinite(high) else f"more than {low:g}"
        lines.append(f"| {bin_name} | {rows.sum()} | {right} | {regret[rows].sum() / max(regret.sum(), 1e-9):.2f} |")
    return lines


class CostliestMistake:
    """The state, among those offered, where the agent's likeliest move is dearer than its second by
    the most: a copy of the world there, its two slots and the agent's probabilities of them."""

    def __init__(self):
        self.gap, self.world, self.slots, self.probs = 0.0, None, (0, 0), (0.0, 0.0)

    def offer(self, world: GridExploreEnv, costs: np.ndarray, logits: torch.Tensor, slots: tuple[int, int]):
        """A state: ``costs`` [K] C of each slot, ``logits`` [K] the agent's, ``slots`` its first and
        second move. Kept (copied) only when its first move is dearer by more than any before."""
        gap = costs[slots[0]] - costs[slots[1]]
        if gap > self.gap:
            probs = torch.softmax(logits, -1)
            self.gap, self.world, self.slots = gap, world.lookahead_copy(), slots
            self.probs = (float(probs[slots[0]]), float(probs[slots[1]]))

    def draw(self, path: Path) -> str:
        """The picture at ``path`` (``planner.decision_picture``), or why there is none; a line to print."""
        if self.world is None:
            return "no picture: the agent never took the dearer of its two likeliest moves"
        from planner.decision_picture import Candidate, decision_figure  # matplotlib only when asked for
        path.parent.mkdir(parents=True, exist_ok=True)
        world, p = self.world, self.world.pad
        start, targets = len(world.path) - 1, world.robot_neighbors()
        candidates = []
        for name, slot, prob in zip(("the agent's move", "its second"), self.slots, self.probs):
            played, _ = played_after(world, slot)
            to_end = played.travel_distance - world.travel_distance
            candidates.append(Candidate(f"{name} (p = {prob:.2f}): {to_end:.1f} cells to the end",
                                        tuple(world.graph.node_rc[targets[slot]]), np.array(played.path[start:])))
        where = f"{world.map_file or 'a procedural map'}, step {world.steps}"
        decision_figure(world.belief[p:-p, p:-p], world.grid_map.occupied, candidates, path,
                        f"{where}: the agent's move {self.gap:.1f} cells dearer than its second")
        return f"the costliest mistake ({where}, {self.gap:.1f} cells): {path}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/dungeon.pt")
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--seed", type=int, default=10_000)
    parser.add_argument("--reveal", type=int, action="append", default=[], metavar="D",
                        help="also score the lookahead that knows the true map D steps out (repeatable)")
    parser.add_argument("--picture", type=Path, help="draw the agent's costliest mistake here (a PNG)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="as evaluate.py's --env")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    if any(d < 0 for d in args.reveal):
        parser.error(f"--reveal: a number of steps, 0 or more; got {args.reveal}")
    if args.picture is not None:
        try:
            check_writable(args.picture)
        except ValueError as error:  # now, not after the episodes
            parser.error(f"--picture: {error}")
    policy, config = load_policy(args.checkpoint)
    env_config = with_env_overrides(config.env, args.env)
    maps = map_dir_size(env_config)
    if maps is not None and args.episodes > maps:
        parser.error(f"--episodes {args.episodes}: map_dir={env_config.kwargs['map_dir']!r} holds {maps} maps")
    world = gym.make(env_config.id, **env_config.kwargs)
    spacing = node_spacing(env_config.kwargs)
    carried = read_planner(args.checkpoint)
    planner = None if carried is None else planner_actor(policy, carried)
    revealed = {f"revealed_{d}": guessed_lookahead(revealed_within(d)) for d in args.reveal}
    regret: dict[str, list[float]] = {"agent": [], "greedy": [], **({PLANNER: []} if planner else {}),
                                      **{name: [] for name in revealed}}
    two_moves: list[tuple[float, float]] = []  # C of the agent's two likeliest moves, where finite
    chosen: dict[str, list[float]] = {name: [] for name in regret}  # C of each move on those states
    agree: list[bool] = []
    agent_gain: list[float] = []  # (C(greedy's move) - C(agent's move)) / spacing where they differ
    mistake = CostliestMistake()
    for episode in range(args.episodes):
        obs, _ = world.reset(seed=args.seed + episode, options=episode_options(env_config, episode))
        over = False
        while not over:
            costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK])  # [K], inf: masked, or greedy cannot finish
            with torch.no_grad():
                logits, _ = forward_each(policy, {key: value[None] for key, value in obs.items()})
            moves = {"agent": int(logits.argmax(-1)), "greedy": greedy(obs, world)}
            if planner is not None:
                moves[PLANNER] = planner(obs, world)
            moves.update({name: act(obs, world) for name, act in revealed.items()})
            first = moves["agent"]
            second = next(slot for slot in torch.topk(logits[0], 2).indices.tolist() if slot != first)
            if obs[ACTION_MASK][second] and np.isfinite(costs[[first, second]]).all():
                two_moves.append((costs[first], costs[second]))
                if args.picture is not None:
                    mistake.offer(world.unwrapped, costs, logits[0], (first, second))
                for name, move in moves.items():
                    chosen[name].append(costs[move])
            if np.isfinite(costs).any():  # a state where no move lets greedy finish says nothing
                best = costs.min()
                for name, move in moves.items():
                    regret[name].append(min((costs[move] - best) / spacing, REGRET_CAP))
                agree.append(moves["agent"] == moves["greedy"])
                if not agree[-1]:
                    gain = (min(costs[moves["greedy"]], best + REGRET_CAP * spacing)
                            - min(costs[moves["agent"]], best + REGRET_CAP * spacing)) / spacing
                    agent_gain.append(gain)
            obs, _, terminated, truncated, _ = world.step(moves["agent"])
            over = terminated or truncated
    print(f"{len(agree)} states of {args.episodes} episodes played by {args.checkpoint}'s argmax")
    for name, values in regret.items():
        print(f"{name}: best move on {np.mean(np.array(values) == 0):.3f} of states, mean regret "
              f"{np.mean(values):.3f} spacings")
    gain = np.array(agent_gain)
    differ = (f"the agent's move is cheaper on {np.mean(gain > 0):.3f}, greedy's on {np.mean(gain < 0):.3f}, the "
              f"agent's gain {np.mean(gain):.3f} spacings on average" if len(gain) else "nothing to compare")
    print(f"agent and greedy agree on {np.mean(agree):.3f}; where they differ ({len(gain)} states) {differ}")
    first, second = np.array(two_moves).reshape(-1, 2).T
    contested = first != second
    print(f"by what is at stake: the {contested.sum()} states (of {len(first)} with two valid moves, both priced) "
          f"where the agent's two likeliest moves differ in C")
    print("\n".join(stakes_table(first[contested], second[contested],
                                 {name: np.array(c)[contested] for name, c in chosen.items()})))
    if args.picture is not None:
        print(mistake.draw(args.picture))


if __name__ == "__main__":
    main()
