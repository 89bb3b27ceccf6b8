"""Evaluate a trained policy against the baselines on the same held-out maps.

    python evaluate.py --checkpoint runs/default [--episodes 100] [--first-episode 0] [--seed 0] [--policy all | NAME ...]
                       [--env map_size=48 ...] [--json results.json] [--gif episode.gif]
                       [--workers N [--address HOST:PORT]] [--planner PREDICTOR] [--prior-weight W]
                       [--opening W] [--resume]

``--checkpoint`` takes a run folder (its latest checkpoint) or a ``checkpoint_*.pt`` file; the
run's ``config.yaml`` beside it rebuilds the network and the environment. ``--env KEY=VALUE``
(repeatable) changes that environment for this evaluation only, e.g. larger maps
(``map_size=48``), one family (``map_family=maze``) or your own map (``map_file=plan.png``); the
keys are the fields of ``env.settings.GridExploreConfig``. Held-out maps use odd seeds and training
maps even ones (``run/seeding.py``), so they never overlap. ``--workers N`` plays the maps in N
Ray tasks at a time (a local Ray, or the cluster ``--address`` names; each task a contiguous chunk
of the maps) with exactly the serial results.

``--env map_dir=FOLDER`` (or a glob, ``map_dir='maps/*.png'``) evaluates every map of the
collection once, in its sorted order (a natural sort of the names): episode i plays map i, at most
``--episodes`` of them (fewer when the folder holds fewer, as the output says), from map
``--first-episode`` on (procedural maps: from that held-out episode; a part of an evaluation, as
``compare.py`` joins parts, e.g. the floor plans not used to tune a planner). Every map is
checked before the first episode, and ``--json`` records each episode's ``map_file``, so
``compare.py`` pairs the results map by map. A checkpoint trained on a folder's ``train`` part
(``configs/dungeon.yaml``, ``pretrained/dungeon.pt``) plays that part unless ``--env map_split=``
says otherwise (``validation``, or ``all`` for every map of another folder), and says so
(``evaluation.play.train_part_note``; ``visualize.py`` too).

A pretrained file written with a map predictor (``python -m planner.files ... --planner``, as
both files of ``pretrained/``) also plays ``planner``: the agent weighing, for each move, the
lookahead's cost in the world the predictor guesses (opened as the file says: v14) against a
weight times its own log-probability (``planner.actor.planner_actor``; docs/results.md section
5, v8). ``--planner PREDICTOR`` (a file of ``python -m planner.train_predictor``) plays it with that
predictor instead, its guess not opened, ``--prior-weight W`` with that weight (default: the
file's, else 0.5) and ``--opening W`` with its guess opened by W x W squares of free cells (0: not
opened; default: as the file's planner). A planner's episode costs about ten of the agent's;
``--workers`` splits it across Ray tasks as the rest.

Every policy plays a map before the next map starts, so the progress bar (in maps) keeps one pace
from the first map to the last. Ctrl-C or SIGTERM stops the evaluation after the map in play
(with ``--workers``, at once: the chunks in play are cancelled) and prints the table over the maps
every policy finished, the first N; ``--json`` gets that report, its ``stopped_by`` naming the
signal (``compare.py`` pairs it over those N maps), and the exit code is the shell's for the
signal (130 for SIGINT, 143 for SIGTERM); a second signal stops at once, reporting nothing. The
report also names the checkpoint and, when the planner played, its predictor's file, prior weight
and opening. The same command with ``--resume`` goes on from the report ``--json`` names: it plays
the maps the report lacks (a stopped evaluation's, or more ``--episodes`` than it asked) and
rewrites it whole, as one uninterrupted run would have written it; a report of other settings
(seed, environment, policies, checkpoint, planner) is refused, naming what differs.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from config import ConfigError, EnvConfig, load_config
from env.baselines import BASELINES
from env.episode import EpisodeResult
from env.map_io import MapError
from evaluation.comparison import load_report
from evaluation.play import (
    AGENT,
    PLANNER,
    REFERENCES,
    STOP_PLAN,
    absent_map_dir_note,
    cycles_line,
    evaluate_actors,
    finished_report,
    load_policy,
    map_dir_size,
    played_maps,
    train_part_note,
)
from evaluation.stats import format_mean_ci
from graph_batch import argmax_actor
from learning.envs import with_env_overrides
from run.atomic import atomic_write_text, check_writable
from run.interrupt import StopOnSignal

try:  # the planner layer is optional: without planner/, the agent and the baselines play as ever
    from planner.actor import planner_actor, portable_planner
    from planner.files import DEFAULT_PRIOR_WEIGHT, Planner, planner_for
except ModuleNotFoundError as missing:
    if missing.name != "planner":
        raise
    planner_for = DEFAULT_PRIOR_WEIGHT = None

COLUMNS = {  # summary key -> (header, decimals)
    "success_rate": ("success rate", 3),
    "coverage": ("coverage at end", 3),
    "steps_to_complete": ("steps to complete", 1),
    "travel_to_complete": ("travel to complete", 1),
}

RAY_STOP_PLAN = "cancelling the chunks in play, then reporting the maps finished"
"""What a signal does to ``--workers``' evaluation (``cluster.parallel_evaluation.evaluate_on_ray``)."""


