"""TensorBoard tags: a fixed contract (CleanRL's names plus exploration charts), explained once.

The README's table of tags is checked against this dict by the tests.
"""
from __future__ import annotations

SCALAR_TAGS = {
    "charts/episodic_return": "undiscounted return of each finished episode",
    "charts/episodic_length": "steps of each finished episode",
    "charts/coverage": "fraction of the reachable free cells known when an episode ends (1.0 = fully explored)",
    "charts/travel_distance": "cells travelled in each finished episode",
    "charts/success_rate": "share of the last 20 finished episodes that explored everything before the step limit",
    "charts/SPS": "environment steps per second since the run (or its resumption) started",
    "charts/learning_rate": "the annealed Adam learning rate",
    "losses/policy_loss": "PPO's clipped surrogate loss (last minibatch of the update)",
    "losses/value_loss": "the (clipped) value loss",
    "losses/entropy": "mean entropy of the action distribution over valid moves",
    "losses/approx_kl": "approximate KL between the old and new policy ((r - 1) - log r)",
    "losses/clipfrac": "fraction of samples whose probability ratio left [1 - clip, 1 + clip]",
    "losses/explained_variance": "1 - Var(returns - values) / Var(returns): how well the critic predicts",
}
TEXT_TAGS = {"hyperparameters": "the resolved config, as a Markdown table"}
IMAGE_TAGS = {
    "images/episode": "an episode of the policy's argmax moves on a held-out map, rendered at its end",
    "images/attention": "the last encoder layer's attention, one heat map per head, for that episode's last state",
}
