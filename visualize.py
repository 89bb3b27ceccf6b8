"""Watch what the trained policy looks at, for one held-out episode.

    python visualize.py --checkpoint runs/default [--seed 0] [--at 10] [--query NODE] [--out viz_out]
    python visualize.py --checkpoint pretrained/dungeon.pt --env map_dir=DungeonMaps/train --env map_split=validation
    python visualize.py ... [--planner PREDICTOR]
    python visualize.py --checkpoint runs/heads/model.n_heads=8_seed1 --compare runs/heads/model.n_heads=1_seed1 [--maps 10]

Writes into ``--out``:
  pointer.gif                  every step of the episode, with the pointer's probability for each
                               candidate neighbour drawn on the map (the chosen move outlined),
                               at least 512 px a side, under a band of the step, coverage and travel
  attention_matrix_layerL.png  per encoder layer L, one heat map per head (query rows, key columns)
  attention_map_layerL.png     per encoder layer L, the query node's attention drawn on the map
                               as lines whose width is the weight, one panel per head
  routes.png                   greedy's, the agent's (and the planner's) routes on that map, each
                               at its episode's end, with its steps and travel
  map_guess.png                when the checkpoint carries a map predictor (as both ``pretrained/`` files do)
                               or ``--planner`` names one: at step ``--at``, what the robot knows,
                               the predictor's guess of the rest, and the true map
``--checkpoint`` takes what ``evaluate.py`` takes (a run folder, a checkpoint, a pretrained file)
and ``--env`` changes its env as there; with a ``map_dir``, ``--seed``'s episode i plays map i.
The moves are ``evaluate.py``'s: the same runner and argmax on the same map.
The attention pictures are of the state at step ``--at`` (default: a third into the episode), for
the robot's node unless ``--query`` names another.

With ``--compare``, the other checkpoints (trained on the same env settings, any head count) look
at the same states, those of ``--checkpoint``'s episode, and it also writes
  heads_compared_layerL.png    per encoder layer L, one row of head panels per checkpoint
and prints, per checkpoint and layer, how differently its heads attend (``head_disagreement``:
the total-variation distance between two heads' attention rows, averaged over head pairs, real
query nodes and every state; 0 means the heads attend alike). The states are those of
``--checkpoint``'s episodes on ``--maps`` held-out maps (default 1: the drawn episode alone), the
first ``--maps`` maps ``evaluate.py --seed SEED`` plays.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from PIL import Image

from config import ConfigError
from env.baselines import greedy
from env.episode import Actor, run_episode
from env.map_io import MapError
from env.observation import CURRENT_INDEX, NEIGHBORS
from env.rendering import captioned, gif_scale, save_gif, status_caption
from evaluation.play import AGENT, PLANNER, absent_map_dir_note, episode_options, load_policy, train_part_note
from graph_batch import argmax_actor, collate
from learning.envs import make_env, with_env_overrides
from run.atomic import check_writable
from run.seeding import eval_episode_seed
from viz.heatmaps import attention_heatmaps
from viz.overlays import attention_on_map, attention_rows_on_map, head_disagreement, pointer_overlay
from viz.routes import routes_figure

try:  # the planner layer is optional: without planner/, the agent's pictures are drawn as ever
    from planner.actor import planner_actor
    from planner.files import planner_for
    from planner.map_guess_picture import map_guess_figure
except ModuleNotFoundError as missing:
    if missing.name != "planner":
        raise
    planner_for = None


def record_episode(policy, env: gym.Env, seed: int, options: dict | None = None) -> list[dict]:
    """One episode of the policy's argmax moves, played by ``env.episode.run_episode`` with
    ``argmax_actor`` (so the moves are ``evaluate.py``'s on the same map); per step the frame (None
    unless ``env`` renders), observation, move, attention (the readable path's weights), the
    belief ([H, W], inside the padding), the robot's cell and the GIF's caption (step, coverage, travel)."""
    steps, choose = [], argmax_actor(policy)

    def act(obs: dict, world: gym.Env) -> int:
        action = choose(obs, world)
        with torch.no_grad():
            _, _, attention = policy(collate(obs), need_weights=True)
        inner = world.unwrapped
        p = inner.pad
        steps.append({"frame": world.render() if world.render_mode else None, "obs": obs, "action": action,
                      "positions": world.graph.positions().copy(), "probs": attention.pointer[0].numpy(),
                      "encoder": [w[0].numpy() for w in attention.encoder],
                      "belief": inner.belief[p:-p, p:-p].copy(), "cell": inner.path[-1],
                      "caption": status_caption(inner)})
        return action

    run_episode(env, act, seed, options=options)
    return steps


def route_finals(players: dict[str, Actor], env: gym.Env, seed: int, options: dict | None) -> dict[str, np.ndarray]:
    """Each player's episode on the map of ``seed`` and ``options``: its last frame, titled with
    its steps and travel (``viz.routes.routes_figure``'s panels)."""
    finals = {}
    for name, act in players.items():
        result, frames = run_episode(env, act, seed, record=True, options=options)
        finals[f"{name}: {result.steps} steps, {result.travel_distance:.1f} cells"] = frames[-1]
    return finals


def encoder_attention(policy, steps: list[dict]) -> list[list[np.ndarray]]:
    """``policy``'s encoder weights on each recorded step's observation: per step, per layer [H,N,N]."""
    with torch.no_grad():
        return [[w[0].numpy() for w in policy(collate(step["obs"]), need_weights=True)[2].encoder] for step in steps]


def label_of(checkpoint: Path) -> str:
    """A short name for a checkpoint in titles: its run folder's name (the latest checkpoint), or
    ``folder/file`` for one checkpoint file (a run compared with itself earlier in its training)."""
    return f"{checkpoint.parent.name}/{checkpoint.stem}" if checkpoint.is_file() else checkpoint.name


def draw_heads_compared(policies: dict[str, torch.nn.Module], step: dict, at: int, query: int, out: Path) -> None:
    """Write heads_compared_layerL.png: every policy's heads, one row each, looking at ``step``, step ``at``."""
    weights = {label: encoder_attention(policy, [step])[0] for label, policy in policies.items()}
    for layer in range(min(len(per_layer) for per_layer in weights.values())):
        rows = {label: per_layer[layer] for label, per_layer in weights.items()}
        title = f"encoder layer {layer}, step {at}: node {query} (star) attends to the red nodes, line width = weight"
        picture = attention_rows_on_map(step["frame"], step["positions"], rows, query, title)
        Image.fromarray(picture).save(out / f"heads_compared_layer{layer}.png")


def disagreement_table(policies: dict[str, torch.nn.Module], episodes: list[list[dict]]) -> str:
    """Per policy and encoder layer, ``head_disagreement`` averaged over every state of ``episodes``.

    Each state's disagreement is computed as its weights come, so memory holds one episode's
    attention at a time, whatever the number of maps.
    """
    table = {}
    for label, policy in policies.items():
        per_state = []  # [states][layers]; NaN with one head
        for steps in episodes:
            for step, weights in zip(steps, encoder_attention(policy, steps)):
                n_real = int(np.asarray(step["obs"]["node_mask"]).sum())
                per_state.append([head_disagreement(layer, n_real) for layer in weights])
        table[label] = (policy.config.n_heads, np.mean(per_state, axis=0))
    layers = min(len(means) for _, means in table.values())
    states = sum(len(steps) for steps in episodes)
    lines = [f"head disagreement over {states} states of {len(episodes)} held-out map(s):",
             "| checkpoint | heads | " + " | ".join(f"layer {L}" for L in range(layers)) + " |",
             "|---|---|" + "---|" * layers]
    for label, (heads, means) in table.items():
        cells = [f"{m:.3f}" if m == m else "n/a" for m in means[:layers]]
        lines.append(f"| {label} | {heads} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        return draw(argv)
    except MapError as error:  # a map of the folder that no check before play could tell (no free cell)
        print(f"error: {error}", file=sys.stderr)
        return 2


def draw(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="run folder or checkpoint file")
    parser.add_argument("--seed", type=int, default=0, help="selects the held-out map")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env, e.g. map_dir=FOLDER (repeatable)")
    parser.add_argument("--at", type=int, help="step whose attention is drawn (default: a third in)")
    parser.add_argument("--query", type=int, help="query node for the map picture (default: the robot's)")
    parser.add_argument("--out", type=Path, default=Path("viz_out"))
    parser.add_argument("--fps", type=float, default=3.0)
    parser.add_argument("--compare", type=Path, nargs="+", default=[], metavar="CHECKPOINT",
                        help="other runs whose heads look at the same states (same env settings)")
    parser.add_argument("--planner", type=Path, metavar="PREDICTOR",
                        help="draw this map predictor's guess and plan with it (default: the one --checkpoint "
                             "carries, if any)")
    parser.add_argument("--maps", type=int, default=1,
                        help="held-out maps whose states the --compare table averages over (the first is drawn)")
    args = parser.parse_args(argv)
    for option, value, low in (("--seed", args.seed, 0), ("--at", args.at, 0), ("--query", args.query, 0),
                               ("--maps", args.maps, 1)):
        if value is not None and value < low:
            parser.error(f"{option} must be >= {low}, got {value}")
    if args.maps > 1 and not args.compare:
        parser.error(f"--maps {args.maps} averages the --compare table: name the checkpoints to --compare")
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
    if planner_for is None and args.planner is not None:
        parser.error("--planner: this checkout has no planner layer (planner/)")
    try:
        planner = None if planner_for is None else planner_for(args.checkpoint, args.planner)
    except (FileNotFoundError, ValueError) as error:
        parser.error(f"--planner: {error}")
    others = {}
    for path in args.compare:
        try:
            other, other_config = load_policy(path)
        except (FileNotFoundError, ValueError) as error:
            parser.error(f"--compare: {error}")
        if (other_config.env.id, other_config.env.kwargs) != (config.env.id, config.env.kwargs):
            parser.error(f"--compare {path}: trained on {other_config.env.id} {other_config.env.kwargs}, not on "
                         f"{config.env.id} {config.env.kwargs} as --checkpoint: the states would not be its own")
        if label_of(path) in (label_of(args.checkpoint), *others):
            parser.error(f"--compare {path}: another checkpoint is already named {label_of(path)!r}")
        others[label_of(path)] = other
    try:
        env_config = with_env_overrides(config.env, args.env)
    except ConfigError as error:
        parser.error(absent_map_dir_note(config.env, args.env, args.checkpoint) or f"--env: {error}")
    if note := train_part_note(env_config):
        print(note, file=sys.stderr)
    env = make_env(env_config, render_mode="rgb_array")
    seed, options = eval_episode_seed(args.seed, 0), episode_options(env_config, 0)
    steps = record_episode(policy, env, seed, options)
    truth = env.unwrapped.grid_map.occupied.copy()
    at = len(steps) // 3 if args.at is None else args.at
    if not 0 <= at < len(steps):
        parser.error(f"--at {at} is outside the episode's steps 0..{len(steps) - 1}")
    chosen = steps[at]
    n_real = int(np.asarray(chosen["obs"]["node_mask"]).sum())
    query = int(chosen["obs"][CURRENT_INDEX]) if args.query is None else args.query
    if not 0 <= query < n_real:
        parser.error(f"--query {query} is not a node at step {at}; nodes are 0..{n_real - 1}")
    args.out.mkdir(parents=True, exist_ok=True)

    players = {"greedy": greedy, AGENT: argmax_actor(policy)}
    if planner is not None:
        players[PLANNER] = planner_actor(policy, planner)
    routes_figure(route_finals(players, env, seed, options), args.out / "routes.png")
    env.close()
    frames = []
    for step in steps:
        obs = step["obs"]
        candidates = obs[NEIGHBORS][int(obs[CURRENT_INDEX])]
        picture = pointer_overlay(step["frame"], step["positions"], candidates, step["probs"], step["action"],
                                  scale=gif_scale(step["frame"].shape))
        frames.append(captioned(picture, step["caption"]))
    save_gif(frames, args.out / "pointer.gif", fps=args.fps)
    for layer, weights in enumerate(chosen["encoder"]):
        title = f"encoder layer {layer}, step {at}"
        matrix = attention_heatmaps(weights, chosen["obs"]["node_mask"], f"{title}: each query node's attention")
        Image.fromarray(matrix).save(args.out / f"attention_matrix_layer{layer}.png")
        on_map = attention_on_map(chosen["frame"], chosen["positions"], weights, query,
                                  f"{title}: node {query} (star) attends to the red nodes, line width = weight")
        Image.fromarray(on_map).save(args.out / f"attention_map_layer{layer}.png")
    print(f"{len(steps)} steps; wrote {args.out}/pointer.gif, routes.png and {2 * len(chosen['encoder'])} "
          f"attention pictures")
    if planner is not None:
        map_guess_figure(chosen["belief"], planner.predictor.wall_probability(chosen["belief"]), truth,
                         args.out / "map_guess.png", robot=chosen["cell"])
        print(f"wrote {args.out}/map_guess.png (the map predictor's guess at step {at})")
    if others:
        policies = {label_of(args.checkpoint): policy, **others}
        draw_heads_compared(policies, chosen, at, query, args.out)
        print(f"wrote {args.out}/heads_compared_layer*.png")
        episodes = [steps]
        if args.maps > 1:
            env = make_env(env_config)  # nothing is drawn from these maps: no frames, only observations kept
            for i in range(1, args.maps):
                steps_i = record_episode(policy, env, eval_episode_seed(args.seed, i), episode_options(env_config, i))
                episodes.append([{"obs": step["obs"]} for step in steps_i])
            env.close()
        print(disagreement_table(policies, episodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
