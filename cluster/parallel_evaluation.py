"""Evaluation with the held-out maps split across Ray tasks: the serial results, in the serial order.

Held-out episode ``i`` has its own seed (``run.seeding.eval_episode_seed``), and with a ``map_dir``
its own map (map ``i``: ``first_episode`` carries the global index into each chunk), and the trained
policy's argmax acts through ``graph_batch.forward_each`` (one thread, one observation), so an
episode's result does not depend on which process plays it. The maps are cut into contiguous
chunks, ``TASKS_PER_WORKER`` for each of the ``workers``, one Ray task each (``num_cpus=1``), at
most ``workers`` running at a time; the progress bar moves as each finishes, and the chunks'
results are put back in episode order. The policy's weights travel through the object store, so
the workers need no access to the checkpoint file; so do ``players``, callables that make a player
from the policy in the worker (the planner layer's ``planner.actor.portable_planner``), which is
how a layer above this one plays here without this module importing it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import ray
import torch
from tqdm import tqdm

from config import EnvConfig, ModelConfig
from env.baselines import BASELINES
from env.episode import Actor, EpisodeResult
from evaluation.play import AGENT, evaluate_actors
from graph_batch import argmax_actor
from learning.collector import contiguous_slices
from policy import PolicyNet
from run.interrupt import StopOnSignal

Player = Callable[[PolicyNet], Actor]
"""Makes a player from the trained policy, in the worker that plays it."""

TASKS_PER_WORKER = 8
"""Chunks each worker's share of the maps is cut into: a long evaluation's progress bar moves every
eighth of it, for 0.4-0.5 s of set-up a chunk (the policy, the predictor and a floor-plan env;
docs/performance.md)."""

STOP_POLL_S = 0.5
"""How often, in seconds, the wait for the next chunk looks whether a ``stop`` was requested: a
chunk can take minutes, and a signal's handler only notes the request."""


@ray.remote(num_cpus=1)
def evaluate_chunk(names: list[str], model: tuple[ModelConfig, int, dict] | None, players: Mapping[str, Player],
                   env_config: EnvConfig, episodes: range, seed: int) -> dict[str, list[EpisodeResult]]:
    """``names`` (``agent``, baselines and ``players``' names) on held-out episodes ``episodes`` of ``seed``."""
    torch.set_num_threads(1)
    policy = None
    if model is not None:
        config, n_features, weights = model
        policy = PolicyNet(config, n_features)
        policy.load_state_dict(weights)
        policy.eval()
    actors = {}
    for name in names:
        if name == AGENT:
            actors[name] = argmax_actor(policy)
        elif name in players:
            actors[name] = players[name](policy)
        else:
            actors[name] = BASELINES[name]
    return evaluate_actors(actors, env_config, len(episodes), seed, progress=False,
                           first_episode=episodes.start)


def evaluate_on_ray(names: list[str], policy: PolicyNet | None, env_config: EnvConfig, episodes: int, seed: int,
                    workers: int, players: Mapping[str, Player] | None = None, stop: StopOnSignal | None = None,
                    first_episode: int = 0) -> dict[str, list[EpisodeResult]]:
    """``evaluate_actors`` over ``episodes`` held-out maps from ``first_episode`` on, in ``workers``
    Ray tasks (connect first); ``players[name](policy)`` makes player ``name`` in each task. A ``stop`` requested
    cancels the chunks in play and starts no more: the results then cover the maps of the chunks
    finished before the first one that did not (the same first maps for every actor, as
    ``evaluate_actors`` stops)."""
    model = None if policy is None else ray.put((policy.config, policy.n_node_features, {k: v.cpu() for k, v in policy.state_dict().items()}))
    carried = ray.put(dict(players or {}))
    chunks = [range(chunk.start + first_episode, chunk.stop + first_episode)
              for chunk in contiguous_slices(episodes, min(workers * TASKS_PER_WORKER, episodes))]
    waiting = iter(range(len(chunks)))
    running: dict[ray.ObjectRef, int] = {}  # a task's result -> its chunk

    def start_next() -> None:
        i = next(waiting, None)
        if i is not None:
            running[evaluate_chunk.remote(names, model, carried, env_config, chunks[i], seed)] = i

    for _ in range(workers):
        start_next()
    done: dict[int, dict[str, list[EpisodeResult]]] = {}
    with tqdm(total=episodes, unit="map", desc=f"evaluating ({workers} workers)") as bar:
        while running:
            if stop is not None and stop.requested:
                for task in running:
                    ray.cancel(task, force=True)
                break
            ready, _ = ray.wait(list(running), num_returns=1, timeout=STOP_POLL_S)
            if ready:
                i = running.pop(ready[0])
                try:
                    done[i] = ray.get(ready[0])
                except ray.exceptions.RayError:
                    if stop is None or not stop.requested:
                        raise
                    continue  # a chunk the signal reached in its worker: not finished
                bar.update(len(chunks[i]))
                start_next()
    finished = next((i for i in range(len(chunks)) if i not in done), len(chunks))  # the chunks before the first gap
    return {name: [result for i in range(finished) for result in done[i][name]] for name in names}
