"""TensorBoard tags: a fixed contract (CleanRL's names plus exploration charts), explained once.

The trainer writes exactly these names (its code uses the constants), and the README's table of
tags is checked against the dicts by the tests.
"""
from __future__ import annotations

EPISODIC_RETURN = "charts/episodic_return"
EPISODIC_LENGTH = "charts/episodic_length"
COVERAGE = "charts/coverage"
TRAVEL_DISTANCE = "charts/travel_distance"
SUCCESS_RATE = "charts/success_rate"
SPS = "charts/SPS"
LEARNING_RATE = "charts/learning_rate"
COLLECTION_SECONDS = "perf/collection_seconds"
UPDATE_SECONDS = "perf/update_seconds"
LOSSES = "losses/"
"""Prefix of the PPO update's statistics: ``losses/`` + each key ``learning.ppo.ppo_update`` returns."""
HYPERPARAMETERS = "hyperparameters"
EPISODE_IMAGE = "images/episode"
ATTENTION_IMAGE = "images/attention"

SCALAR_TAGS = {
    EPISODIC_RETURN: "undiscounted return of each finished episode",
    EPISODIC_LENGTH: "steps of each finished episode",
    COVERAGE: "fraction of the reachable free cells known when an episode ends (1.0 = fully explored)",
    TRAVEL_DISTANCE: "cells travelled in each finished episode",
    SUCCESS_RATE: "share of the last 20 finished episodes that explored everything before the step limit",
    SPS: "environment steps per second since the run (or its resumption) started",
    LEARNING_RATE: "the annealed Adam learning rate",
    COLLECTION_SECONDS: "wall seconds the update's rollout took to collect",
    UPDATE_SECONDS: "wall seconds of the update itself: GAE and PPO's minibatch epochs",
    "losses/policy_loss": "PPO's clipped surrogate loss (last minibatch of the update)",
    "losses/value_loss": "the (clipped) value loss",
    "losses/entropy": "mean entropy of the action distribution over valid moves",
    "losses/approx_kl": "approximate KL between the old and new policy ((r - 1) - log r)",
    "losses/clipfrac": "fraction of samples whose probability ratio left [1 - clip, 1 + clip]",
    "losses/explained_variance": "1 - Var(returns - values) / Var(returns): how well the critic predicts",
}
TEXT_TAGS = {HYPERPARAMETERS: "the resolved config, as a Markdown table"}
IMAGE_TAGS = {
    EPISODE_IMAGE: "an episode of the policy's argmax moves on a held-out map, rendered at its end",
    ATTENTION_IMAGE: "the last encoder layer's attention, one heat map per head, for that episode's last state",
}
