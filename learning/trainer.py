"""The PPO training loop: collect -> GAE -> update -> log, with checkpoints and exact resumption."""
from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from config import Config, ConfigError, flat_settings, load_run_config, save_config
from env.episode import run_episode
from graph_batch import argmax_actor, collate
from learning import tags
from learning.buffer import Rollout
from learning.choose_collector import check_collector_settings, make_collector
from learning.collector import Collector
from learning.envs import check_env_config, make_env
from learning.gae import compute_gae
from learning.ppo import adam, check_finite_weights, ppo_update
from learning.progress import EpisodeProgress
from policy import build_policy
from run.checkpoint import (
    checkpoint_path,
    checkpoints,
    latest_checkpoint,
    load_latest_readable,
    load_model_weights,
    save_checkpoint,
)
from run.interrupt import StopOnSignal, Stopped
from run.lock import RunLock
from run.pretrained import load_initial_weights
from run.seeding import eval_episode_seed

AttentionPainter = Callable[[np.ndarray, np.ndarray, str], np.ndarray]
"""``paint(weights [H,N,N], node_mask [N], title) -> RGB image``, e.g. ``viz.heatmaps.attention_heatmaps``."""


def learner_device(config: Config) -> torch.device:
    """``run.device`` resolved: ``auto`` is CUDA when present, else the CPU. ``ConfigError`` for
    CUDA asked for without one."""
    name = config.run.device
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("run.device=cuda but no CUDA device is available; use run.device=auto or cpu")
    return torch.device(name)


def hyperparameter_table(config: Config) -> str:
    rows = [f"|{key}|{value}|" for key, value in flat_settings(config).items()]
    return "|key|value|\n|-|-|\n" + "\n".join(rows)


