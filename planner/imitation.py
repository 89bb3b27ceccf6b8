"""Imitation of the true-map lookahead, DAgger style: a start for PPO where greedy is hard to beat.

    python -m planner.imitation --config configs/dungeon.yaml --out runs/imitation [--init-from WEIGHTS]
        [--rounds 4] [--states 20000] [--epochs 3] [--validation-maps 100] [--temperature T]
        [--states-from EARLIER_OUT] [--continuation {greedy,agent}] [--reveal D] [KEY=VALUE ...]

PPO learns from one sampled move per state and that move's gain over greedy's (GAE on greedy's
value, ``learning.bootstrap``). The lookahead prices every valid move of a state on the true map
(``planner.lookahead``: C(s, a), the travel when the robot takes a and greedy finishes), for some
30 ms a state on the floor plans, computed in the env workers. Each round of this program:

1. **collect**: the current policy plays, sampling its moves, in ``env.num_envs`` envs of the
   config on its training maps; every state visited is kept with C(s, .) (DAgger: the states are
   the learner's own, the labels the oracle's);
2. **train**: ``--epochs`` passes of minibatch Adam over every state collected so far, minimising
   the policy's expected regret in node spacings, less an entropy bonus,

   .. math::

       L = \\mathbb{E}_s \\Big[ \\sum_a \\pi(a \\mid s) \\, \\frac{C(s, a) - \\min_b C(s, b)}{\\text{spacing}}
           \\Big] - c_H \\, \\mathbb{E}_s \\big[ H(\\pi(\\cdot \\mid s)) \\big]

   Its minimiser takes the move whose cost is least in expectation over the maps the
   observation allows, the best a policy that does not see the map can do; cross-entropy to the
   oracle's move would teach the move most often best instead. Its gradient for a move is
   pi(a|s) times that move's advantage, so a peaked policy hardly learns about the moves it
   rarely takes; from random weights it collapses to one move a state within the first epoch
   and stops learning (docs/results.md section 4): start it from trained weights
   (``--init-from``), or from random weights use the softmin below. ``--temperature T`` (in
   node spacings) minimises instead the cross-entropy to the softmin of the regrets,

   .. math::

       L_T = -\\mathbb{E}_s \\Big[ \\sum_a q_T(a \\mid s) \\log \\pi(a \\mid s) \\Big]
           - c_H \\, \\mathbb{E}_s \\big[ H(\\pi) \\big], \\qquad
       q_T(a \\mid s) \\propto \\exp\\big(-\\text{regret}(s, a) / T\\big),

   whose gradient, pi - q_T, does not fade; its minimiser is the mean of q_T over the maps the
   observation allows, which ranks moves by expected regret as T grows and by how often they
   are best as T shrinks;
3. **validate**: the policy's argmax on the first ``--validation-maps`` maps of the config's
   ``map_dir`` validation split (procedural maps: held-out seeds), travel / greedy per map.

``--continuation agent`` prices the moves with the policy itself finishing each play-out (its
argmax, with the weights the round collects with: ``planner.continuation``), C_pi(s, a), instead of
greedy: each round is then a step of approximate policy iteration, whose labels improve on the
current policy rather than on greedy alone. A play-out then costs a batched forward pass per
step besides the env's steps.

``--reveal D`` prices the moves in a world that holds the true map only D steps past the cells
the robot knows free, walls beyond (``planner.lookahead.revealed_within``), instead of the whole map:
a teacher nearer what the observation can tell. Its lookahead alone travels 0.92 of greedy's
distance on the floor plans at D = 5, the oracle's 0.84 (docs/results.md section 4), and its
labels depend on the cells just past the frontier, not on rooms a sensor range away.

Each round also reports the regret on its new states before it trains on them: the regret of
the policy that visited them, a held-out figure beside the training loss.

After each round ``OUT/round_NN.pt`` holds the weights in the pretrained format
(``run.pretrained``: evaluate it, or continue with ``train.py --init-from OUT/round_NN.pt``),
``OUT/states_NN.npz`` the round's labelled states (``Labelled.save``; 14 MB per 20,000 states of
the floor plans) and ``OUT/imitation.json`` every round's figures. ``--states-from EARLIER_OUT``
trains on an earlier run's labelled states too, before its own: a new network (another size,
say) starts from states that took 8 minutes per 20,000 to label on 2 cores, and
``experiments.imitation_fit`` compares networks on them without playing a map. Ctrl-C stops after
keeping what is done: the finished rounds' files stay, a collection cut short saves the states it
labelled (``states_NN.npz`` with fewer states, for ``--states-from``; labels with ``--continuation
agent`` cost hours), and the last line names the newest weights and every states file.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from config import Config, ConfigError, EnvConfig, load_config
from env.baselines import greedy
from env.observation import NEIGHBORS, NODE_FEATURES, n_node_features
from env.settings import GridExploreConfig
from evaluation.play import AGENT, evaluate_actors, map_dir_size, travel_ratio
from evaluation.stats import format_mean_ci
from graph_batch import argmax_actor, forward_each, forward_observations, one_torch_thread
from learning.envs import make_envs, with_env_overrides
from learning.ppo import adam, masked_policy, update_dtype
from planner.continuation import PolicyContinuation
from planner.lookahead import LOOKAHEAD_COSTS, LookaheadCosts
from policy import build_policy
from run.atomic import atomic_write, atomic_write_text
from run.checkpoint import CheckpointError
from run.interrupt import StopOnSignal, signal_exit_code
from run.pretrained import load_initial_weights, weights_file

COSTS = "costs"
"""The key of C(s, .) in a ``states_NN.npz`` beside the observation's keys."""

