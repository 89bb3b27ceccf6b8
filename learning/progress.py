"""Where each environment is in its schedule of episodes: what an exact resume needs, and nothing else.

Every training episode has its own seed (``run.seeding.train_episode_seed``), so an env's state
follows from its episode number and the actions taken since that episode's reset;
``learning.envs.restore_envs`` rebuilds the envs from these by replaying. The running return and length
are kept beside them so an episode cut by a checkpoint is reported whole after the resume.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class FinishedEpisode:
    """One episode that ended during a rollout, as TensorBoard's ``charts/*`` report it."""

    step: int
    """The rollout step (0 .. num_steps - 1) at which it ended."""
    episodic_return: float
    episodic_length: int
    coverage: float
    travel_distance: float
    success: bool
    """Terminated: explored everything before the step limit."""


@dataclass
class EpisodeProgress:
    """Per env: episode number, actions since its reset, return and length so far."""

    episodes: list[int]
    actions: list[list[int]] = field(default_factory=list)
    episode_return: list[float] = field(default_factory=list)
    episode_length: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, num_envs: int) -> "EpisodeProgress":
        """Every env at the first step of its episode 0."""
        return cls([0] * num_envs, [[] for _ in range(num_envs)], [0.0] * num_envs, [0] * num_envs)

    def record_step(self, step: int, actions: list[int], rewards: np.ndarray, terminated: np.ndarray,
                    truncated: np.ndarray, final_info: dict | None) -> list[FinishedEpisode]:
        """Account one vector step; returns the episodes it ended (their stats from ``final_info``)."""
        finished = []
        for i, action in enumerate(actions):
            self.episode_return[i] += float(rewards[i])
            self.episode_length[i] += 1
            if not (terminated[i] or truncated[i]):
                self.actions[i].append(action)
                continue
            finished.append(FinishedEpisode(step, self.episode_return[i], self.episode_length[i],
                                            float(final_info["coverage"][i]), float(final_info["travel_distance"][i]),
                                            bool(terminated[i])))
            self.episodes[i] += 1
            self.actions[i], self.episode_return[i], self.episode_length[i] = [], 0.0, 0
        return finished

    def slice(self, first: int, count: int) -> "EpisodeProgress":
        """The places of envs ``first .. first + count - 1`` (a copy)."""
        part = slice(first, first + count)
        return EpisodeProgress(self.episodes[part], [list(a) for a in self.actions[part]],
                               self.episode_return[part], self.episode_length[part])

    @classmethod
    def join(cls, parts: list["EpisodeProgress"]) -> "EpisodeProgress":
        """The places of consecutive slices of envs, as one."""
        return cls(*([item for part in parts for item in getattr(part, name)]
                     for name in ("episodes", "actions", "episode_return", "episode_length")))

    def state_dict(self) -> dict:
        return asdict(self)
