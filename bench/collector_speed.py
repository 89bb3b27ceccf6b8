"""Rollout collection on worker processes and Ray actors next to the in-process collector, and one update's time.

    python -m bench.collector_speed [--config configs/default.yaml] [--workers 1 2] [--rounds 3] [key=value ...]

For each collector (in process, ``sync``; for each ``--workers`` count, local worker processes,
``env.vector: processes``, and Ray actors on a local Ray), one warm-up rollout, then ``--rounds``
rounds in which the collectors take turns (the machine is noisy: alternating spreads the noise
over all of them). Prints per collector the median rollout time, env steps/s and the ratio to the
in-process collector; for workers also the time spent outside the slowest worker's own
collection (sending the weights, gathering and joining the slices) and the spread of the
workers' own times (the learner waits for the slowest); for Ray the bytes each update moves
(weights out once into the object store, rollouts back); and the learner's update time on the
same rollout, so that rollout time / update time says how far more workers can go before the
learner is the bottleneck. Time nothing else beside it. Ctrl-C or SIGTERM stops it with no
figures, its env processes, worker processes and Ray actors closed (exit code 130).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from cluster.connect import ray_session
from cluster.rollout_actors import RayCollector
from config import load_config
from learning.collector import VectorEnvCollector
from learning.gae import compute_gae
from learning.ppo import adam, ppo_update
from learning.worker_processes import ProcessCollector
from policy import PolicyNet, build_policy


def update_seconds(config, policy: PolicyNet, rollout) -> float:
    """One PPO update (GAE and the minibatch epochs) on ``rollout``, on a copy of the policy."""
    learner = build_policy(config)
    learner.load_state_dict(policy.state_dict())
    optimizer = adam(learner.parameters(), config.ppo.learning_rate)
    start = time.perf_counter()
    advantages, returns = compute_gae(rollout.rewards, rollout.bootstrap_values, rollout.terminated,
                                      rollout.truncated, rollout.final_bootstrap_values,
                                      rollout.next_bootstrap_values, config.ppo.gamma, config.ppo.gae_lambda)
    learner.train()
    ppo_update(learner, optimizer, rollout, advantages, returns, config.ppo, 0)
    return time.perf_counter() - start


def time_collectors(config, policy: PolicyNet, workers_counts: list[int], rounds: int, config_path: str,
                    overrides: list[str]):
    """Rollout times of every collector, taking turns; update times; the last Ray collector."""
    collectors = {"in process": VectorEnvCollector(config)}
    try:
        for workers in workers_counts:
            name = f"{workers} worker{'s' * (workers > 1)}"
            collectors[f"processes, {name}"] = ProcessCollector(
                load_config(config_path, [*overrides, "env.vector=processes", f"env.workers={workers}"]))
            collectors[f"ray, {name}"] = RayCollector(
                load_config(config_path, [*overrides, "env.vector=ray", f"env.workers={workers}"]))
        for collector in collectors.values():
            last = collector.collect(policy)  # warm-up: workers started, envs reset
        seconds = {name: [] for name in collectors}
        outside = {name: [] for name in collectors}  # the wait beyond the slowest worker's own collection
        spread = {name: [] for name in collectors}  # the slowest worker's own time less the fastest's
        for _ in range(rounds):
            for name, collector in collectors.items():
                start = time.perf_counter()
                collector.collect(policy)
                seconds[name].append(time.perf_counter() - start)
                if hasattr(collector, "worker_seconds"):
                    outside[name].append(seconds[name][-1] - max(collector.worker_seconds))
                    spread[name].append(max(collector.worker_seconds) - min(collector.worker_seconds))
        updates = [update_seconds(config, policy, last) for _ in range(rounds)]
    finally:  # the env processes and Ray actors end with the benchmark, however it ends
        for collector in collectors.values():
            collector.close()
    return seconds, outside, spread, updates, collectors[list(collectors)[-1]]


def report(config, config_path: str, overrides: list[str], rounds: int, seconds: dict, outside: dict, spread: dict,
           updates: list[float], ray_collector: RayCollector) -> None:
    steps = config.batch_size
    base = statistics.median(seconds["in process"])
    update = statistics.median(updates)
    print(f"{' '.join([config_path, *overrides])}: {config.env.num_envs} envs x {config.ppo.num_steps} steps = "
          f"{steps} steps per rollout, {rounds} rounds, medians")
    print("| collector | rollout (s) | of which transfer (s) | workers' spread (s) | env steps/s | vs in process | "
          "rollout / update |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, values in seconds.items():
        median = statistics.median(values)
        transfer, gap = (f"{statistics.median(x[name]):.3f}" if x[name] else "-" for x in (outside, spread))
        print(f"| {name} | {median:.2f} | {transfer} | {gap} | {steps / median:.0f} | {base / median:.2f}x | "
              f"{median / update:.2f} |")
    print(f"update (GAE + {config.ppo.update_epochs} epochs of {config.ppo.num_minibatches} minibatches) "
          f"on the learner: {update:.2f} s")
    print(f"per update: weights out {ray_collector.bytes_sent / 1e6:.2f} MB (once, into the object store); "
          f"rollouts back {ray_collector.bytes_received / 1e6:.2f} MB in all")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config, for every collector")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.overrides)
    torch.manual_seed(0)
    policy = build_policy(config)
    # Every collector's workers exist at once but only one collector runs at a time: reserve a
    # logical CPU for each worker, whatever the machine has.
    try:
        with ray_session(num_cpus=sum(args.workers)):  # in it SIGTERM raises KeyboardInterrupt, as Ctrl-C
            seconds, outside, spread, updates, last_ray = time_collectors(config, policy, args.workers, args.rounds,
                                                                          args.config, args.overrides)
    except KeyboardInterrupt:
        print("collector_speed: stopped before its rounds ended; no figures", file=sys.stderr)
        return 130
    report(config, args.config, args.overrides, args.rounds, seconds, outside, spread, updates, last_ray)
    return 0


if __name__ == "__main__":
    sys.exit(main())
