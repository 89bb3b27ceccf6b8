"""Benchmark: how often the agent's move and greedy's (and the planner's) are the best one, on the same states.

    python -m bench.best_move [--checkpoint pretrained/dungeon.pt] [--episodes 24] [--seed 10000]
        [--env KEY=VALUE ...]

The agent (its argmax) plays ``--episodes`` episodes of its own config's env (``--env`` changes it,
as in ``evaluate.py``; seeds ``--seed``, ``--seed + 1``, ...). At every state the lookahead prices
each valid move on the true map (``env.lookahead.lookahead_costs``: C(s, a), the travel when the
robot takes a and greedy finishes), and the agent's move and greedy's are scored against the
cheapest: how often each is a best move, their mean regret in node spacings (capped at
``rl.imitation.REGRET_CAP``), how often the two agree, and where they differ, which is cheaper.
It shows how far the agent's decisions are from greedy's, state by state, which the travel
ratios of whole episodes do not. When the checkpoint carries a map predictor
(``pretrained/dungeon.pt``), the planner's move on the same states is scored too.
"""
from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import torch

import env  # noqa: F401  (registers the envs)
from env.baselines import greedy
from env.lookahead import lookahead_costs
from env.observation import ACTION_MASK
from graph_batch import forward_each
from rl.envs import with_env_overrides
from rl.evaluation import load_policy
from rl.imitation import REGRET_CAP, node_spacing
from rl.map_prediction import PLANNER, planning_actor, predicted_guess
from rl.pretrained import read_planner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/dungeon.pt")
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--seed", type=int, default=10_000)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="as evaluate.py's --env")
    args = parser.parse_args()
    policy, config = load_policy(args.checkpoint)
    env_config = with_env_overrides(config.env, args.env)
    world = gym.make(env_config.id, **env_config.kwargs)
    spacing = node_spacing(env_config.kwargs)
    carried = read_planner(args.checkpoint)
    planner = None if carried is None else planning_actor(policy, predicted_guess(carried[0]), carried[1])
    regret: dict[str, list[float]] = {"agent": [], "greedy": [], **({PLANNER: []} if planner else {})}
    agree: list[bool] = []
    agent_gain: list[float] = []  # (C(greedy's move) - C(agent's move)) / spacing where they differ
    for episode in range(args.episodes):
        obs, _ = world.reset(seed=args.seed + episode)
        over = False
        while not over:
            costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK])  # [K], inf: masked, or greedy cannot finish
            with torch.no_grad():
                logits, _ = forward_each(policy, {key: value[None] for key, value in obs.items()})
            moves = {"agent": int(logits.argmax(-1)), "greedy": greedy(obs, world)}
            if planner is not None:
                moves[PLANNER] = planner(obs, world)
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


if __name__ == "__main__":
    main()