COLLAPSED_ENTROPY = 1e-3
"""A round's mean policy entropy below which the expected-regret loss has stopped learning (a warning)."""

GREEDY = "greedy"
CONTINUATIONS = (GREEDY, AGENT)
"""Who finishes a lookahead's play-outs (``--continuation``): greedy, or the policy's argmax."""

REGRET_CAP = 10.0
"""The regret, in node spacings, of a move after which greedy cannot finish within the step limit."""


@dataclass
class Labelled:
    """States with their lookahead costs, in the env's padded layout: ``obs`` [S,...] and ``costs`` [S,K]."""

    obs: dict[str, np.ndarray]
    costs: np.ndarray

    def __len__(self) -> int:
        return len(self.costs)

    def save(self, path: Path) -> None:
        """One compressed ``.npz``: the observation keys and ``costs`` (written whole or not at all)."""
        atomic_write(path, lambda f: np.savez_compressed(f, costs=self.costs, **self.obs))

    @classmethod
    def load(cls, path: Path, n_features: int) -> "Labelled":
        """A file of ``save``; ``ValueError`` naming it if its nodes do not carry ``n_features`` columns
        (states of a run with other ``context_features`` or ``privileged_features``)."""
        with np.load(path) as arrays:
            data = cls({key: arrays[key] for key in arrays.files if key != COSTS}, arrays[COSTS])
        if data.obs[NODE_FEATURES].shape[-1] != n_features:
            raise ValueError(f"{path}: its states have {data.obs[NODE_FEATURES].shape[-1]} node features, this "
                             f"config's observations {n_features} (env.kwargs.context_features and "
                             f"privileged_features must match)")
        return data

    @classmethod
    def load_run(cls, folder: Path, n_features: int) -> list["Labelled"]:
        """Every round's states of an earlier run's ``--out`` folder, in round order."""
        paths = sorted(Path(folder).glob("states_*.npz"))
        if not paths:
            raise FileNotFoundError(f"{folder} holds no states_NN.npz: --states-from takes an planner.imitation "
                                    f"--out folder")
        return [cls.load(path, n_features) for path in paths]

    def leading_features(self, n: int) -> "Labelled":
        """The same states with only the first ``n`` node-feature columns (the trailing optional
        columns dropped: ``env.observation.node_feature_names`` appends them last)."""
        return Labelled({**self.obs, NODE_FEATURES: self.obs[NODE_FEATURES][..., :n]}, self.costs)

    @classmethod
    def join(cls, parts: list["Labelled"]) -> "Labelled":
        return cls({key: np.concatenate([p.obs[key] for p in parts]) for key in parts[0].obs},
                   np.concatenate([p.costs for p in parts]))


