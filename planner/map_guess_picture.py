"""What the map predictor guesses: the robot's belief, the guess, and the truth, side by side.

    python -m planner.map_guess_picture --checkpoint pretrained/dungeon.pt --env map_dir=DUNGEON \
        --env map_split=validation --episode 12 --moves 10 --out map_guess.png

draws the guess of the predictor ``--checkpoint`` carries after ``--moves`` of greedy's moves in
``evaluate.py``'s held-out episode ``--episode`` (with a ``map_dir``: map ``--episode`` of the
folder). ``visualize.py`` draws the same picture at a step of the agent's own episode.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from config import ConfigError
from env.baselines import greedy
from env.sensing import FREE, OCCUPIED, UNKNOWN
from evaluation.play import episode_options
from learning.envs import make_env, with_env_overrides
from planner.files import read_planner
from run.pretrained import read_weights
from run.seeding import eval_episode_seed
from viz.heatmaps import plt, save_figure, titled_picture_panel


def belief_shade(belief: np.ndarray) -> np.ndarray:
    """[H, W] grey levels of a belief: free white (1), walls black (0), unknown grey (0.6)."""
    return np.select([belief == FREE, belief == OCCUPIED], [1.0, 0.0], 0.6)


TAN = (0.76, 0.70, 0.60)
"""An unknown free cell in ``unknown_tinted``: tan, between white (free) and the walls' browns."""
DARK_BROWN = (0.36, 0.30, 0.20)
"""An unknown wall in ``unknown_tinted``."""


def unknown_tinted(truth: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """[H, W, 3] RGB in [0, 1] of the true map (``truth``: True = a wall; walls black, free white)
    with the cells ``unknown`` to the robot tinted brown: free ones tan (``TAN``), walls dark brown.
    A muted tint, so that routes drawn on it in red and green (``planner.decision_picture``) stand out."""
    tinted = np.stack([np.where(truth, 0.0, 1.0)] * 3, axis=-1)
    tinted[unknown] = np.where(truth[unknown, None], DARK_BROWN, TAN)
    return tinted


def map_guess_figure(belief: np.ndarray, wall_probability: np.ndarray, truth: np.ndarray, path: Path,
                     robot: tuple[int, int] | None = None) -> None:
    """Three panels of one state of a map ([H, W] each): the belief (unknown grey, free white,
    walls black), the predictor's probability that each unknown cell is a wall (known cells as in
    the belief), and the true map with the cells still unknown tinted; ``robot`` (row, col) marked
    on each. Written to ``path``."""
    if not belief.shape == wall_probability.shape == truth.shape:
        raise ValueError(f"belief {belief.shape}, wall_probability {wall_probability.shape} and truth "
                         f"{truth.shape} must have one shape")
    shade, unknown = belief_shade(belief), belief == UNKNOWN
    guess = np.where(unknown, 1.0 - wall_probability, shade)
    tinted = unknown_tinted(truth, unknown)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    panels = [(shade, "what the robot knows"), (guess, "the predictor's guess (darker: a wall)"),
              (tinted, "the true map (tan and brown: not yet seen)")]
    for ax, (image, title) in zip(axes, panels):
        ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        if robot is not None:
            ax.plot(robot[1], robot[0], "o", color="tab:red", markersize=6)
        titled_picture_panel(ax, title, fontsize=12)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw a map predictor's guess after greedy's first moves on a "
                                                 "held-out map.")
    parser.add_argument("--checkpoint", type=Path, required=True, help="weights that carry a map predictor")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="evaluate.py's --seed")
    parser.add_argument("--episode", type=int, default=0, help="the held-out episode (with a map_dir: its map)")
    parser.add_argument("--moves", type=int, default=10, help="greedy's moves before the picture")
    parser.add_argument("--out", type=Path, default=Path("map_guess.png"))
    args = parser.parse_args(argv)
    try:
        planner, (_, _, config) = read_planner(args.checkpoint), read_weights(args.checkpoint)
        env_config = with_env_overrides(config.env, args.env)
    except (FileNotFoundError, ValueError, ConfigError) as error:
        parser.error(str(error))
    if planner is None:
        parser.error(f"--checkpoint {args.checkpoint} carries no map predictor")
    env = make_env(env_config)
    obs, _ = env.reset(seed=eval_episode_seed(args.seed, args.episode), options=episode_options(env_config, args.episode))
    world = env.unwrapped
    for _ in range(args.moves):
        obs, _, terminated, truncated, _ = env.step(greedy(obs, world))
        if terminated or truncated:
            break
    belief = world.belief[world.pad:-world.pad, world.pad:-world.pad]
    map_guess_figure(belief, planner.predictor.wall_probability(belief), world.grid_map.occupied, args.out,
                     robot=world.path[-1])
    print(f"wrote {args.out}: {world.map_file or 'the map'} after {world.steps} of greedy's moves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
