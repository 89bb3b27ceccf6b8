"""EpisodeProgress: the per-env bookkeeping an exact resume replays, checked step by step by hand."""
import numpy as np

from learning.progress import EpisodeProgress, FinishedEpisode


def test_actions_returns_and_lengths_since_reset_and_the_episodes_that_end():
    progress = EpisodeProgress.start(2)
    no = np.array([False, False])
    assert progress.record_step(0, [3, 1], np.array([0.5, -0.1]), no, no, None) == []
    final_info = {"coverage": np.array([0.0, 0.97]), "travel_distance": np.array([0.0, 12.0])}
    ended = progress.record_step(1, [2, 4], np.array([1.0, 0.25]), np.array([False, True]), no, final_info)
    assert ended == [FinishedEpisode(step=1, episodic_return=0.15, episodic_length=2, coverage=0.97,
                                     travel_distance=12.0, success=True)]
    final_info = {"coverage": np.array([0.6, 0.0]), "travel_distance": np.array([30.0, 0.0])}
    ended = progress.record_step(2, [5, 6], np.array([-1.0, 2.0]), no, np.array([True, False]), final_info)
    assert ended == [FinishedEpisode(step=2, episodic_return=0.5, episodic_length=3, coverage=0.6,
                                     travel_distance=30.0, success=False)]  # truncated: not a success
    # env 0 starts its episode 1 with no actions; env 1 is one action into its episode 1
    assert progress.state_dict() == {"episodes": [1, 1], "actions": [[], [6]],
                                     "episode_return": [0.0, 2.0], "episode_length": [0, 1]}
