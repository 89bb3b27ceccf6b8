"""The policy's argmax as the player of lookahead play-outs (``planner.lookahead.Continuation``).

``planner.imitation --continuation agent`` prices each move with the learner itself finishing the
episode, C_pi(s, a), instead of greedy: the labels of a policy-iteration step. The play-outs run
in the env workers (``LookaheadCosts`` in each async env's process), so the player travels there
as weights and config and builds its own network on first use, on the CPU and one torch thread.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import Tensor, nn

from config import Config
from env.observation import CURRENT_INDEX
from graph_batch import forward_groups
from policy import build_policy


class PolicyContinuation:
    """Moves of ``config``'s network with ``weights``: the argmax of one batched forward pass per
    call over the observations it is given ([B, ...] -> [B] slots). A copy of the weights is
    kept: later training of the network they came from does not change this player."""

    def __init__(self, config: Config, weights: Mapping[str, Tensor]):
        self.config = config
        self.weights = {name: value.detach().cpu().clone() for name, value in weights.items()}
        self._policy: nn.Module | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_policy": None}  # a worker builds its own network from the weights

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if self._policy is None:
            self._policy = build_policy(self.config)
            self._policy.load_state_dict(self.weights)
            self._policy.eval()
        with torch.no_grad():
            logits, _ = forward_groups(self._policy, obs, [range(len(obs[CURRENT_INDEX]))])
        return logits.argmax(-1).numpy()
