"""Evaluate a trained policy against the baselines on the same held-out maps.

    python evaluate.py --checkpoint runs/default [--episodes 100] [--seed 0] [--policy all]
                       [--json results.json] [--gif episode.gif]

``--checkpoint`` takes a run folder (its latest checkpoint) or a ``checkpoint_*.pt`` file; the
run's ``config.yaml`` beside it rebuilds the network and the environment. Held-out maps use odd
seeds and training maps even ones (``rl/seeding.py``), so they never overlap.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from config import load_config
from env.baselines import BASELINES
from rl.evaluation import evaluate_actors, greedy_actor, load_policy, summarise, travel_ratio

AGENT = "agent"


COLUMNS = {  # summary key -> (header, decimals)
    "success_rate": ("success rate", 3),
    "coverage": ("coverage at end", 3),
    "steps_to_complete": ("steps to complete", 1),
    "travel_to_complete": ("travel to complete", 1),
}


REFERENCES = ("nearest_frontier", "greedy")
"""Travel is compared per map with each of these, when it ran: the goal, and the bar to clear."""


def format_ratio(name: str, reference: str, ratio: tuple[float, float, int] | None) -> str:
    if name == reference:
        return "1 (reference)"
    return "n/a" if ratio is None else f"{ratio[0]:.3f} ± {ratio[1]:.3f} (n={ratio[2]})"


def format_table(summaries: dict, ratios: dict[str, dict]) -> str:
    """A Markdown table: one row per policy, mean ± 95% CI half-width per column, then the
    per-map travel ratio to each reference policy in ``ratios`` ({reference: {policy: ratio}})."""
    headers = ["policy", *(header for header, _ in COLUMNS.values()),
               *(f"travel / {reference.replace('_', ' ')}" for reference in ratios)]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, summary in summaries.items():
        cells = [f"{summary[key][0]:.{d}f} ± {summary[key][1]:.{d}f}" for key, (_, d) in COLUMNS.items()]
        cells += [format_ratio(name, reference, by_policy.get(name)) for reference, by_policy in ratios.items()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("(mean ± 95% CI half-width, Student's t; steps and travel over completed episodes; "
                 "ratios per map, over the maps both policies completed)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="run folder or checkpoint file (needed for the agent)")
    parser.add_argument("--config", default="configs/default.yaml", help="env settings when no checkpoint is given")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="selects the held-out maps")
    parser.add_argument("--policy", default="all", choices=["all", AGENT, *BASELINES])
    parser.add_argument("--json", type=Path, help="write the summaries, ratios and every episode's result here")
    parser.add_argument("--gif", type=Path, help="save the first episode of the first policy as a GIF")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")

    actors = {}
    if args.checkpoint is not None:
        try:
            policy, config = load_policy(args.checkpoint)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        actors[AGENT] = greedy_actor(policy)
    elif args.policy == AGENT:
        parser.error("--policy agent needs --checkpoint")
    else:
        config = load_config(args.config)
    actors.update(BASELINES)
    if args.policy != "all":
        actors = {args.policy: actors[args.policy]}

    results = evaluate_actors(actors, config.env, args.episodes, args.seed, gif=args.gif)
    summaries = {name: summarise(r) for name, r in results.items()}
    ratios = {reference: {name: travel_ratio(r, results[reference]) for name, r in results.items() if name != reference}
              for reference in REFERENCES if reference in results}
    print(format_table(summaries, ratios))
    if args.json:
        report = {"episodes": args.episodes, "seed": args.seed, "summaries": summaries,
                  **{f"travel_ratio_to_{reference}": by_policy for reference, by_policy in ratios.items()},
                  "per_episode": {name: [asdict(r) for r in rs] for name, rs in results.items()}}
        args.json.write_text(json.dumps(report, indent=2))
    if args.gif:
        print(f"GIF of {next(iter(results))}'s first episode: {args.gif}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
