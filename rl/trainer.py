"""The PPO training loop: rollouts, GAE, updates, logging, checkpoints, exact resumption."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from config import Config, load_config, save_config
from env.greedy_value import GREEDY_VALUE
from policy import PolicyNet
from rl.buffer import Rollout
from rl.checkpoint import checkpoint_path, latest_checkpoint, load_checkpoint, save_checkpoint
from rl.envs import make_env, make_envs, restore_envs
from rl.evaluation import greedy_actor, run_episode
from rl.gae import compute_gae
from rl.ppo import masked_policy, ppo_update
from rl.seeding import eval_episode_seed
from viz.heatmaps import attention_heatmaps


def resolve_device(name: str) -> torch.device:
    """``auto`` is CUDA when present, else the CPU; asking for CUDA without one is an error."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("run.device=cuda but no CUDA device is available; use run.device=auto or cpu")
    return torch.device(name)


def hyperparameter_table(config: Config) -> str:
    rows = []
    for section, values in asdict(config).items():
        items = values.items() if isinstance(values, dict) else [("", values)]
        rows += [f"|{section}{'.' + key if key else ''}|{value}|" for key, value in items]
    return "|key|value|\n|-|-|\n" + "\n".join(rows)


class Trainer:
    """Owns the envs, the policy, the optimizer and the counters of one run.

    ``Trainer(config, run_dir).train()`` starts a run; ``Trainer.resume(run_dir).train()``
    continues one from its latest checkpoint on the same trajectory it would have followed.
    """

    def __init__(self, config: Config, run_dir: Path, state: dict | None = None):
        self.config, self.run_dir = config, Path(run_dir)
        if config.run.torch_threads:
            torch.set_num_threads(config.run.torch_threads)
        self.device = resolve_device(config.run.device)
        torch.manual_seed(config.seed)
        self.policy = PolicyNet(config.model).to(self.device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.ppo.learning_rate, eps=1e-5)
        greedy_rollout = config.ppo.gae_values == "greedy_rollout"
        self.envs = make_envs(config.env, config.seed, greedy_value=greedy_rollout)
        E = config.env.num_envs
        self.update, self.global_step = 0, 0
        self.episodes, self.actions = [0] * E, [[] for _ in range(E)]  # per env: episode number, actions since reset
        self.recent = deque(maxlen=20)  # the last finished episodes' infos: success rate and progress bar
        self.episode_return, self.episode_length = np.zeros(E), np.zeros(E, dtype=int)
        self.resumed_at = None if state is None else state["global_step"]
        if state is None:
            self.obs, _ = self.envs.reset()
        else:
            self._load_state(state)
        # W(s) of each env's current state [E] when GAE bootstraps from greedy rollouts, else None.
        self.greedy_value = np.array(self.envs.get_attr(GREEDY_VALUE)) if greedy_rollout else None

    @classmethod
    def create(cls, config: Config, run_dir: Path) -> "Trainer":
        run_dir = Path(run_dir)
        if latest_checkpoint(run_dir) is not None:
            raise FileExistsError(f"{run_dir} already holds a run; continue it with --resume {run_dir} or pick another run.name")
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(config, run_dir / "config.yaml")
        return cls(config, run_dir)

    @classmethod
    def resume(cls, run_dir: Path) -> "Trainer":
        run_dir = Path(run_dir)
        path = latest_checkpoint(run_dir)
        if path is None:
            raise FileNotFoundError(f"no checkpoint_*.pt in {run_dir}: nothing to resume")
        return cls(load_config(run_dir / "config.yaml"), run_dir, state=load_checkpoint(path))

    # ------------------------------------------------------------------ checkpoints
    def _state(self) -> dict:
        return {
            "model": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "update": self.update,
            "global_step": self.global_step,
            "torch_rng": torch.get_rng_state(),
            "episodes": list(self.episodes),
            "actions": [list(a) for a in self.actions],
            "episode_return": self.episode_return.tolist(),
            "episode_length": self.episode_length.tolist(),
            "recent": list(self.recent),
        }

    def _load_state(self, state: dict) -> None:
        self.policy.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.update, self.global_step = state["update"], state["global_step"]
        torch.set_rng_state(state["torch_rng"])
        self.episodes, self.actions = list(state["episodes"]), [list(a) for a in state["actions"]]
        self.episode_return, self.episode_length = np.array(state["episode_return"]), np.array(state["episode_length"])
        self.recent.extend(state["recent"])
        self.obs = restore_envs(self.envs, self.episodes, self.actions)

    def save(self) -> Path:
        path = checkpoint_path(self.run_dir, self.update)
        save_checkpoint(self._state(), path)
        return path

    # ------------------------------------------------------------------ the loop
    def train(self, max_updates: int | None = None, progress: bool = True) -> None:
        """Run updates until ``config.num_updates`` (or ``max_updates`` more); ``progress`` shows a bar."""
        config, cfg = self.config, self.config.ppo
        last = config.num_updates if max_updates is None else min(config.num_updates, self.update + max_updates)
        # After a kill, events logged past the last checkpoint would repeat: purge_step drops them.
        writer = SummaryWriter(str(self.run_dir), purge_step=self.resumed_at)
        self.resumed_at = None  # a later train() call on this trainer purges nothing
        if self.update == 0:
            writer.add_text("hyperparameters", hyperparameter_table(config))
        start_time, start_step = time.time(), self.global_step
        bar = tqdm(total=config.num_updates * config.batch_size, initial=self.global_step, unit="step",
                   dynamic_ncols=True, desc="training", disable=not progress)
        try:
            while self.update < last:
                if cfg.anneal_lr:
                    lr = cfg.learning_rate * (1.0 - self.update / config.num_updates)
                    for group in self.optimizer.param_groups:
                        group["lr"] = lr
                rollout, next_value = self._collect(writer)
                values, final_values = rollout.values, rollout.final_values
                if self.greedy_value is not None:
                    values, final_values = rollout.greedy_values, rollout.greedy_final_values
                    next_value = torch.as_tensor(self.greedy_value, dtype=torch.float32)
                advantages, returns = compute_gae(rollout.rewards, values, rollout.terminated, rollout.truncated,
                                                  final_values, next_value, cfg.gamma, cfg.gae_lambda)
                self.policy.train()
                stats = ppo_update(self.policy, self.optimizer, rollout, advantages, returns, cfg, self.device,
                                   self.global_step)
                self.update += 1
                sps = (self.global_step - start_step) / max(time.time() - start_time, 1e-9)
                for key, value in stats.items():
                    writer.add_scalar(f"losses/{key}", value, self.global_step)
                writer.add_scalar("charts/learning_rate", self.optimizer.param_groups[0]["lr"], self.global_step)
                writer.add_scalar("charts/SPS", sps, self.global_step)
                if self.update % config.run.checkpoint_every == 0 or self.update == last:
                    self.save()
                if config.run.image_every and (self.update % config.run.image_every == 0 or self.update == 1):
                    self._log_images(writer)
                bar.update(config.batch_size)
                coverage = np.mean([i["coverage"] for i in self.recent]) if self.recent else float("nan")
                bar.set_postfix(update=f"{self.update}/{config.num_updates}", SPS=f"{sps:.0f}", coverage=f"{coverage:.2f}")
        finally:
            bar.close()
            writer.close()
            self.envs.close()

    def _collect(self, writer: SummaryWriter) -> tuple[Rollout, torch.Tensor]:
        """One rollout of ``num_steps`` steps from every env, with per-episode logging."""
        T, E = self.config.ppo.num_steps, self.config.env.num_envs
        rollout = Rollout(T, E)
        self.policy.eval()
        for t in range(T):
            with torch.no_grad():
                logits, value = self.policy(self.obs)
                dist = masked_policy(logits)
                action = dist.sample()
            rollout.store_obs(t, self.obs)
            if self.greedy_value is not None:
                rollout.greedy_values[t] = torch.as_tensor(self.greedy_value)
            rollout.actions[t], rollout.logprobs[t], rollout.values[t] = action.cpu(), dist.log_prob(action).cpu(), value.cpu()
            self.obs, reward, terminated, truncated, info = self.envs.step(action.cpu().numpy())
            self.global_step += E
            rollout.rewards[t] = torch.as_tensor(reward, dtype=torch.float32)
            rollout.terminated[t], rollout.truncated[t] = torch.as_tensor(terminated), torch.as_tensor(truncated)
            if truncated.any():
                rollout.final_values[t] = self._final_values(info, truncated)
            if self.greedy_value is not None:
                self.greedy_value = info[GREEDY_VALUE]  # after an autoreset: W of the new episode's start
                if truncated.any():
                    rollout.greedy_final_values[t] = torch.as_tensor(np.where(truncated, info["final_info"][GREEDY_VALUE], 0.0))
            self._track_episodes(action.tolist(), reward, terminated, truncated, info, writer)
        with torch.no_grad():
            next_value = self.policy(self.obs)[1].cpu()
        return rollout, next_value

    def _final_values(self, info: dict, truncated: np.ndarray) -> torch.Tensor:
        """V(final observation) of each truncated episode (0 for the other envs)."""
        index = np.flatnonzero(truncated)
        final = {key: np.stack([info["final_obs"][i][key] for i in index]) for key in self.obs}
        values = torch.zeros(len(truncated))
        with torch.no_grad():
            values[index] = self.policy(final)[1].cpu()
        return values

    def _track_episodes(self, actions, reward, terminated, truncated, info, writer) -> None:
        self.episode_return += reward
        self.episode_length += 1
        for i, action in enumerate(actions):
            if not (terminated[i] or truncated[i]):
                self.actions[i].append(action)
                continue
            final = info["final_info"]
            episode_info = {"coverage": float(final["coverage"][i]), "travel_distance": float(final["travel_distance"][i]),
                            "success": bool(terminated[i])}
            self.recent.append(episode_info)
            writer.add_scalar("charts/episodic_return", self.episode_return[i], self.global_step)
            writer.add_scalar("charts/episodic_length", self.episode_length[i], self.global_step)
            writer.add_scalar("charts/coverage", episode_info["coverage"], self.global_step)
            writer.add_scalar("charts/travel_distance", episode_info["travel_distance"], self.global_step)
            writer.add_scalar("charts/success_rate", np.mean([e["success"] for e in self.recent]), self.global_step)
            self.episode_return[i], self.episode_length[i] = 0.0, 0
            self.episodes[i] += 1
            self.actions[i] = []

    def _log_images(self, writer: SummaryWriter) -> None:
        """A greedy episode on a held-out map, and the attention of its last state."""
        env = make_env(self.config.env, render_mode="rgb_array")
        self.policy.eval()
        actor, seen = greedy_actor(self.policy), []

        def act(obs: dict, unwrapped: gym.Env) -> int:
            seen.append(obs)
            return actor(obs, unwrapped)

        run_episode(env, act, eval_episode_seed(self.config.seed, 0))
        writer.add_image("images/episode", env.render(), self.global_step, dataformats="HWC")
        obs = seen[-1]  # the last state the policy acted in
        with torch.no_grad():
            *_, attention = self.policy(obs, return_attention=True)
        heads = attention["encoder"][-1][0].cpu().numpy()
        writer.add_image("images/attention", attention_heatmaps(heads, obs["node_mask"], "last encoder layer"),
                         self.global_step, dataformats="HWC")
        env.close()
