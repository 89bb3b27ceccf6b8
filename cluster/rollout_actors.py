"""``RayCollector``: the run's envs split across Ray actors, one rollout gathered per update.

    learner (Trainer)                               RolloutWorker actors (num_cpus=1 each)
    weights = ray.put(policy.state_dict())   --->   worker w: envs [first_w, first_w + count_w)
    rollout = Rollout.join(ray.get(...))     <---   (Rollout of its slice, EpisodeProgress)

Each worker is a ``VectorEnvCollector`` over a contiguous slice of the envs, whole forward groups
(``env.forward_group``), sync, in the actor's process, with a CPU copy of the policy on one torch
thread. The weights go into the object store once per update and every worker reads them from
there. Because env ``i`` is seeded by its global index, acts from its group's forward pass and
samples with seeds of its own (``learning.collector``), the joined rollout equals the in-process
collector's bit for bit, for any number of workers.

A worker whose process dies mid-rollout is restarted by Ray (``max_restarts``); the learner then
rebuilds its envs by replaying them from where they stood when the rollout began (what
``--resume`` does from a checkpoint) and collects its share again with the same weights, so the
run goes on exactly as if nothing had happened, and says so in the log.
"""
from __future__ import annotations

import logging
import os
import time
from typing import NamedTuple

import ray
import torch
from ray.exceptions import ActorUnavailableError, RayActorError
from torch import nn

from cluster.connect import ClusterError, cluster_cpus, connect
from config import Config
from learning.buffer import Rollout
from learning.collector import VectorEnvCollector, group_slices
from learning.progress import EpisodeProgress
from policy import build_policy

log = logging.getLogger(__name__)

RESTARTS_PER_ROLLOUT = 3
"""A worker that dies more often than this within one rollout stops the run (something is wrong
with the machine or the env, not a passing failure)."""
RESTART_WAIT_S = 300.0
"""How long a restarting worker may stay unavailable within one rollout before the run stops. A
restart starts a new process that imports torch: seconds alone, much longer on a loaded machine."""
RETRY_EVERY_S = 1.0
"""Pause before asking a restarting worker again."""


class SliceRollout(NamedTuple):
    """What a worker sends back per update."""

    rollout: Rollout
    progress: EpisodeProgress
    """Its envs' places after the rollout."""
    built: bool
    """Whether it had to build its envs first (a new or restarted worker)."""
    seconds: float
    """Its own time for the rollout (the rest of the learner's wait is transfer and scheduling)."""


@ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)
class RolloutWorker:
    """One slice of the envs and a CPU copy of the policy, in its own process."""

    def __init__(self, config: Config, env_indices: range):
        torch.set_num_threads(1)  # one CPU reserved; more threads would only wait on each other
        self.config, self.env_indices = config, env_indices
        self.policy = build_policy(config).eval()
        self.collector: VectorEnvCollector | None = None

    def collect(self, weights: dict[str, torch.Tensor], place: EpisodeProgress | None) -> SliceRollout:
        """A rollout of this slice from ``place`` (its envs' places now; None: fresh envs).

        A worker that Ray has just started, or restarted after its process died, has no envs:
        it builds them from ``place`` by replay. A live worker's envs must already stand there.
        """
        start = time.perf_counter()
        built = self.collector is None
        if built:
            self.collector = VectorEnvCollector(self.config, place, self.env_indices)
        elif place is not None and self.collector.progress() != place:
            raise RuntimeError(f"worker for envs {self.env_indices} is not where the learner expects it")
        self.policy.load_state_dict(weights)
        rollout = self.collector.collect(self.policy)
        return SliceRollout(rollout, self.collector.progress(), built, time.perf_counter() - start)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id): where this worker runs (for tests and diagnostics)."""
        return ray.get_runtime_context().get_node_id(), os.getpid()


class RayCollector:
    """The ``learning.collector.Collector`` on ``env.workers`` Ray actors (``env.vector: ray``)."""

    def __init__(self, config: Config, progress: EpisodeProgress | None = None):
        self.started_ray = connect(config.run.ray_address)
        try:
            available = cluster_cpus()
            if config.env.workers > available:
                raise ClusterError(f"env.workers={config.env.workers} needs {config.env.workers} CPUs, one per "
                                   f"worker; the Ray cluster has {available}")
            self.slices = group_slices(config.env.num_envs, config.env.forward_group, config.env.workers)
            self.workers = [RolloutWorker.remote(config, indices) for indices in self.slices]
            # Each worker's envs' places when the next rollout begins: None until a fresh one's first.
            self.places: list[EpisodeProgress | None] = [
                None if progress is None else progress.slice(s.start, len(s)) for s in self.slices]
            self.collected = [False] * len(self.workers)  # whether each worker has delivered a rollout yet
            self.restarts = 0
            self.bytes_sent = self.bytes_received = 0  # of the last update: weights out, rollouts back
            self.worker_seconds: list[float] = []  # of the last update: each worker's own collection time
        except BaseException:
            self.close()
            raise

    def collect(self, policy: nn.Module) -> Rollout:
        weights = {key: value.detach().cpu() for key, value in policy.state_dict().items()}
        self.bytes_sent = sum(value.numel() * value.element_size() for value in weights.values())
        weights_ref = ray.put(weights)  # once; every worker reads it from the object store
        pending = {w: worker.collect.remote(weights_ref, self.places[w]) for w, worker in enumerate(self.workers)}
        parts: dict[int, SliceRollout] = {}
        deaths = dict.fromkeys(pending, 0)
        restarting_since: dict[int, float] = {}  # worker -> when it died last
        while pending:
            w, ref = next(iter(pending.items()))
            try:
                parts[w] = ray.get(ref)
                del pending[w]
            except RayActorError as error:
                if isinstance(error, ActorUnavailableError) and w in restarting_since:  # not up again yet
                    if time.monotonic() - restarting_since[w] > RESTART_WAIT_S:
                        raise RuntimeError(f"rollout worker {w} has been restarting for more than "
                                           f"{RESTART_WAIT_S:.0f} s; last: {error}") from None
                    time.sleep(RETRY_EVERY_S)
                else:  # its process died: Ray restarts it
                    deaths[w] += 1
                    if deaths[w] > RESTARTS_PER_ROLLOUT:
                        raise RuntimeError(f"rollout worker {w} (envs {self.slices[w].start}-{self.slices[w].stop - 1}) "
                                           f"died {deaths[w]} times in one rollout; last: {error}") from None
                    log.warning("rollout worker %d (envs %d-%d) died mid-rollout; Ray restarts it, its envs are "
                                "replayed and its share collected again", w, self.slices[w].start,
                                self.slices[w].stop - 1)
                    restarting_since[w] = time.monotonic()
                pending[w] = self.workers[w].collect.remote(weights_ref, self.places[w])  # waits for the restart
        for w, part in parts.items():
            if part.built and self.collected[w]:  # its process died, now or since the last rollout: rebuilt by replay
                self.restarts += 1
                if not deaths[w]:
                    log.warning("rollout worker %d was restarted since the last rollout; its envs were replayed", w)
            self.collected[w] = True
        rollouts = [parts[w].rollout for w in range(len(self.workers))]
        self.places = [parts[w].progress for w in range(len(self.workers))]
        self.bytes_received = sum(r.nbytes() for r in rollouts)
        self.worker_seconds = [parts[w].seconds for w in range(len(self.workers))]
        return Rollout.join(rollouts)

    def progress(self) -> EpisodeProgress:
        return EpisodeProgress.join([EpisodeProgress.start(len(s)) if place is None else place
                                     for s, place in zip(self.slices, self.places)])

    def close(self) -> None:
        """Stop the workers (and the local Ray this collector started)."""
        for worker in getattr(self, "workers", []):
            ray.kill(worker, no_restart=True)
        self.workers = []
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
        self.started_ray = False

