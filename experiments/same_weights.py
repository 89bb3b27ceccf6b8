"""Do two runs end with the same weights, tensor for tensor? (a restructure must not change training)

    python -m experiments.same_weights RUN_OR_CHECKPOINT_A RUN_OR_CHECKPOINT_B

Compares the network's tensors (and, for two checkpoints, the optimizer's state and the counters)
with ``torch.equal``: bit for bit, not up to a tolerance. Prints one line per difference and exits
1 if there is any, 0 if the two are the same.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from run.checkpoint import CheckpointError
from run.pretrained import read_weights


def differences(a: object, b: object, where: str = "") -> list[str]:
    """Where nested dicts, lists and tensors ``a`` and ``b`` differ (tensors bit for bit)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
        return [] if same else [f"{where}: tensors differ"]
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{where}.{key}: in one only" for key in sorted(set(a) ^ set(b), key=str)]
        for key in sorted(set(a) & set(b), key=str):
            found += differences(a[key], b[key], f"{where}.{key}" if where else str(key))
        return found
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [line for i, (x, y) in enumerate(zip(a, b)) for line in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a run folder (its newest checkpoint), a checkpoint or a pretrained file")
    parser.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    try:
        (path_a, state_a, _), (path_b, state_b, _) = read_weights(args.a), read_weights(args.b)
    except (FileNotFoundError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    keys = ("model", "optimizer", "update", "global_step")
    found = differences({key: state_a.get(key) for key in keys}, {key: state_b.get(key) for key in keys})
    for line in found:
        print(line)
    n = sum(t.numel() for t in state_a["model"].values())
    print(f"{path_a} and {path_b}: " + (f"{len(found)} differences" if found else
                                        f"the same, bit for bit ({len(state_a['model'])} tensors, {n:,} weights)"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
