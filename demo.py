"""A short demonstration of the policy network until PPO training lands: ``make train`` runs it.

    python demo.py [--config configs/default.yaml] [key=value ...]
"""
from __future__ import annotations

import argparse

import torch

from config import load_config
from policy import PolicyNet
from bench.synthetic import random_graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("overrides", nargs="*", help="dotted key=value, e.g. model.n_heads=2")
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    torch.manual_seed(config.seed)
    policy = PolicyNet(config.model)
    neighbors, node_mask = random_graph(B=4, N=16, K=5, seed=config.seed)
    obs = {
        "node_features": torch.rand(4, 16, 4),
        "node_mask": node_mask,
        "neighbors": neighbors,
        "current_index": torch.zeros(4, dtype=torch.long),
        "action_mask": neighbors[:, 0] >= 0,
    }
    logits, value = policy(obs)
    print(f"PolicyNet with {sum(p.numel() for p in policy.parameters()):,} parameters: {config.model}")
    print("action probabilities over K=5 slots (masked slots are 0):")
    print(torch.softmax(logits, -1).detach().numpy().round(3))
    print("values:", value.detach().numpy().round(3))


if __name__ == "__main__":
    main()
