"""How much better than greedy's could one move be, and how much of that can a network learn?

    python -m experiments.one_step_gain --checkpoint runs/default [--episodes 400] [--epochs 12] [--workers 2]

Along the checkpoint's sampled trajectories on training-kind maps (even seeds, run seed 1000), every
valid move a of every state s is scored by its one-step gain over greedy on the true map,

    gain(a) = r(a) + W(s'_a) - W(s)        (``env/greedy_value.py``; 0 for greedy's own move)

in return units, where 0.1 is one node spacing of travel. A copy of the policy is then fitted by
regression of its pointer logits onto the gains (divided by their standard deviation) on the
states of the first 85% of the episodes, and judged on the rest (other maps). Printed, as the mean
gain per held-out state of the move each chooser takes:

- ``best move (knows the map)``: max_a gain(a), the one-step oracle;
- ``policy's argmax``: the checkpoint as trained;
- ``fitted network's argmax``, with the centred R^2 of its predictions (the share of the
  within-state variance of the gains it predicts; 1 would rank every move correctly).

A fitted network whose argmax gains about 0 while the oracle gains much more says that which move
beats greedy is not predictable from the observation, even where which moves are bad is.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from env.greedy_value import GREEDY_VALUE, GreedyValue, play_greedy
from env.observation import ACTION_MASK
from evaluation.play import load_policy
from graph_batch import collate, forward_observations
from learning.envs import make_env
from learning.ppo import adam
from run.seeding import train_episode_seed

GAINS = "gains"
RUN_SEED = 1000  # not a training run's seed: other maps than the checkpoint's training episodes


def move_gains(env: GreedyValue, obs: dict, value: float) -> np.ndarray:
    """gain(a) of every slot [K], NaN where masked, for the env's current state of value W(s)."""
    world = env.unwrapped
    gains = np.full(len(obs[ACTION_MASK]), np.nan, dtype=np.float32)
    for slot in np.flatnonzero(obs[ACTION_MASK]):
        twin = world.lookahead_copy()
        reward, terminated = twin.play(int(slot))
        rest = 0.0 if terminated else math.fsum(play_greedy(twin, world.config.max_steps)[1])
        gains[slot] = reward + rest - value
    return gains


def collect(checkpoint: Path, episodes: range) -> dict[str, np.ndarray]:
    """Observations and move gains [S,K] of the states of ``episodes``, moving by sampling the policy."""
    torch.set_num_threads(1)
    policy, config = load_policy(checkpoint)
    env = GreedyValue(make_env(config.env))
    generator = torch.Generator().manual_seed(episodes.start)
    states: list[dict[str, np.ndarray]] = []
    for episode in episodes:
        obs, info = env.reset(seed=train_episode_seed(RUN_SEED, 0, episode))
        done = False
        while not done:
            states.append({**obs, GAINS: move_gains(env, obs, info[GREEDY_VALUE])})
            with torch.no_grad():
                probs = torch.softmax(policy(collate(obs))[0][0], dim=-1)
            action = int(torch.multinomial(probs, 1, generator=generator))
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    return {key: np.stack([state[key] for state in states]) for key in states[0]}


def collect_in_parallel(checkpoint: Path, episodes: int, workers: int) -> tuple[dict[str, np.ndarray], int]:
    """All states of ``episodes`` episodes, and how many come from the first 85% of the episodes."""
    split = min(max(1, round(0.85 * episodes)), episodes - 1)
    cuts = sorted({*np.linspace(0, episodes, workers + 1).astype(int).tolist(), split})
    ranges = [range(a, b) for a, b in zip(cuts, cuts[1:])]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(collect, [checkpoint] * len(ranges), ranges))
    n_fit = sum(len(part[GAINS]) for part, r in zip(parts, ranges) if r.stop <= split)
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}, n_fit


def argmax_gain(scores: torch.Tensor, gains: torch.Tensor, valid: torch.Tensor) -> float:
    """Mean gain of the valid move each state's highest score picks."""
    choice = scores.masked_fill(~valid, -torch.inf).argmax(-1, keepdim=True)
    return gains.gather(1, choice).mean().item()


def centred_r2(predicted: torch.Tensor, target: torch.Tensor, valid: torch.Tensor) -> float:
    """1 - SSE / SS of the within-state deviations of the valid moves from their state's mean."""
    count = valid.sum(-1, keepdim=True).clamp(min=1)
    def centre(x):
        return (x - (x * valid).sum(-1, keepdim=True) / count) * valid
    p, t = centre(predicted), centre(target)
    return (1 - (p - t).square().sum() / t.square().sum()).item()


def fit_and_report(checkpoint: Path, data: dict[str, np.ndarray], n_fit: int, epochs: int, lr: float) -> None:
    torch.manual_seed(0)
    policy, _ = load_policy(checkpoint)
    gains = torch.from_numpy(np.nan_to_num(data[GAINS], nan=0.0))
    obs = {key: torch.from_numpy(value) for key, value in data.items() if key != GAINS}
    valid = obs[ACTION_MASK].bool()
    scale = gains[valid].std().item() or 1.0
    target = gains / scale
    fit, held_out = torch.arange(n_fit), torch.arange(n_fit, len(gains))

    def logits(index: torch.Tensor) -> torch.Tensor:  # in 4 slices of similar graph size, as PPO does
        return forward_observations(policy, {k: v[index] for k, v in obs.items()}, size_buckets=4)[0]

    def predict(index: torch.Tensor) -> torch.Tensor:
        policy.eval()
        with torch.no_grad():
            out = torch.cat([logits(part) for part in index.split(512)])
        policy.train()
        return out

    g, v = gains[held_out], valid[held_out]
    print(f"states: {n_fit} to fit, {len(held_out)} held out; gain standard deviation {scale:.3f}")
    print("held-out mean gain of the move taken (greedy's own move: 0)")
    print(f"  best move (knows the map)  {argmax_gain(g, g, v):8.4f}")
    print(f"  policy's argmax            {argmax_gain(predict(held_out), g, v):8.4f}")
    optimizer = adam(policy.parameters(), lr)
    for epoch in range(epochs):
        for index in fit[torch.randperm(len(fit))].split(256):
            error = (logits(index) - target[index]).square() * valid[index]
            loss = error.sum() / valid[index].sum()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
        predicted = predict(held_out)
        print(f"  fitted network's argmax    {argmax_gain(predicted, g, v):8.4f}   "
              f"(epoch {epoch + 1}, centred R^2 {centred_r2(predicted, target[held_out], v):.3f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="a run folder or checkpoint_*.pt")
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.episodes < 2:
        parser.error(f"--episodes must be >= 2 (some to fit, some held out), got {args.episodes}")
    data, n_fit = collect_in_parallel(args.checkpoint, args.episodes, args.workers)
    fit_and_report(args.checkpoint, data, n_fit, args.epochs, args.lr)


if __name__ == "__main__":
    main()