def format_ratio(name: str, reference: str, ratio: tuple[float, float, int] | None) -> str:
    if name == reference:
        return "1 (reference)"
    return "n/a" if ratio is None else f"{format_mean_ci(ratio[0], ratio[1], 3)} (n={ratio[2]})"


def format_table(summaries: dict, ratios: dict[str, dict]) -> str:
    """A Markdown table: one row per policy, mean ± 95% CI half-width per column, then the
    per-map travel ratio to each reference policy in ``ratios`` ({reference: {policy: ratio}})."""
    headers = ["policy", *(header for header, _ in COLUMNS.values()),
               *(f"travel / {reference.replace('_', ' ')}" for reference in ratios)]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, summary in summaries.items():
        cells = [format_mean_ci(*summary[key], d) for key, (_, d) in COLUMNS.items()]
        cells += [format_ratio(name, reference, by_policy.get(name)) for reference, by_policy in ratios.items()]
        label = f"{name} (argmax)" if name == AGENT else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("(mean ± 95% CI half-width, Student's t; steps and travel over completed episodes; "
                 "ratios per map, over the maps both policies completed)")
    return "\n".join(lines)


def planner_of(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Planner | None:
    """The planner ``planner`` plays: ``--planner``'s file, else the one ``--checkpoint`` carries
    (None when neither), weighing the agent's log-probability by ``--prior-weight``, else the
    carried weight (``DEFAULT_PRIOR_WEIGHT`` for ``--planner``), its guess opened by ``--opening``
    (0: not at all), else as carried (not at all for ``--planner``)."""
    if planner_for is None:  # no planner layer in this checkout
        asked = [option for option, value in (("--planner", args.planner), ("--prior-weight", args.prior_weight),
                                              ("--opening", args.opening)) if value is not None]
        if asked or PLANNER in args.policy:
            parser.error(f"{' '.join(asked) or '--policy planner'}: this checkout has no planner layer (planner/)")
        return None
    try:
        planner = planner_for(args.checkpoint, args.planner)
    except (FileNotFoundError, ValueError) as error:
        parser.error(f"--planner: {error}" if args.planner is not None else f"--checkpoint's planner: {error}")
    if planner is None:
        if PLANNER in args.policy:
            parser.error(f"--policy planner: {args.checkpoint} carries no map predictor; name one with --planner")
        for option, value in (("--prior-weight", args.prior_weight), ("--opening", args.opening)):
            if value is not None:
                parser.error(f"{option}: there is no planner to set ({args.checkpoint} carries no map predictor; "
                             f"name one with --planner)")
        return None
    return planner.overridden(args.prior_weight, args.opening)


def planner_settings(planner: Planner, predictor: Path) -> dict:
    """What a report records of the ``planner`` that played: the file its predictor came from,
    its prior weight and its opening (None: not opened), so that two reports say how they differ."""
    return {"predictor": str(predictor), "prior_weight": planner.prior_weight, "opening": planner.opening}


def resumed(path: Path, names: list[str], seed: int, env_config: EnvConfig, settings: dict, first_episode: int = 0
            ) -> dict[str, list[EpisodeResult]]:
    """The episodes of the report at ``path``, to be continued: made by ``names`` with this
    ``seed``, environment and ``settings`` (checkpoint, planner), else ``ValueError`` naming
    what differs. Its maps are the first ones of any evaluation with those settings from
    held-out episode ``first_episode`` on."""
    if not path.is_file():
        raise ValueError(f"{path}: no report to continue")
    report = load_report(path)
    mine = {"first_episode": first_episode, "seed": seed, "env": json.loads(json.dumps(asdict(env_config))), "policies": names,
            **settings}
    theirs = {"first_episode": report.first_episode, "seed": report.seed, "env": report.env,
              "policies": list(report.episodes), **{key: report.header.get(key) for key in settings}}
    differ = [key for key in mine if mine[key] != theirs[key]]
    if differ:
        raise ValueError(f"{path} was made with other settings: " + "; ".join(
            f"{key} {theirs[key]!r} there, {mine[key]!r} now" for key in differ))
    return report.episodes


def evaluate_in_parallel(actors: dict, policy, planner, env_config: EnvConfig, args: argparse.Namespace,
                         stop: StopOnSignal, first: int, episodes: int) -> dict:
    """Maps ``first .. first + episodes - 1`` in ``args.workers`` Ray tasks; the GIF, if asked
    for, is played here first (one episode)."""
    from cluster.connect import ray_session  # Ray is imported only when asked for
    from cluster.parallel_evaluation import evaluate_on_ray
    names = list(actors)
    if args.gif is not None:
        evaluate_actors({names[0]: actors[names[0]]}, env_config, 1, args.seed, gif=args.gif, progress=False,
                        first_episode=first)
    with ray_session(args.address):
        players = {PLANNER: portable_planner(planner)} if PLANNER in names else {}
        return evaluate_on_ray(names, policy if {AGENT, PLANNER} & set(names) else None, env_config, episodes,
                               args.seed, args.workers, players, stop, first)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="run folder or checkpoint file (needed for the agent)")
    parser.add_argument("--config", default="configs/default.yaml", help="env settings when no checkpoint is given")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="selects the held-out maps")
    parser.add_argument("--first-episode", type=int, default=0, metavar="I",
                        help="start at held-out episode I (with a map_dir: map I of its order; default 0)")
    parser.add_argument("--policy", nargs="+", default=["all"], choices=["all", AGENT, PLANNER, *BASELINES],
                        help="the policies to play (default: all), e.g. --policy planner greedy")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting for this evaluation, e.g. map_size=48 (repeatable)")
    parser.add_argument("--json", type=Path, help="write the summaries, ratios and every episode's result here")
    parser.add_argument("--gif", type=Path, help="save the first episode of the first policy as a GIF")
    parser.add_argument("--workers", type=int, default=1, help="Ray tasks to play the maps in at a time (1: no Ray)")
    parser.add_argument("--address", default="", help="the Ray cluster for --workers (default: a local one)")
    parser.add_argument("--planner", type=Path, metavar="PREDICTOR",
                        help="also play the agent planning in this map predictor's guess (needs --checkpoint)")
    parser.add_argument("--prior-weight", type=float,
                        help=f"the planner's weight on the agent's log-probability (default: the checkpoint's, "
                             f"else {DEFAULT_PRIOR_WEIGHT or 'none: no planner layer'})")
    parser.add_argument("--opening", type=int, metavar="W",
                        help="open the planner's guess by W x W squares of free cells, 0 not at all (default: as "
                             "the checkpoint's planner; with --planner, not at all)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the evaluation whose report --json names (stopped, or of fewer maps) with "
                             "the same settings, and rewrite it whole")
    args = parser.parse_args(argv)
    for option, value in (("--planner", args.planner), ("--prior-weight", args.prior_weight), ("--opening", args.opening)):
        if value is not None and args.checkpoint is None:
            parser.error(f"{option} needs --checkpoint (the agent that plans)")
    if "all" in args.policy and len(args.policy) > 1:
        parser.error(f"--policy {' '.join(args.policy)}: 'all' or a list of policies, not both")
    if PLANNER in args.policy and args.checkpoint is None:
        parser.error("--policy planner needs --checkpoint (and a predictor: --planner or one the checkpoint carries)")
    if args.prior_weight is not None and not args.prior_weight >= 0:
        parser.error(f"--prior-weight must be >= 0, got {args.prior_weight}")
    if args.opening is not None and args.opening < 0:
        parser.error(f"--opening must be >= 0 (0: not opened), got {args.opening}")
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    if args.first_episode < 0:
        parser.error(f"--first-episode must be >= 0, got {args.first_episode}")
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    if args.resume and args.json is None:
        parser.error("--resume needs --json REPORT: the report to continue and rewrite")
    if args.resume and args.gif is not None:
        parser.error("--gif: not with --resume (the GIF is of the first map, which the report's evaluation played)")
    for option, path in (("--json", args.json), ("--gif", args.gif)):
        try:
            if path is not None:
                check_writable(path)
        except ValueError as error:  # now, not after the evaluation
            parser.error(f"{option}: {error}")

    actors, policy, planner = {}, None, None
    if args.checkpoint is not None:
        try:
            policy, config = load_policy(args.checkpoint)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        actors[AGENT] = argmax_actor(policy)
        planner = planner_of(args, parser)
        if planner is not None:
            actors[PLANNER] = planner_actor(policy, planner)
    elif AGENT in args.policy:
        parser.error("--policy agent needs --checkpoint")
    else:
        try:
            config = load_config(args.config)
        except ConfigError as error:
            parser.error(f"--config: {error}")
    try:
        env_config = with_env_overrides(config.env, args.env)
    except ConfigError as error:
        parser.error(absent_map_dir_note(config.env, args.env, args.checkpoint or args.config) or f"--env: {error}")
    maps = map_dir_size(env_config)
    if note := train_part_note(env_config):
        print(note, file=sys.stderr)
    if maps is not None and args.first_episode >= maps:
        parser.error(f"--first-episode {args.first_episode}: map_dir={env_config.kwargs['map_dir']!r} holds {maps} "
                     f"maps (0-{maps - 1})")
    if maps is not None and args.first_episode + args.episodes > maps:
        start = f" from map {args.first_episode}" if args.first_episode else ""
        print(f"--episodes {args.episodes}: map_dir={env_config.kwargs['map_dir']!r} holds {maps} maps; "
              f"evaluating each once{start} ({maps - args.first_episode} episodes)", file=sys.stderr)
        args.episodes = maps - args.first_episode
    actors.update(BASELINES)
    if "all" not in args.policy:  # in the usual order, whatever the order asked
        actors = {name: act for name, act in actors.items() if name in args.policy}

    settings = {"checkpoint": None if args.checkpoint is None else str(args.checkpoint),
                PLANNER: planner_settings(planner, args.planner or args.checkpoint) if PLANNER in actors else None}
    earlier: dict[str, list[EpisodeResult]] = {name: [] for name in actors}
    if args.resume:
        try:
            earlier = resumed(args.json, list(actors), args.seed, env_config, settings, args.first_episode)
        except ValueError as error:
            parser.error(f"--resume: {error}")
        if played_maps(earlier) >= args.episodes:
            print(f"--resume: {args.json} already holds {played_maps(earlier)} maps; nothing to play", file=sys.stderr)
            return 0
        print(f"--resume: {args.json} holds maps {args.first_episode}-{args.first_episode + played_maps(earlier) - 1}; "
              f"playing the rest", file=sys.stderr)
    first, left = args.first_episode + played_maps(earlier), args.episodes - played_maps(earlier)
    with StopOnSignal(RAY_STOP_PLAN if args.workers > 1 else STOP_PLAN) as stop:
        try:
            if args.workers > 1:
                results = evaluate_in_parallel(actors, policy, planner, env_config, args, stop, first, left)
            else:
                results = evaluate_actors(actors, env_config, left, args.seed, gif=args.gif, first_episode=first,
                                          stop=stop)
        except MapError as error:  # a map of the folder that no check before play could tell (no free cell)
            print(f"error: {error}; nothing was written", file=sys.stderr)
            return 2
        except ConfigError as error:  # no cluster at --address
            parser.error(f"--address: {error}")
    results = {name: earlier[name] + results[name] for name in actors}
    report, exit_code = finished_report(results, stop, args.episodes, args.seed, env_config, args.first_episode)
    if report is None:
        return exit_code
    report.update(settings)
    print(format_table(report["summaries"], {reference: report[f"travel_ratio_to_{reference}"]
                                             for reference in REFERENCES if reference in results}))
    print(cycles_line(report))
    if planner is not None and PLANNER in results:
        opened = f"opened by {planner.opening} x {planner.opening} squares" if planner.opening else "not opened"
        print(f"planner: the lookahead in the guess of {settings[PLANNER]['predictor']}'s map predictor ({opened}), "
              f"against the agent's log-probability weighed {planner.prior_weight:g}")
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=2))
    if args.gif:
        print(f"GIF of {next(iter(results))}'s first episode: {args.gif}")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