def node_spacing(env_kwargs: dict) -> float:
    """The env's node spacing in cells, the unit of every regret here (the env's default if unset)."""
    return float(env_kwargs.get("node_spacing", GridExploreConfig.node_spacing))


def regrets(costs: Tensor, spacing: float) -> Tensor:
    """[B,K] (C(s, a) - min_b C(s, b)) / spacing; ``REGRET_CAP`` where C is infinite (a masked slot,
    which the policy gives probability 0, or a move after which greedy cannot finish)."""
    best = costs.min(dim=-1, keepdim=True).values
    return torch.where(torch.isfinite(costs), (costs - best) / spacing, torch.full_like(costs, REGRET_CAP))


def expected_regret(logits: Tensor, costs: Tensor, spacing: float) -> Tensor:
    """[B] sum_a pi(a|s) regret(s, a) for logits [B,K] (masked slots at the dtype's minimum, as
    ``PolicyNet`` leaves them, so they weigh exactly 0) and costs [B,K]."""
    return (masked_policy(logits).probs * regrets(costs, spacing)).sum(-1)


def argmax_is_best(logits: Tensor, costs: Tensor) -> Tensor:
    """[B] 1.0 where the policy's most probable move (the one its argmax plays) costs least, else 0.0."""
    with torch.no_grad():
        chosen = costs.gather(-1, logits.argmax(-1, keepdim=True))  # [B,1]
        return (chosen == costs.min(-1, keepdim=True).values).squeeze(-1).float()


def argmax_regret(logits: Tensor, costs: Tensor, spacing: float) -> Tensor:
    """[B] the regret (node spacings) of the policy's most probable move, the one its argmax plays."""
    with torch.no_grad():
        return regrets(costs, spacing).gather(-1, logits.argmax(-1, keepdim=True)).squeeze(-1)


def imitation_loss(logits: Tensor, costs: Tensor, spacing: float, ent_coef: float,
                   temperature: float = 0.0) -> tuple[Tensor, dict[str, float]]:
    """The module docstring's L for a minibatch (logits and costs [B,K], as ``expected_regret``),
    or with ``temperature`` T > 0 its L_T. Returns the loss and its parts (the expected regret
    whichever is minimised)."""
    policy = masked_policy(logits)
    regret = expected_regret(logits, costs, spacing).mean()
    entropy = policy.entropy().mean()
    parts = {"regret": regret.item(), "entropy": entropy.item(),
             "argmax_best": argmax_is_best(logits, costs).mean().item()}
    if temperature == 0:
        return regret - ent_coef * entropy, parts
    valid = logits > torch.finfo(logits.dtype).min  # PolicyNet leaves masked slots at the minimum
    target = torch.softmax(torch.where(valid, -regrets(costs, spacing) / temperature, -torch.inf), dim=-1)
    cross_entropy = -torch.where(valid, target * policy.logits, 0.0).sum(-1).mean()
    return cross_entropy - ent_coef * entropy, parts


