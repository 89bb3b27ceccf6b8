"""Which collector a run uses: ``env.vector`` picks it, here and nowhere else.

    sync       ->  learning/collector.py         VectorEnvCollector (this process)
    processes  ->  learning/worker_processes.py  ProcessCollector (local processes, each a VectorEnvCollector)
    ray        ->  cluster/rollout_actors.py     RayCollector (Ray actors, each a VectorEnvCollector)

All implement ``learning.collector.Collector`` and gather the same rollout, bit for bit. The Ray
one is imported only when asked for: the one import from this layer into ``cluster/``, so nothing
else in a run loads Ray.
"""
from __future__ import annotations

from config import Config
from learning.collector import Collector, VectorEnvCollector
from learning.progress import EpisodeProgress
from learning.worker_processes import ProcessCollector


def check_collector_settings(config: Config) -> None:
    """Refuse now, before a run folder is written, what would make the collector fail: with
    ``env.vector: ray``, a ``run.ray_address`` where no cluster answers."""
    if config.env.vector == "ray" and config.run.ray_address not in ("", "auto"):
        from cluster.connect import check_reachable
        check_reachable(config.run.ray_address)


def make_collector(config: Config, progress: EpisodeProgress | None = None) -> Collector:
    """The collector ``env.vector`` names (``progress``: each env's place, to resume from)."""
    if config.env.vector == "ray":
        from cluster.rollout_actors import RayCollector
        return RayCollector(config, progress)
    if config.env.vector == "processes":
        return ProcessCollector(config, progress)
    return VectorEnvCollector(config, progress)
