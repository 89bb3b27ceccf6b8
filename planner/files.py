"""The planner a pretrained file carries: its map predictor, prior weight and opening.

    python -m planner.files RUN_OR_CHECKPOINT OUT.pt --planner PREDICTOR [--prior-weight W] [--opening 4]
        [--env KEY=VALUE ...]

``--planner PREDICTOR`` adds a ``"planner"`` entry (``run.pretrained.PLANNER_ENTRY``),
``{"predictor", "prior_weight"[, "opening"]}``: a map predictor file (``planner.predictor_files``),
the weight the planner gives the agent's log-probability (``planner.actor.planning_actor``) and,
with ``--opening W``, the side of the squares of free cells its guess is opened by
(``planner.actor.predicted_guess``; a file without it, or with ``--opening 0``, plays the guess
unopened). ``evaluate.py --checkpoint`` then plays ``planner`` beside the agent. ``--prior-weight``
or ``--opening`` alone change the planner the file carries, its predictor as it was (``--opening
0`` takes its opening away), as the same options of ``evaluate.py`` change it for one evaluation.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

from config import ConfigError
from planner.predictor import MapPredictor
from planner.predictor_files import load_predictor, predictor_from_state, read_predictor_file
from run.checkpoint import CheckpointError
from run.pretrained import carried_planner, export, export_parser, read_weights

DEFAULT_PRIOR_WEIGHT = 0.5
"""The planner's weight on the agent's log-probability in an unopened guess, chosen on the first
100 validation floor plans (docs/results.md); in a guess opened by 4 x 4 squares, 0.25
(``pretrained/dungeon.pt``)."""


class Planner(NamedTuple):
    """What ``evaluate.py``'s ``planner`` plays with (``planner.actor.planner_actor``)."""

    predictor: MapPredictor
    prior_weight: float
    """The weight on the agent's log-probability."""
    opening: int | None = None
    """The side of the squares of free cells the guess is opened by; None: not opened."""

    def overridden(self, prior_weight: float | None = None, opening: int | None = None) -> Planner:
        """This planner with ``prior_weight`` and ``opening`` replaced where not None, as a command
        line asks (``overridden_settings``: ``opening`` 0 means not opened)."""
        settings = overridden_settings(self.prior_weight, self.opening, prior_weight, opening)
        return self._replace(prior_weight=settings["prior_weight"], opening=settings.get("opening"))


def overridden_settings(prior_weight: float, opening: int | None, new_prior_weight: float | None = None,
                        new_opening: int | None = None) -> dict[str, Any]:
    """``planner_settings`` of a planner weighing ``prior_weight`` and opened by ``opening``, with
    what a command line gives in place of each where not None: ``new_opening`` 0 means not
    opened. ``ValueError`` naming a bad value."""
    if new_opening is not None:
        opening = new_opening or None
    return planner_settings(prior_weight if new_prior_weight is None else new_prior_weight, opening)


def planner_entry(predictor: Path, prior_weight: float = DEFAULT_PRIOR_WEIGHT, opening: int | None = None
                  ) -> dict[str, Any]:
    """The ``"planner"`` entry for the map predictor file at ``predictor`` (``opening`` 0 or None:
    not opened), checked (``FileNotFoundError``, ``ValueError``) before anything is written."""
    settings = overridden_settings(prior_weight, None, new_opening=opening)  # checked before the file is read
    return {"predictor": read_predictor_file(predictor), **settings}


def retuned_planner(source: Path, prior_weight: float | None = None, opening: int | None = None) -> dict[str, Any]:
    """The ``"planner"`` entry the pretrained file at ``source`` carries, its prior weight or
    opening replaced where given (``overridden_settings``: ``opening`` 0 takes the opening away);
    ``ValueError`` when ``source`` carries no planner or a value is bad."""
    path, state, _ = read_weights(source)
    entry = carried_planner(state)
    if entry is None:
        raise ValueError(f"{path} carries no planner to change: name its map predictor with --planner")
    return {"predictor": entry["predictor"],
            **overridden_settings(entry["prior_weight"], entry.get("opening"), prior_weight, opening)}


def planner_settings(prior_weight: float, opening: int | None) -> dict[str, Any]:
    """A planner entry's ``prior_weight`` and, unless None, ``opening``; ``ValueError`` naming a bad one."""
    if not prior_weight >= 0:
        raise ValueError(f"prior weight {prior_weight}: a weight must be 0 or more")
    if opening is not None and opening < 1:
        raise ValueError(f"opening {opening}: the side of a square of free cells, 1 or more (0: not opened)")
    return {"prior_weight": float(prior_weight)} | ({} if opening is None else {"opening": int(opening)})


def read_planner(source: Path) -> Planner | None:
    """The planner the weights at ``source`` carry, or None (a run folder, a checkpoint, or a
    pretrained file written without ``--planner``)."""
    path, state, _ = read_weights(source)
    entry = carried_planner(state)
    if entry is None:
        return None
    return Planner(predictor_from_state(entry["predictor"], f"{path}'s planner"), float(entry["prior_weight"]),
                   entry.get("opening"))


def planner_for(source: Path | None, predictor: Path | None = None) -> Planner | None:
    """The planner to play with the weights at ``source``: the map predictor file ``predictor`` at
    ``DEFAULT_PRIOR_WEIGHT``, its guess not opened, when one is named (``source`` is then not
    read), else what ``source`` carries (``read_planner``)."""
    if predictor is not None:
        return Planner(load_predictor(predictor), DEFAULT_PRIOR_WEIGHT)
    return read_planner(source)


def main(argv: list[str] | None = None) -> int:
    parser = export_parser("Write a pretrained file that carries a planner.")
    parser.add_argument("--planner", type=Path, metavar="PREDICTOR",
                        help="carry this map predictor (python -m planner.train_predictor's file) for evaluate.py's planner")
    parser.add_argument("--prior-weight", type=float, help=f"the planner's weight on the agent's log-probability "
                                                           f"(default: {DEFAULT_PRIOR_WEIGHT} with --planner; "
                                                           f"without it, the carried planner's)")
    parser.add_argument("--opening", type=int, metavar="W", help="open the planner's guess by squares of W x W free "
                                                                "cells, 0 not at all (4 for configs/dungeon.yaml; "
                                                                "default: none with --planner; without it, the "
                                                                "carried planner's)")
    args = parser.parse_args(argv)
    try:
        if args.planner is not None:
            planner = planner_entry(args.planner, DEFAULT_PRIOR_WEIGHT if args.prior_weight is None
                                    else args.prior_weight, args.opening)
        elif args.prior_weight is not None or args.opening is not None:
            planner = retuned_planner(args.source, args.prior_weight, args.opening)
        else:
            planner = None
        size = export(args.source, args.out, tuple(args.env), planner)
    except (FileNotFoundError, CheckpointError, ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size / 1e6:.2f} MB)" + ("" if planner is None else ", with its planner"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
