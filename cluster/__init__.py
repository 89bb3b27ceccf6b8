"""Everything that runs on Ray: rollout actors, sweep runs and evaluation across a cluster.

Only this package imports Ray, and only when a program asks for it (``env.vector: ray``,
``ablate.py``, ``evaluate.py --workers``); the model, the env and the in-process training never do.
"""
