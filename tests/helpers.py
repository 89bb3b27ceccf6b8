"""Helpers shared by several test modules (test modules never import each other)."""
from __future__ import annotations

import copy
import os
import signal
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from bench.synthetic import random_graph
from config import EnvConfig, load_config
from env.baselines import greedy
from env.frontiers import frontier_mask
from env.geometry import line_cells
from env.graph import ViewpointGraph
from env.grid_explore import GridExploreEnv
from env.lattice import build_lattice, n_steps_for
from env.observation import ACTION_MASK, CURRENT_INDEX, N_NODE_FEATURES, NEIGHBORS, NODE_FEATURE_NAMES, NODE_FEATURES
from env.sensing import FREE, OCCUPIED
from learning.envs import with_env_overrides
from planner.predictor import MapPredictor
from tests.map_folders import write_maps

HEAD_COUNTS = [1, 2, 4, 8]
ROOT = Path(__file__).parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
GRAPH_PAD = 6
"""Wall cells around a hand-built belief, as the env pads its maps."""
N_MAX, K = 12, 5
"""Padded node count and neighbour slots of ``observations``."""


_SHARED_RAY: dict[str, str] = {}
"""The node id of the local Ray ``shared_local_ray`` started in this test process."""


def _on_shared_ray() -> bool:
    """Whether this process is connected to the Ray ``shared_local_ray`` started."""
    import ray

    return ray.is_initialized() and ray.get_runtime_context().get_node_id() == _SHARED_RAY.get("node")


def shared_local_ray() -> None:
    """Make sure this test process is connected to its shared local Ray (2 CPUs, this machine only).

    The first test that asks starts it, and later ones find it running: starting a Ray costs about
    5 s on 2 cores, and its pooled workers keep the project's modules imported from one task to the
    next. A test that shut it down or started another (a simulated cluster) leaves the next one a
    fresh start. Never stopped by a test: Ray stops it when the test process exits. "local" means a
    Ray of this process's own, never the simulated cluster another test process may be running.
    """
    import ray

    if _on_shared_ray():
        return
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning")
    _SHARED_RAY["node"] = ray.get_runtime_context().get_node_id()


def release_shared_local_ray(wait_s: float = 10) -> None:
    """After a test on the shared Ray: wait until its 2 CPUs are free again, or stop it if they are
    not within ``wait_s`` (an actor or task the test left behind), so that the next test does not
    wait for them for ever."""
    import ray

    if not _on_shared_ray():
        return
    deadline = time.time() + wait_s
    while ray.available_resources().get("CPU", 0) < 2:
        if time.time() > deadline:
            ray.shutdown()
            return
        time.sleep(0.05)


def agent_without_planner(path: Path) -> Path:
    """``pretrained/default.pt``'s agent, written to ``path`` without the map predictor it carries:
    a pretrained file with no planner."""
    state = torch.load(ROOT / "pretrained" / "default.pt", weights_only=True)
    del state["planner"]
    torch.save(state, path)
    return path


def smoke_config(run_dir, *overrides):
    """``configs/smoke.yaml`` writing into ``run_dir``, with dotted overrides."""
    return load_config(SMOKE, [f"run.run_dir={run_dir}", *overrides])


ROOM_MAPS = {f"{i}.png": (20, 22) for i in range(12)}
"""Twelve 20 x 22 walled rooms: enough maps for the map predictor to hold every tenth out."""


def room_folder_env(tmp_path: Path) -> EnvConfig:
    """The smoke config's env on a folder of ``ROOM_MAPS`` written under ``tmp_path`` (60 steps at most)."""
    folder = write_maps(tmp_path / "maps", ROOM_MAPS)
    return with_env_overrides(load_config(SMOKE).env, [f"map_dir={folder}", "max_steps=60"])


def viewpoint_graph(belief: np.ndarray, start=(5, 5), spacing=4, k=9, n_max=50, utility_range=4) -> ViewpointGraph:
    """A graph over the unpadded ``belief`` (walls outside), updated once; its true map has
    walls where the belief knows them, so routes may run through the belief's unknown cells."""
    padded = np.pad(belief, GRAPH_PAD, constant_values=OCCUPIED)
    lattice = build_lattice(belief == OCCUPIED, start, spacing, n_steps_for(k), GRAPH_PAD)
    graph = ViewpointGraph(lattice, height=belief.shape[0], width=belief.shape[1],
                           stride=belief.shape[1] + 2 * GRAPH_PAD, spacing=spacing, k=k, n_max=n_max,
                           utility_range=utility_range)
    graph.update(padded.ravel(), frontier_mask(padded).ravel())
    return graph


def hop_length_by_hand(env, node: int, slot: int) -> float:
    """The travel of the hop from ``node`` through ``slot``, from its route's cells alone: the
    straight distance between its ends when the route is their segment (its cells are the
    segment's centre cells, from either end, and it covers no wall), else the sum of its unit and diagonal steps."""
    cells = np.array(env.route_cells(env.graph.sweep_positions(node, slot)))
    start, end = cells[0], cells[-1]
    covered = start + line_cells(*(end - start).tolist())
    def centre_line(a, b):  # one cell per unit step along the longer axis, halves away from a
        n = np.abs(b - a).max()
        if n == 0:  # a route that ends where it starts (two approach nodes on one cell): no segment
            return a[None]
        return a + np.array([[int(np.floor(t * d / n + 0.5)) if d >= 0 else -int(np.floor(-t * d / n + 0.5))
                              for d in b - a] for t in range(n + 1)])

    on_line = np.array_equal(centre_line(start, end), cells) or np.array_equal(centre_line(end, start)[::-1], cells)
    if not env.grid_map.occupied[covered[:, 0], covered[:, 1]].any() and on_line:
        return float(np.hypot(*(end - start)))
    return float(np.hypot(*np.diff(cells, axis=0).T).sum())


