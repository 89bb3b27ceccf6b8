"""Watch what the trained policy looks at, for one held-out episode.

    python visualize.py --checkpoint runs/default [--seed 0] [--at 10] [--query NODE] [--out viz_out]

Writes into ``--out``:
  pointer.gif                  every step of the episode, with the pointer's probability for each
                               candidate neighbour drawn on the map (the chosen move outlined)
  attention_matrix_layerL.png  per encoder layer L, one heat map per head (query rows, key columns)
  attention_map_layerL.png     per encoder layer L, the query node's attention drawn on the map
                               as lines whose width is the weight, one panel per head
The attention pictures are of the state at step ``--at`` (default: a third into the episode), for
the robot's node unless ``--query`` names another.
"""
from __future__ import annotations

import openmp_wait  # noqa: F401  (first: how torch's threads wait; see the module)

import argparse
import math
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from PIL import Image

from env.observation import CURRENT_INDEX, NEIGHBORS
from env.rendering import save_gif
from graph_batch import collate
from rl.atomic import check_writable
from rl.envs import make_env
from rl.evaluation import load_policy
from rl.seeding import eval_episode_seed
from viz.heatmaps import attention_heatmaps
from viz.overlays import attention_on_map, pointer_overlay


def record_episode(policy, env: gym.Env, seed: int) -> list[dict]:
    """Step the policy's argmax moves through one episode; per step the frame, observation and attention."""
    obs, _ = env.reset(seed=seed)
    steps = []
    while True:
        with torch.no_grad():
            logits, _, attention = policy(collate(obs), need_weights=True)
        action = int(logits.argmax(-1))
        graph = env.unwrapped.graph
        steps.append({"frame": env.render(), "obs": obs, "action": action, "positions": graph.positions().copy(),
                      "probs": attention.pointer[0].numpy(),
                      "encoder": [w[0].numpy() for w in attention.encoder]})
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="run folder or checkpoint file")
    parser.add_argument("--seed", type=int, default=0, help="selects the held-out map")
    parser.add_argument("--at", type=int, help="step whose attention is drawn (default: a third in)")
    parser.add_argument("--query", type=int, help="query node for the map picture (default: the robot's)")
    parser.add_argument("--out", type=Path, default=Path("viz_out"))
    parser.add_argument("--fps", type=float, default=3.0)
    args = parser.parse_args(argv)
    for option, value, low in (("--seed", args.seed, 0), ("--at", args.at, 0), ("--query", args.query, 0)):
        if value is not None and value < low:
            parser.error(f"{option} must be >= {low}, got {value}")
    if not (math.isfinite(args.fps) and args.fps > 0):
        parser.error(f"--fps must be a finite number > 0, got {args.fps}")
    try:
        check_writable(args.out, folder=True)
    except ValueError as error:
        parser.error(f"--out: {error}")
    try:
        policy, config = load_policy(args.checkpoint)
    except (FileNotFoundError, ValueError) as error:  # no checkpoint, or one from another layout
        parser.error(str(error))
    env = make_env(config.env, render_mode="rgb_array")
    steps = record_episode(policy, env, eval_episode_seed(args.seed, 0))
    env.close()
    at = len(steps) // 3 if args.at is None else args.at
    if not 0 <= at < len(steps):
        parser.error(f"--at {at} is outside the episode's steps 0..{len(steps) - 1}")
    args.out.mkdir(parents=True, exist_ok=True)

    frames = []
    for step in steps:
        obs = step["obs"]
        candidates = obs[NEIGHBORS][int(obs[CURRENT_INDEX])]
        frames.append(pointer_overlay(step["frame"], step["positions"], candidates, step["probs"], step["action"]))
    save_gif(frames, args.out / "pointer.gif", fps=args.fps)

    chosen = steps[at]
    n_real = int(np.asarray(chosen["obs"]["node_mask"]).sum())
    query = int(chosen["obs"][CURRENT_INDEX]) if args.query is None else args.query
    if not 0 <= query < n_real:
        parser.error(f"--query {query} is not a node at step {at}; nodes are 0..{n_real - 1}")
    for layer, weights in enumerate(chosen["encoder"]):
        title = f"encoder layer {layer}, step {at}"
        matrix = attention_heatmaps(weights, chosen["obs"]["node_mask"], title)
        Image.fromarray(matrix).save(args.out / f"attention_matrix_layer{layer}.png")
        on_map = attention_on_map(chosen["frame"], chosen["positions"], weights, query, f"{title}: node {query} attends to")
        Image.fromarray(on_map).save(args.out / f"attention_map_layer{layer}.png")
    print(f"{len(steps)} steps; wrote {args.out}/pointer.gif and {2 * len(chosen['encoder'])} attention pictures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
