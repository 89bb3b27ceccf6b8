"""PPO alone: vector envs whose episodes replay, collectors, the rollout, GAE, the update, and the
training loop (``learning/trainer.py``; the update in ``learning/ppo.py``). Never imports the planner."""