def collect(policy: nn.Module, config: Config, n_states: int, round_index: int, stop: StopOnSignal,
            continuation: str = GREEDY, reveal: int | None = None) -> Labelled:
    """``n_states`` states the policy visits sampling its moves, each with C(s, .), greedy or the
    policy's argmax (``continuation``: ``greedy`` or ``agent``) finishing the play-outs, on the
    true map or in the world that knows it ``reveal`` steps out (a state that world prices no
    move of is not kept). The envs of round r are the run's envs ``r * num_envs ..``, so every
    round plays new episodes, each on a map drawn afresh: from a large folder mostly maps the
    earlier rounds did not play, though a map may recur (of the 5,072 training floor plans, about
    one in five of a round's after 40,000 states before it)."""
    E = config.env.num_envs
    player = PolicyContinuation(config, policy.state_dict()) if continuation == AGENT else None
    envs = make_envs(config.env, config.seed, indices=range(round_index * E, (round_index + 1) * E),
                     wrap=functools.partial(LookaheadCosts, continuation=player, reveal=reveal))
    generator = torch.Generator().manual_seed(config.seed * 1_000 + round_index)
    kept_obs: list[dict[str, np.ndarray]] = []
    kept_costs: list[np.ndarray] = []
    policy.eval()
    try:
        obs, info = envs.reset()
        costs = info[LOOKAHEAD_COSTS]
        with tqdm(total=n_states, unit="state", desc=f"round {round_index} collect") as bar, one_torch_thread():
            while len(kept_costs) < n_states and not stop.requested:
                with torch.no_grad():
                    logits, _ = forward_each(policy, obs)
                actions = torch.multinomial(masked_policy(logits).probs, 1, generator=generator).squeeze(-1)
                for i in np.flatnonzero(np.isfinite(costs).any(-1))[: n_states - len(kept_costs)]:
                    kept_obs.append({key: _compact(key, value[i]) for key, value in obs.items()})
                    kept_costs.append(costs[i])
                    bar.update(1)
                obs, _, _, _, info = envs.step(actions.numpy())
                costs = info[LOOKAHEAD_COSTS]  # after an autoreset: the new episode's first state
    finally:
        envs.close()
    if not kept_costs:
        return Labelled({}, np.zeros((0, 0), np.float32))
    return Labelled({key: np.stack([o[key] for o in kept_obs]) for key in kept_obs[0]}, np.stack(kept_costs))


def _compact(key: str, value: np.ndarray) -> np.ndarray:
    """Neighbour indices fit int16 (N_max < 32768); ``collate`` widens them again."""
    return value.astype(np.int16) if key == NEIGHBORS else np.array(value)


def train_epochs(policy: nn.Module, optimizer: torch.optim.Optimizer, data: Labelled, epochs: int,
                 minibatch: int, spacing: float, ent_coef: float, size_buckets: int, seed: int,
                 stop: StopOnSignal, temperature: float = 0.0, trunk_dtype: torch.dtype = torch.float32
                 ) -> dict[str, float]:
    """``epochs`` shuffled passes of minibatch steps over ``data``; the last epoch's mean loss parts.
    ``trunk_dtype`` is the PPO update's (``ppo.update_dtype``: bfloat16 runs the trunks under autocast)."""
    policy.train()
    generator = torch.Generator().manual_seed(seed)
    costs = torch.from_numpy(data.costs)
    obs = {key: torch.from_numpy(value) for key, value in data.obs.items()}
    sums: dict[str, float] = {}
    for epoch in range(epochs):
        sums, batches = {}, 0
        order = torch.randperm(len(data), generator=generator).split(minibatch)
        for index in tqdm(order, unit="batch", desc=f"epoch {epoch + 1}/{epochs}", leave=False):
            if stop.requested:
                return {}
            logits, _ = forward_observations(policy, {key: value[index] for key, value in obs.items()}, size_buckets,
                                             trunk_dtype)
            loss, parts = imitation_loss(logits, costs[index], spacing, ent_coef, temperature)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            sums = {key: sums.get(key, 0.0) + value for key, value in parts.items()}
            batches += 1
    return {key: value / max(batches, 1) for key, value in sums.items()}


def fit_on(policy: nn.Module, data: Labelled, spacing: float, size_buckets: int, batch: int = 512) -> dict[str, float]:
    """How well the policy fits ``data`` without training on it: its mean expected regret
    (``regret``, node spacings), how often its argmax is a best move (``argmax_best``) and the
    mean regret of that move (``argmax_regret``, node spacings: what the played move loses)."""
    policy.eval()
    regret = best = played = 0.0
    with torch.no_grad():
        for start in range(0, len(data), batch):
            part = slice(start, start + batch)
            logits, _ = forward_observations(policy, {k: torch.from_numpy(v[part]) for k, v in data.obs.items()},
                                             size_buckets)
            costs = torch.from_numpy(data.costs[part])
            regret += float(expected_regret(logits, costs, spacing).sum())
            best += float(argmax_is_best(logits, costs).sum())
            played += float(argmax_regret(logits, costs, spacing).sum())
    n = max(len(data), 1)
    return {"regret": regret / n, "argmax_best": best / n, "argmax_regret": played / n}


