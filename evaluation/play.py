"""Running whole episodes with any policy, and summarising them with 95% confidence intervals."""
from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from config import Config, EnvConfig
from env.episode import Actor, EpisodeResult, run_episode
from env.map_collection import GLOB_CHARS, find_split
from env.observation import NODE_FEATURE_NAMES
from env.rendering import GifFrames, save_gif
from evaluation.stats import mean_ci
from learning.envs import make_env
from policy import PolicyNet, build_policy
from run.checkpoint import CheckpointError, load_model_weights
from run.interrupt import StopOnSignal, signal_exit_code
from run.pretrained import read_weights
from run.seeding import eval_episode_seed

AGENT = "agent"
"""The trained policy's name in reports and tables ("agent (argmax)": it takes its most probable move)."""
PLANNER = "planner"
"""The name reports give the planner layer's player (``planner.actor.planner_actor``), where it played."""
REFERENCES = ("nearest_frontier", "greedy")
"""The baselines travel is compared against, where present."""


def load_policy(source: Path) -> tuple[PolicyNet, Config]:
    """The policy whose weights ``source`` holds (a run folder: its newest checkpoint; a
    checkpoint; a pretrained file: ``run.pretrained``) and the config it was trained with."""
    path, state, config = read_weights(source)
    policy = build_policy(config)
    try:
        load_model_weights(policy, state, path, asdict(config.model))
    except CheckpointError as error:  # e.g. a checkpoint from before a node feature was added
        raise CheckpointError(f"{error} (node features of this version: {', '.join(NODE_FEATURE_NAMES)}; "
                              f"a checkpoint of another layout must be retrained)") from None
    return policy.eval(), config


def episode_options(env_config: EnvConfig, episode: int) -> dict | None:
    """The ``reset`` options of held-out episode ``episode``: with a ``map_dir``, map ``episode`` of
    the collection's order (each map once); None for procedural maps, which follow the seed."""
    return {"map_index": episode} if env_config.kwargs.get("map_dir") is not None else None


def evaluate_actors(actors: Mapping[str, Actor], env_config: EnvConfig, episodes: int, seed: int,
                    gif: Path | None = None, progress: bool = True, first_episode: int = 0,
                    stop: StopOnSignal | None = None) -> dict[str, list[EpisodeResult]]:
    """Every actor on the same ``episodes`` held-out maps (odd seeds, never seen in training):
    held-out episodes ``first_episode .. first_episode + episodes - 1`` of ``seed``. With a
    ``map_dir``, episode i plays map i of the collection's order (``map_dir_size`` maps).

    Map by map: every actor plays a map before the next map starts, so the progress bar's pace
    holds for the whole evaluation, however much slower one actor is (the planner), and a
    ``stop`` requested (a signal: ``StopOnSignal``) ends it after the map in play with every
    actor's results over the same first maps (``played_maps``).

    With ``gif``, the first actor's first episode is saved there (``env.rendering.gif_frame``s: the
    map enlarged to at least 512 px, under a band of the step, coverage and travel).
    """
    env = make_env(env_config, render_mode="rgb_array" if gif else None)
    results: dict[str, list[EpisodeResult]] = {name: [] for name in actors}
    first = next(iter(actors))
    with tqdm(total=episodes, unit="map", desc="evaluating", disable=not progress) as bar:
        for i in range(first_episode, first_episode + episodes):
            if stop is not None and stop.requested:
                break
            for name, act in actors.items():
                record = gif is not None and name == first and i == first_episode
                result, frames = run_episode(GifFrames(env) if record else env, act, eval_episode_seed(seed, i),
                                             record=record, options=episode_options(env_config, i))
                results[name].append(result)
                if record:
                    save_gif(frames, gif)
            bar.update(1)
    env.close()
    return results


STOP_PLAN = "finishing the map in play, then reporting the maps finished"
"""What a signal does to an evaluation given ``evaluate_actors``' ``stop`` (told at the first one)."""


def played_maps(results: Mapping[str, Sequence[EpisodeResult]]) -> int:
    """How many maps ``results`` hold for every one of its actors (the same first ones)."""
    return min((len(episodes) for episodes in results.values()), default=0)


def stopped_note(stopped_by: str | None, played: int, asked: int) -> str | None:
    """What to tell a user whose evaluation the signal ``stopped_by`` ended after ``played`` of
    ``asked`` maps; None when it was not stopped."""
    if stopped_by is None:
        return None
    if played == 0:
        return f"stopped by {stopped_by} before the first map finished; nothing to report"
    return f"stopped by {stopped_by} after {played} of {asked} maps: what follows covers those {played}"


def finished_report(results: Mapping[str, Sequence[EpisodeResult]], stop: StopOnSignal, asked: int, seed: int,
                    env: EnvConfig, first_episode: int = 0) -> tuple[dict | None, int]:
    """``evaluation_report`` over the maps every actor finished of the ``asked`` from
    ``first_episode`` on (None when none did), and the program's exit code: 0, or the shell's code
    for the signal that stopped it before the last map (``signal_exit_code``), which is then told
    on stderr (``stopped_note``)."""
    played = played_maps(results)
    stopped_by = stop.requested if played < asked else None  # a signal during the last map lost nothing
    if note := stopped_note(stopped_by, played, asked):
        print(note, file=sys.stderr)
    code = 0 if stopped_by is None else signal_exit_code(stopped_by)
    return (evaluation_report(results, played, seed, env, stopped_by, first_episode) if played else None), code