def all_pairs_hop_distances(obs: dict, env) -> np.ndarray:
    """Floyd-Warshall over the observation's neighbour table, hops measured by
    :func:`hop_length_by_hand`: [n, n] shortest travel in cells (inf where unreachable)."""
    n = env.graph.n_nodes
    dist = np.full((n, n), np.inf)
    np.fill_diagonal(dist, 0.0)
    for node in range(n):
        for slot, other in enumerate(obs[NEIGHBORS][node]):
            if slot and other >= 0:
                dist[node, other] = hop_length_by_hand(env, node, slot)
    for via in range(n):
        dist = np.minimum(dist, dist[:, via : via + 1] + dist[via : via + 1, :])
    return dist


def walled_room(size=11) -> np.ndarray:
    """A free ``size`` x ``size`` belief with a wall around its edge."""
    belief = np.full((size, size), FREE, dtype=np.int8)
    belief[[0, -1], :] = belief[:, [0, -1]] = OCCUPIED
    return belief


def greedy_return_by_hand(env, obs, terminated=False) -> float:
    """Greedy from here to the end in a plain deep copy, its moves counted from here."""
    world, total = copy.deepcopy(env.unwrapped), 0.0
    world.episode_over, world.time_limit_ends_episode = False, False  # play on past a time limit's cut
    for _ in range(0 if terminated else world.config.max_steps):
        obs, reward, terminated, *_ = world.step(greedy(obs, world))
        total += reward
        if world.episode_over:  # terminated, or stuck (the env's Termination)
            break
    return total


def observations(B, seed=0):
    """A batch of B numpy observations in the env layout ([N_MAX] nodes, K slots), each valid for
    ``env.observation.observation_space(N_MAX, K)``."""
    neighbors, node_mask = random_graph(B, N_MAX, K, seed)
    rng = np.random.default_rng(seed)
    current = np.array([rng.integers(0, int(m.sum())) for m in node_mask])
    batch = np.arange(B)
    return {
        "node_features": rng.uniform(-1, 1, (B, N_MAX, N_NODE_FEATURES)).astype(np.float32),
        "node_mask": node_mask.numpy().astype(np.int8),
        "neighbors": neighbors.numpy(),
        "current_index": current.astype(np.int64),
        "action_mask": (neighbors.numpy()[batch, current] >= 0).astype(np.int8),
    }


def assert_same_rollout(a, b) -> None:
    """Two ``learning.buffer.Rollout``s equal bit for bit: every tensor, observation and finished episode."""
    for name in a.TENSORS:
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.obs.keys() == b.obs.keys()
    for key in a.obs:
        assert torch.equal(a.obs[key], b.obs[key]), key
    assert a.episodes == b.episodes


def kill_worker_mid_collect(collector, worker: int) -> threading.Thread:
    """SIGKILL the process of ``collector``'s Ray worker ``worker`` as soon as it is collecting a
    rollout, from a started thread (join it). Ray titles an actor's process
    ``ray::RolloutWorker.collect`` while that method runs, so the kill lands mid-rollout however
    slow or loaded the machine is (a delay measured on an earlier rollout may miss it)."""
    import ray  # only the Ray tests need it
    _, pid = ray.get(collector.workers[worker].where.remote())
    title = Path(f"/proc/{pid}/cmdline")

    def kill_when_collecting() -> None:
        deadline = time.time() + 300
        while not title.read_bytes().split(b"\0")[0].endswith(b".collect"):
            if time.time() > deadline:
                return  # never collected: the test's restart count says so
            time.sleep(0.001)
        os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=kill_when_collecting, daemon=True)
    thread.start()
    return thread


GUIDEPOST = NODE_FEATURE_NAMES.index("guidepost")


def towards_guidepost(obs: dict) -> int:
    """A player of one observation alone: the valid slot whose node has the largest guidepost
    feature (ties: the lowest slot)."""
    targets = obs[NEIGHBORS][int(obs[CURRENT_INDEX])]
    score = np.where(obs[ACTION_MASK] == 1, obs[NODE_FEATURES][targets, GUIDEPOST], -np.inf)
    return int(np.argmax(score))


def guidepost_continuation(batch: dict) -> np.ndarray:
    """``towards_guidepost`` row by row, as an ``planner.lookahead.Continuation`` (batched observations -> slots)."""
    return np.array([towards_guidepost({key: value[i] for key, value in batch.items()})
                     for i in range(len(batch[CURRENT_INDEX]))])


def free_everywhere_predictor():
    """A ``MapPredictor`` that guesses every unknown cell free: an opening has slivers to wall."""
    net = MapPredictor(width=4)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
        net.out.bias.fill_(-5.0)
    return net


def random_valid_action(obs, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(obs[ACTION_MASK])))


def mid_episode(max_steps: int) -> tuple[GridExploreEnv, dict]:
    """An unwrapped env three random moves into an episode, and its observation."""
    env = gym.make("GridExplore-v0", map_size=24, max_steps=max_steps).unwrapped
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs, *_ = env.step(random_valid_action(obs, rng))
    return env, obs


def printed_by(module, argv: list[str], monkeypatch, capsys) -> str:
    """What the program ``module`` (a benchmark or an experiment whose ``main()`` reads
    ``sys.argv``) prints to stdout when run with ``argv``."""
    monkeypatch.setattr(sys, "argv", [module.__name__, *argv])
    module.main()
    return capsys.readouterr().out