def fresh_regret(policy: nn.Module, data: Labelled, spacing: float, size_buckets: int, batch: int = 512) -> float:
    """The policy's mean expected regret on ``data`` without training on it: on a round's new
    states, before the round trains, it is the regret of the policy that visited them, as a
    held-out figure beside the training loss."""
    return fit_on(policy, data, spacing, size_buckets, batch)["regret"]


def validation_env(env: EnvConfig) -> EnvConfig:
    """The config's env on its map folder's validation split (procedural maps: unchanged)."""
    return env if env.kwargs.get("map_dir") is None else with_env_overrides(env, ["map_split=validation"])


def write_round(path: Path, policy: nn.Module, config: Config, trained: dict) -> None:
    """The round's weights as a pretrained file (``run.pretrained``'s format)."""
    state = weights_file(policy.state_dict(), config, trained)
    atomic_write(path, lambda f: torch.save(state, f))


@dataclass(frozen=True)
class Settings:
    """The command line's settings of the rounds (``main``'s options)."""

    rounds: int
    states: int
    epochs: int
    validation_maps: int
    learning_rate: float
    minibatch: int
    ent_coef: float
    temperature: float
    continuation: str = GREEDY
    reveal: int | None = None


def run(config: Config, out: Path, settings: Settings, stop: StopOnSignal, earlier: Sequence[Labelled] = ()
        ) -> Path | None:
    """The rounds of the module docstring, training on ``earlier``'s states too (``--states-from``);
    returns the newest round file written (None if none)."""
    s = settings
    policy = build_policy(config)
    if config.run.init_from:
        load_initial_weights(policy, config)
    optimizer = adam(policy.parameters(), s.learning_rate)
    spacing = node_spacing(config.env.kwargs)
    held_out = validation_env(config.env)
    n_validation = min(s.validation_maps, map_dir_size(held_out) or s.validation_maps)
    greedy_results = evaluate_actors({"greedy": greedy}, held_out, n_validation, seed=0, progress=False)["greedy"]
    log: list[dict] = []
    newest = None
    parts = list(earlier)
    for r in range(s.rounds):
        parts.append(collect(policy, config, s.states, r, stop, s.continuation, s.reveal))
        if len(parts[-1]):  # also a collection cut short: its labels cost minutes to hours
            parts[-1].save(out / f"states_{r:02d}.npz")
        if stop.requested:
            break
        data = Labelled.join(parts)
        fresh = fresh_regret(policy, parts[-1], spacing, config.ppo.size_buckets)
        fit = train_epochs(policy, optimizer, data, s.epochs, s.minibatch, spacing, s.ent_coef,
                           config.ppo.size_buckets, config.seed * 1_000 + r, stop, s.temperature,
                           update_dtype(config.ppo))
        if stop.requested:
            break
        if s.temperature == 0 and fit["entropy"] < COLLAPSED_ENTROPY:
            print(f"warning: round {r}: the policy's entropy is {fit['entropy']:.4f}: it plays one move a state and "
                  f"the expected regret can no longer move it; start from trained weights (--init-from) or use "
                  f"--temperature", file=sys.stderr, flush=True)
        policy.eval()
        agent = evaluate_actors({AGENT: argmax_actor(policy)}, held_out, n_validation, seed=0, progress=False)[AGENT]
        mean, half, n = travel_ratio(agent, greedy_results)
        success = float(np.mean([a.success for a in agent]))
        log.append({"round": r, "states": len(data), "fresh_regret": fresh, **fit, "travel_per_greedy": [mean, half, n],
                    "success": success})
        print(f"round {r}: {len(data)} states; regret on the new states before training {fresh:.3f} spacings, "
              f"in training {fit['regret']:.3f}, entropy {fit['entropy']:.3f}, "
              f"argmax best {fit['argmax_best']:.3f}; validation travel / greedy {format_mean_ci(mean, half, 3)} "
              f"(n={n}), success {success:.2f}", flush=True)
        newest = out / f"round_{r:02d}.pt"
        write_round(newest, policy, config, {"from": "imitation", "round": r, "states": len(data),
                                             "init_from": config.run.init_from, "settings": asdict(s)})
        atomic_write_text(out / "imitation.json", json.dumps(log, indent=2))
    return newest