def map_dir_size(env_config: EnvConfig) -> int | None:
    """How many maps the env's ``map_dir`` holds in its ``map_split`` (None without one):
    evaluation plays each once."""
    map_dir = env_config.kwargs.get("map_dir")
    return None if map_dir is None else len(find_split(map_dir, env_config.kwargs.get("map_split", "all"))[0])


def absent_map_dir_note(env_config: EnvConfig, overrides: Sequence[str], source: Path) -> str | None:
    """What to tell a user whose ``source`` (a checkpoint or config) plays the maps of a
    ``map_dir`` that is not on this machine, when ``overrides`` (``--env``) name no other folder;
    None otherwise. ``pretrained/dungeon.pt`` names the reference's floor plans
    ``DungeonMaps/train``, a path no fresh clone holds."""
    map_dir = env_config.kwargs.get("map_dir")
    if map_dir is None or any(override.partition("=")[0].strip() == "map_dir" for override in overrides):
        return None
    if Path(map_dir).is_dir() or any(char in map_dir for char in GLOB_CHARS):
        return None
    where = (" (the reference's floor plans: DungeonMaps/train of github.com/marmotlab/large-scale-DRL-exploration, "
             "docs/floor-plans.md)" if "DungeonMaps" in map_dir else "")
    return f"{source} plays the maps of map_dir={map_dir!r}, not on this machine: name their folder with " \
           f"--env map_dir=PATH{where}"


def train_part_note(env_config: EnvConfig) -> str | None:
    """What to tell a user about to play a map folder's ``train`` part, the part a floor-plan run
    trains on (``configs/dungeon.yaml``, and so ``pretrained/dungeon.pt``, keep ``map_split: train``);
    None for any other split."""
    if env_config.kwargs.get("map_split") != "train":
        return None
    return (f"map_split='train': playing the part of map_dir={env_config.kwargs.get('map_dir')!r} that this "
            f"config trains on; --env map_split=validation takes its held-out tenth, map_split=all every map "
            f"(another folder, such as DungeonMaps/test)")


def summarise(results: Sequence[EpisodeResult]) -> dict[str, tuple[float, float]]:
    """Success rate, coverage, and steps / travel distance over the episodes that completed."""
    done = [r for r in results if r.success]
    return {
        "success_rate": mean_ci([float(r.success) for r in results]),
        "coverage": mean_ci([r.coverage for r in results]),
        "steps_to_complete": mean_ci([r.steps for r in done]),
        "travel_to_complete": mean_ci([r.travel_distance for r in done]),
        "return": mean_ci([r.episodic_return for r in results]),
    }


def cycles_broken(results: Sequence[EpisodeResult]) -> dict[str, int]:
    """How often ``env.episode.CycleBreaker`` acted: the cycles it broke and the maps they were on."""
    return {"cycles": sum(r.cycles_broken for r in results), "maps": sum(r.cycles_broken > 0 for r in results)}


def cycles_line(report: dict) -> str:
    """One line saying where ``CycleBreaker`` broke a cycle, per policy, for the table's foot."""
    counts = report.get("cycles_broken", {})
    acted = [f"{name} {c['cycles']} on {c['maps']} of {len(report['per_episode'][name])} maps"
             for name, c in counts.items() if c["cycles"]]
    return ("cycles broken (a policy back in an exact state, greedy leading until a cell is newly seen; "
            "docs/environment.md): " + ("; ".join(acted) if acted else "none"))


def completed_travel_pairs(ours: Sequence[EpisodeResult], reference: Sequence[EpisodeResult]
                           ) -> list[tuple[float, float]]:
    """(ours, reference) travel distance per map, paired by index, over the maps both completed
    (a map the start already saw whole, travel 0, is left out: it has no ratio)."""
    return [(a.travel_distance, b.travel_distance) for a, b in zip(ours, reference)
            if a.success and b.success and b.travel_distance > 0]


def travel_ratio(ours: Sequence[EpisodeResult], reference: Sequence[EpisodeResult]) -> tuple[float, float, int]:
    """Mean (and 95% CI) of per-map travel-distance ratios ours / reference, over maps both completed."""
    ratios = [a / b for a, b in completed_travel_pairs(ours, reference)]
    mean, half = mean_ci(ratios)
    return mean, half, len(ratios)


def evaluation_report(results: Mapping[str, Sequence[EpisodeResult]], episodes: int, seed: int,
                      env: EnvConfig, stopped_by: str | None = None, first_episode: int = 0) -> dict:
    """What ``evaluate.py --json`` writes and ``compare.py`` reads: the summaries, the travel
    ratios to each of ``REFERENCES`` present, and every episode's result, held-out episodes
    ``first_episode`` .. ``first_episode + episodes - 1``; ``stopped_by``, the signal that ended
    the evaluation after ``episodes`` maps (None: it played every map asked)."""
    ratios = {reference: {name: travel_ratio(r, results[reference]) for name, r in results.items() if name != reference}
              for reference in REFERENCES if reference in results}
    return {"episodes": episodes, "first_episode": first_episode, "seed": seed, "env": asdict(env),
            "stopped_by": stopped_by,
            "summaries": {name: summarise(r) for name, r in results.items()},
            "cycles_broken": {name: cycles_broken(r) for name, r in results.items()},
            **{f"travel_ratio_to_{reference}": by_policy for reference, by_policy in ratios.items()},
            "per_episode": {name: [asdict(r) for r in rs] for name, rs in results.items()}}