class Trainer:
    """Owns the policy, the optimizer, the collector and the counters of one run.

    ``Trainer.create(config, run_dir).train()`` starts a run; ``Trainer.resume(run_dir).train()``
    continues one from its latest checkpoint on the same trajectory it would have followed.
    ``paint_attention`` draws the ``images/attention`` picture (``train.py`` passes
    ``viz.heatmaps.attention_heatmaps``); without it only ``images/episode`` is logged.
    """

    def __init__(self, config: Config, run_dir: Path, state: dict | None = None,
                 paint_attention: AttentionPainter | None = None, state_path: Path | None = None,
                 lock: RunLock | None = None):
        self.config, self.run_dir, self.paint_attention = config, Path(run_dir), paint_attention
        self.lock = lock or RunLock(self.run_dir).acquire()  # held until train() ends or close()
        try:
            self._build(state, state_path)
        except BaseException:
            self.lock.release()
            raise

    def _build(self, state: dict | None, state_path: Path | None) -> None:
        config = self.config
        if config.run.torch_threads:
            torch.set_num_threads(config.run.torch_threads)
        self.device = learner_device(config)
        torch.manual_seed(config.seed)
        self.policy = build_policy(config).to(self.device)
        self.optimizer = adam(self.policy.parameters(), config.ppo.learning_rate)
        self.update, self.global_step = 0, 0
        self.saved_update: int | None = None  # the update the newest checkpoint on disk holds
        self.recent: deque[dict] = deque(maxlen=20)  # the last finished episodes: success rate and progress bar
        self.resumed_at = None if state is None else state["global_step"]
        progress = None
        if state is not None:
            self._load_state(state, state_path or self.run_dir)
            progress = EpisodeProgress(state["episodes"], state["actions"], state["episode_return"],
                                       state["episode_length"])
        elif config.run.init_from:
            load_initial_weights(self.policy, config)
        self.collector: Collector = make_collector(config, progress)

    @classmethod
    def create(cls, config: Config, run_dir: Path, paint_attention: AttentionPainter | None = None) -> "Trainer":
        run_dir = Path(run_dir)
        learner_device(config)  # refuse a missing device, a bad env or cluster before writing anything
        check_env_config(config.env)
        if config.run.init_from:  # weights that are not there, or do not fit: refused before writing
            load_initial_weights(build_policy(config), config)
        check_collector_settings(config)
        if latest_checkpoint(run_dir) is not None:
            raise FileExistsError(f"{run_dir} already holds a run; continue it with --resume {run_dir} or pick another run.name")
        lock = RunLock(run_dir).acquire()  # before writing: a second training here is refused
        try:
            save_config(config, run_dir / "config.yaml")
        except BaseException:
            lock.release()
            raise
        return cls(config, run_dir, paint_attention=paint_attention, lock=lock)

    @classmethod
    def resume(cls, run_dir: Path, paint_attention: AttentionPainter | None = None) -> "Trainer":
        run_dir = Path(run_dir)
        lock = RunLock(run_dir).acquire() if run_dir.is_dir() else None
        try:
            path, state, skipped = load_latest_readable(run_dir)
            config = load_run_config(run_dir / "config.yaml")
            check_env_config(config.env)  # e.g. a map_dir whose files changed since: refused now, named
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        for reason in skipped:  # a newer checkpoint that does not load is passed over, loudly
            print(f"warning: {reason}; skipped", file=sys.stderr)
        if skipped:
            print(f"resuming from {path}", file=sys.stderr)
        return cls(config, run_dir, state=state, paint_attention=paint_attention, state_path=path, lock=lock)

    # ------------------------------------------------------------------ the loop
    def train(self, max_updates: int | None = None, progress: bool = True) -> Stopped | None:
        """Run updates until ``config.num_updates`` (or ``max_updates`` more); ``progress`` shows a bar.

        Returns None, or a ``Stopped`` when a signal (SIGINT, SIGTERM) ended it early: the run then
        ends after the update in progress, whose checkpoint it has written (``run/interrupt.py``).
        """
        config, cfg = self.config, self.config.ppo
        last = config.num_updates if max_updates is None else min(config.num_updates, self.update + max_updates)
        if self.update >= last:  # a finished run: no events file to open, none of its history to purge
            self.close()
            return None
        # After a kill, events logged past the checkpoint's step would repeat: purge them. The
        # checkpointed update logged its own scalars at its global step, so the purge starts after it.
        writer = SummaryWriter(str(self.run_dir), purge_step=None if self.resumed_at is None else self.resumed_at + 1)
        self.resumed_at = None  # a later train() call on this trainer purges nothing
        if self.update == 0:
            writer.add_text(tags.HYPERPARAMETERS, hyperparameter_table(config))
        start_time, start_step = time.time(), self.global_step
        bar = tqdm(total=config.num_updates * config.batch_size, initial=self.global_step, unit="step",
                   dynamic_ncols=True, desc="training", disable=not progress)
        with StopOnSignal() as stop:
            try:
                while self.update < last and not stop.requested:
                    if cfg.anneal_lr:
                        self.optimizer.param_groups[0]["lr"] = cfg.learning_rate * (1.0 - self.update / config.num_updates)

                    started = time.perf_counter()
                    rollout = self.collector.collect(self.policy)  # 1. collect T x E steps
                    collected = time.perf_counter()
                    step_before, self.global_step = self.global_step, self.global_step + config.batch_size
                    advantages, returns = compute_gae(  # 2. GAE over the chosen bootstrap values
                        rollout.rewards, rollout.bootstrap_values, rollout.terminated, rollout.truncated,
                        rollout.final_bootstrap_values, rollout.next_bootstrap_values, cfg.gamma, cfg.gae_lambda)
                    self.policy.train()
                    stats = ppo_update(self.policy, self.optimizer, rollout, advantages, returns, cfg,  # 3. update
                                       self.global_step)
                    self.update += 1
                    check_finite_weights(self.policy, self.global_step)  # before they reach a checkpoint

                    updated = time.perf_counter()
                    sps = (self.global_step - start_step) / max(time.time() - start_time, 1e-9)  # 4. log
                    speed = {tags.SPS: sps, tags.COLLECTION_SECONDS: collected - started,
                             tags.UPDATE_SECONDS: updated - collected}
                    self._log(writer, rollout, step_before, stats, speed)
                    if self.update % config.run.checkpoint_every == 0 or self.update == last:
                        self.save()
                    if config.run.image_every and not stop.requested and (
                            self.update % config.run.image_every == 0 or self.update == 1):
                        self._log_images(writer)
                    bar.update(config.batch_size)
                    coverage = np.mean([e["coverage"] for e in self.recent]) if self.recent else float("nan")
                    bar.set_postfix(update=f"{self.update}/{config.num_updates}", SPS=f"{sps:.0f}", coverage=f"{coverage:.2f}")
                if stop.requested:  # whenever in the loop the signal came: the last finished update is kept
                    return Stopped(stop.requested, self.update, self._saved_now())
            finally:
                bar.close()
                writer.close()
                self.close()
        return None

    def close(self) -> None:
        """Close the envs and release the run folder (``train()`` does this when it ends)."""
        self.collector.close()
        self.lock.release()

    def _log(self, writer: SummaryWriter, rollout: Rollout, step_before: int, stats: dict[str, float],
             speed: dict[str, float]) -> None:
        """The rollout's finished episodes at the global step each ended, then the update's losses
        and ``speed``'s scalars (SPS, the seconds of collection and update) by tag."""
        for episode in rollout.episodes:
            step = step_before + (episode.step + 1) * rollout.num_envs
            self.recent.append({"coverage": episode.coverage, "travel_distance": episode.travel_distance,
                                "success": episode.success})
            writer.add_scalar(tags.EPISODIC_RETURN, episode.episodic_return, step)
            writer.add_scalar(tags.EPISODIC_LENGTH, episode.episodic_length, step)
            writer.add_scalar(tags.COVERAGE, episode.coverage, step)
            writer.add_scalar(tags.TRAVEL_DISTANCE, episode.travel_distance, step)
            writer.add_scalar(tags.SUCCESS_RATE, np.mean([e["success"] for e in self.recent]), step)
        for key, value in stats.items():
            writer.add_scalar(tags.LOSSES + key, value, self.global_step)
        writer.add_scalar(tags.LEARNING_RATE, self.optimizer.param_groups[0]["lr"], self.global_step)
        for tag, value in speed.items():
            writer.add_scalar(tag, value, self.global_step)

    def _log_images(self, writer: SummaryWriter) -> None:
        """An argmax episode on a held-out map, and the attention of its last state."""
        env = make_env(self.config.env, render_mode="rgb_array")
        self.policy.eval()
        actor, seen = argmax_actor(self.policy), []

        def act(obs: dict, unwrapped) -> int:
            seen.append(obs)
            return actor(obs, unwrapped)

        run_episode(env, act, eval_episode_seed(self.config.seed, 0))
        writer.add_image(tags.EPISODE_IMAGE, env.render(), self.global_step, dataformats="HWC")
        env.close()
        if self.paint_attention is None:
            return
        obs = seen[-1]  # the last state the policy acted in
        with torch.no_grad():
            _, _, attention = self.policy(collate(obs, self.device), need_weights=True)
        heads = attention.encoder[-1][0].cpu().numpy()  # [H,N,N]
        writer.add_image(tags.ATTENTION_IMAGE, self.paint_attention(heads, obs["node_mask"], "last encoder layer"),
                         self.global_step, dataformats="HWC")

    # ------------------------------------------------------------------ checkpoints
    def _state(self) -> dict:
        return {
            "model": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "update": self.update,
            "global_step": self.global_step,
            "torch_rng": torch.get_rng_state(),
            **self.collector.progress().state_dict(),  # episodes, actions, episode_return, episode_length
            "recent": list(self.recent),
            "model_config": asdict(self.config.model),
        }

    def _load_state(self, state: dict, path: Path) -> None:
        load_model_weights(self.policy, state, path, asdict(self.config.model))
        self.optimizer.load_state_dict(state["optimizer"])
        self.update, self.global_step = state["update"], state["global_step"]
        self.saved_update = self.update
        torch.set_rng_state(state["torch_rng"])
        self.recent.extend(state["recent"])

    def _saved_now(self) -> Path | None:
        """The checkpoint of the last finished update, written now unless it is on disk already;
        None when no update has finished."""
        if self.update == 0:
            return None
        return checkpoint_path(self.run_dir, self.update) if self.saved_update == self.update else self.save()

    def save(self) -> Path:
        """Write this update's checkpoint, then delete those older than ``run.keep_checkpoints`` allows.

        Only checkpoints older than the one just written count: a newer one left by a resume
        that passed over it (unreadable) is neither kept in place of an older one nor deleted."""
        path = checkpoint_path(self.run_dir, self.update)
        save_checkpoint(self._state(), path)
        self.saved_update = self.update
        keep = self.config.run.keep_checkpoints
        if keep:
            found = checkpoints(self.run_dir)
            for old in found[found.index(path) + keep:]:
                old.unlink(missing_ok=True)
        return path