def saved_files(out: Path, newest: Path | None) -> str:
    """What a run left in ``out``: the newest round's weights and the labelled states, in words."""
    weights = f"the newest round's weights are {newest}" if newest else "no round finished"
    states = []
    for path in sorted(out.glob("states_*.npz")):
        with np.load(path) as arrays:
            states.append(f"{path.name} ({len(arrays[COSTS])} states)")
    if not states:
        return f"{weights}; nothing was saved" if not newest else weights
    return f"{weights}; labelled states in {out}: {', '.join(states)} (--states-from {out} trains on them)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/dungeon.yaml", help="YAML file (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="folder for round_NN.pt and imitation.json")
    parser.add_argument("--init-from", metavar="WEIGHTS", help="start from these weights (run.init_from)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--states", type=int, default=20_000, help="states collected per round")
    parser.add_argument("--epochs", type=int, default=3, help="passes over all states so far, per round")
    parser.add_argument("--validation-maps", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0: minimise the expected regret; T > 0: cross-entropy to softmin(regret / T), "
                             "T in node spacings (module docstring)")
    parser.add_argument("--states-from", type=Path, metavar="EARLIER_OUT",
                        help="also train on the labelled states (states_NN.npz) of this earlier --out folder")
    parser.add_argument("--continuation", choices=CONTINUATIONS, default=GREEDY,
                        help="who finishes the lookahead's play-outs: greedy, or the policy's argmax (a policy-"
                             "iteration step; module docstring) (default: %(default)s)")
    parser.add_argument("--reveal", type=int, metavar="D",
                        help="price the moves in a world that knows the true map only D steps past the cells the "
                             "robot knows free, not the whole map (a less privileged teacher; module docstring)")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. env.kwargs.map_dir=PATH")
    args = parser.parse_intermixed_args(argv)
    for name in ("rounds", "states", "epochs", "validation_maps", "minibatch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.reveal is not None and args.reveal < 0:
        parser.error(f"--reveal must be 0 or more steps, got {args.reveal}")
    if not args.learning_rate > 0 or args.ent_coef < 0 or args.temperature < 0:
        parser.error(f"--learning-rate must be > 0, --ent-coef and --temperature >= 0, got {args.learning_rate}, "
                     f"{args.ent_coef} and {args.temperature}")
    try:
        init = [f"run.init_from={args.init_from}"] if args.init_from else []
        config = load_config(args.config, [*args.overrides, *init])
        earlier = Labelled.load_run(args.states_from, n_node_features(config.env.kwargs)) if args.states_from else []
        if args.out.exists() and any(args.out.iterdir()):
            raise FileExistsError(f"{args.out} exists and is not empty: choose another --out")
        args.out.mkdir(parents=True, exist_ok=True)
        with StopOnSignal("stopping; the files of the rounds already finished stay") as stop:
            settings = Settings(args.rounds, args.states, args.epochs, args.validation_maps, args.learning_rate,
                                args.minibatch, args.ent_coef, args.temperature, args.continuation, args.reveal)
            newest = run(config, args.out, settings, stop, earlier)
    except (ConfigError, CheckpointError, FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    saved = saved_files(args.out, newest)
    if stop.requested:
        print(f"stopped by {stop.requested}; {saved}", file=sys.stderr)
        return signal_exit_code(stop.requested)
    print(f"done: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
