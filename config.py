"""Typed configuration: dataclasses with a docstring per field, loaded from YAML.

``load_config("configs/default.yaml", ["model.n_heads=4"])`` reads the file, applies dotted
``key=value`` overrides (values parsed as YAML), and checks every key and type: an unknown key
or a wrong type is a ``ConfigError`` naming the key and listing the valid ones.

The defaults below are the default run's settings (``make train``), in this one place: a config
file states only what differs from them. A section in a file changes only the keys it names,
except ``env.kwargs``, which a file gives whole. Loading a config needs neither torch nor the model.
"""
from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from checks import check_at_least_one, check_choice, check_divides, check_non_negative, check_positive

ATTENTION_IMPLS = ("reference", "sdpa", "sparse", "neighbors", "auto")
"""The names of ``encoder.attention.ATTENTION``'s implementations (a test keeps the two equal), so
that a config is checked without importing torch."""


class ConfigError(ValueError):
    """A configuration file or override that does not fit the schema."""


@dataclass
class ModelConfig:
    """Sizes and switches of ``PolicyNet``; every size reaches the modules as an argument."""

    embed_dim: int = 64
    """D, the node embedding size (the reference uses 128)."""
    n_heads: int = 4
    """H, attention heads in encoder and decoder; must divide ``embed_dim`` (reference: 8)."""
    n_layers: int = 6
    """Encoder depth: a node sees neighbours up to this many hops away (reference: 6)."""
    n_decoder_layers: int = 1
    """Decoder depth: cross-attention blocks of the current node over all nodes (reference: 1)."""
    ff_dim: int = 256
    """Hidden width of each feed-forward block (reference: 512)."""
    tanh_clipping: float = 10.0
    """C in the pointer's logits C * tanh(...) (reference: 10)."""
    attention_impl: str = "auto"
    """Attention implementation, one of ``ATTENTION_IMPLS`` (reference, sdpa,
    neighbors, sparse, auto): all give the same result. auto takes the compiled neighbors kernel
    on the CPU when at most half the (query, key) pairs are allowed (this project's graphs and the
    reference's), else sdpa (docs/performance.md)."""
    separate_critic: bool = False
    """Give the value head its own embedding, encoder and decoder (the reference keeps separate networks)."""

    def __post_init__(self) -> None:
        # The modules run the same checks on their arguments (checks.py); here they name the key.
        for name in ("embed_dim", "n_heads", "n_layers", "n_decoder_layers", "ff_dim"):
            check_at_least_one(f"model.{name}", getattr(self, name), ConfigError)
        check_divides(self.n_heads, self.embed_dim, "model.", ConfigError)
        check_positive("model.tanh_clipping", self.tanh_clipping, ConfigError)
        check_choice("model.attention_impl", self.attention_impl, ATTENTION_IMPLS, ConfigError)


@dataclass
class EnvConfig:
    """Which environment to train in, and how many copies run side by side."""

    id: str = "GridExplore-v0"
    """A gymnasium id registered by ``import env`` (GridExplore-v0 mixes every map family)."""
    kwargs: dict = field(default_factory=lambda: {"map_size": 32})
    """Keyword overrides for ``gymnasium.make`` (see ``env.settings.GridExploreConfig``), e.g. map_size.
    A config file that sets ``env.kwargs`` replaces this mapping whole."""
    num_envs: int = 8
    """Environments stepped in parallel; each update sees num_envs * ppo.num_steps transitions."""
    vector: Literal["sync", "processes", "ray"] = "processes"
    """Which collector steps the envs (``learning/choose_collector.py``): ``processes``, ``workers``
    processes on this machine, each stepping a contiguous slice of the envs with a CPU copy of the
    policy, their forward passes side by side; ``sync``, gymnasium's SyncVectorEnv in this process
    (the simplest, and what each worker runs); or ``ray``, ``workers`` Ray actors, as
    ``processes`` but anywhere in a Ray cluster (``docs/scaling.md``). The rollout is the same,
    bit for bit, whichever is chosen; how fast each is: docs/performance.md."""
    workers: int = 2
    """Processes (``processes``) or Ray actors (``ray``) collecting rollouts, one CPU each, each
    taking whole forward groups: ``processes`` starts one per group at most (one for 4 envs in
    groups of 4), ``ray`` refuses more workers than groups."""
    forward_group: int = 4
    """Envs whose observations share one forward pass while collecting: envs 0-3, 4-7, ... for 4
    (the last group may be smaller). A group's actions depend on its own observations alone, and
    the worker processes or Ray actors each take whole groups, so the rollout
    is still the same however they are split. 1 gives every env its own pass, which costs forward
    time (docs/performance.md)."""

    @property
    def n_forward_groups(self) -> int:
        return -(-self.num_envs // self.forward_group)

    def __post_init__(self) -> None:
        for name in ("num_envs", "workers", "forward_group"):
            check_at_least_one(f"env.{name}", getattr(self, name), ConfigError)
        if self.vector != "ray":  # processes: one per forward group at most, however many are asked for
            return
        if self.workers > self.num_envs:
            raise ConfigError(f"env.workers={self.workers} is more than env.num_envs={self.num_envs}: "
                              f"each worker needs at least one env")
        if self.workers > self.n_forward_groups:
            raise ConfigError(f"env.workers={self.workers} is more than the {self.n_forward_groups} forward groups of "
                              f"env.num_envs={self.num_envs} in groups of env.forward_group={self.forward_group}: "
                              f"each worker takes whole groups; lower env.workers or env.forward_group (1 allows one worker per env)")


@dataclass
class PPOConfig:
    """PPO hyperparameters (names and defaults after CleanRL's ppo.py where they apply)."""

    total_timesteps: int = 163_840
    """Environment steps over all envs before training stops (default: 160 updates of 8 x 128)."""
    num_steps: int = 128
    """Steps per env per rollout."""
    learning_rate: float = 3e-4
    """Adam step size at the start; annealed linearly to 0 when anneal_lr."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over the run."""
    gamma: float = 1.0
    """Discount factor. 1, as the reference: the undiscounted return is the negative travel
    distance plus terms fixed per map, the quantity evaluated."""
    gae_lambda: float = 0.95
    """GAE's lambda: 1 is Monte Carlo, 0 is one-step TD."""
    gae_values: Literal["critic", "greedy_rollout"] = "greedy_rollout"
    """The state values GAE bootstraps from: the learned critic's, or ``greedy_rollout``, the return
    of the greedy baseline played out from each state on the true map (``env/greedy_value.py``;
    privileged: training only, the policy never sees it). The critic is trained either way."""
    num_minibatches: int = 4
    """Minibatches per epoch over the rollout."""
    update_epochs: int = 4
    """Passes over each rollout."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""
    clip_coef: float = 0.2
    """Surrogate clipping epsilon."""
    clip_vloss: bool = True
    """Clip the value loss around the old values, as PPO's reference implementation does."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    target_kl: float = 0.0
    """Stop an update's epochs early once the approximate KL exceeds this; 0 disables."""
    size_buckets: int = 1
    """Slices of similar graph size each minibatch is evaluated in (``graph_batch.forward_observations``):
    the same losses, with less padding in each call but more calls. 1, one call a minibatch, is
    fastest where the encoder packs the batch (the CPU kernel: no padding rows at all) and on a GPU;
    more help only the padded paths on the CPU (``model.attention_impl`` sdpa, reference, sparse;
    docs/performance.md)."""
    update_dtype: Literal["float32", "bfloat16"] = "float32"
    """The float type of the update's minibatch passes through the trunks (``PolicyNet``'s
    ``trunk_dtype``, ``torch.autocast``): faster on CPUs with bf16 instructions, but its agents
    travel longer per map (docs/performance.md, docs/results.md section 6); the weights, Adam,
    the logits and the losses stay float32. Collection and evaluation always run float32."""

    def __post_init__(self) -> None:
        for name in ("total_timesteps", "num_steps", "num_minibatches", "update_epochs", "size_buckets"):
            check_at_least_one(f"ppo.{name}", getattr(self, name), ConfigError)
        for name in ("learning_rate", "max_grad_norm"):
            check_positive(f"ppo.{name}", getattr(self, name), ConfigError)
        for name in ("clip_coef", "ent_coef", "vf_coef", "target_kl"):
            check_non_negative(f"ppo.{name}", getattr(self, name), ConfigError)
        if not (0 < self.gamma <= 1 and 0 <= self.gae_lambda <= 1):
            raise ConfigError(f"ppo.gamma must be in (0, 1] and ppo.gae_lambda in [0, 1], got {self.gamma}, {self.gae_lambda}")


@dataclass
class RunConfig:
    """Where a run writes, and how often."""

    name: str = "default"
    """Run folder name under runs/ (ignored when run_dir is set)."""
    run_dir: str = ""
    """Explicit output folder; empty means runs/<name>."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto uses CUDA when present."""
    checkpoint_every: int = 5
    """Updates between checkpoints (the last update always writes one)."""
    keep_checkpoints: int = 0
    """How many checkpoints a run keeps: after each save, the ones older than the newest this many
    are deleted. 0 keeps every one. Keep 2 or more to leave a fallback for a newest one that
    becomes unreadable."""
    image_every: int = 25
    """Updates between rendered-episode and attention images in TensorBoard; 0 disables."""
    torch_threads: int = 0
    """torch.set_num_threads; 0 keeps torch's default."""
    init_from: str = ""
    """Start a new run from these weights instead of random ones (``train.py --init-from``): a
    run folder, a checkpoint or a pretrained file whose network has this run's model config.
    Weights only: the optimizer, counters and envs start fresh. Empty: random weights."""
    ray_address: str = ""
    """The Ray cluster ``env.vector: ray`` joins (``host:port`` of its head, or ``auto``); empty
    starts a local one on this machine (or joins the one ``RAY_ADDRESS`` names)."""

    def __post_init__(self) -> None:
        check_at_least_one("run.checkpoint_every", self.checkpoint_every, ConfigError)
        for name in ("keep_checkpoints", "image_every", "torch_threads"):
            check_non_negative(f"run.{name}", getattr(self, name), ConfigError)


@dataclass
class Config:
    """A whole run: what ``train.py`` reads and saves beside every checkpoint."""

    seed: int = 1
    """Seeds torch and the environments' episode seeds."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy network."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """The training environments."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """The PPO algorithm."""
    run: RunConfig = field(default_factory=RunConfig)
    """Outputs, devices and schedules of side work."""

    def __post_init__(self) -> None:
        check_non_negative("seed", self.seed, ConfigError)

    @property
    def batch_size(self) -> int:
        return self.env.num_envs * self.ppo.num_steps

    @property
    def num_updates(self) -> int:
        return max(1, self.ppo.total_timesteps // self.batch_size)


def load_config(path: str | Path | None = None, overrides: typing.Sequence[str] = ()) -> Config:
    """The ``Config`` from a YAML file (or the defaults when ``path`` is None) plus overrides."""
    data: dict[str, Any] = {}
    if path is not None:
        data = read_yaml_file(Path(path))
    for override in overrides:
        apply_override(data, override)
    try:
        return from_dict(Config, data)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}" if path is not None and not overrides else str(error)) from None


SETTINGS_ADDED_SINCE: dict[str, Any] = {"env.forward_group": 1}
"""Settings that arrived after runs had been saved and whose default changes what a run does, each
with the value that reproduces a run saved before it (before forward groups: a pass per env). A
resolved config lacks such a key only because it predates it: ``saved_config`` gives it this
value, not today's default, so an old run resumes as it began."""


SETTINGS_RETIRED = ("ppo.update_threads",)
"""Settings that runs saved and that no longer exist. ``ppo.update_threads`` split each minibatch
over threads, which changed only the order of float sums (and was never the default); a saved
config that names it is read without it, and such a run continues as one pass."""
VALUES_RETIRED = {("env.vector", "async"): "processes", ("model.attention_impl", "neighbours"): "neighbors"}
"""Values that runs saved and that no longer exist, each with the one that does the same today:
``async`` collected the same rollouts as ``processes``, bit for bit, more slowly; the kernel's
implementation is spelt as the observation's ``neighbors`` now."""


def saved_config(data: dict[str, Any], source: str | Path) -> Config:
    """The ``Config`` of a resolved config a run saved (its ``config.yaml``, a pretrained file's),
    the keys it predates taken from ``SETTINGS_ADDED_SINCE``, those retired since
    (``SETTINGS_RETIRED``) dropped and retired values replaced (``VALUES_RETIRED``); a
    ``ConfigError`` names ``source``."""
    data = copy.deepcopy(data)
    for key in SETTINGS_RETIRED:
        section, leaf = key.split(".")
        if isinstance(data.get(section), dict):
            data[section].pop(leaf, None)
    for (key, old), new in VALUES_RETIRED.items():
        section, leaf = key.split(".")
        if isinstance(data.get(section), dict) and data[section].get(leaf) == old:
            data[section][leaf] = new
    for key, value in SETTINGS_ADDED_SINCE.items():
        *parents, leaf = key.split(".")
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf not in node:
            node[leaf] = value
    try:
        return from_dict(Config, data)
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


def load_run_config(path: str | Path) -> Config:
    """A run folder's saved ``config.yaml`` (``saved_config``)."""
    return saved_config(read_yaml_file(Path(path)), path)


def read_yaml_file(path: Path) -> dict[str, Any]:
    """The mapping in YAML file ``path``; a ``ConfigError`` naming the file (and the line of a
    syntax error) when it is missing, a folder, not YAML, or not a mapping."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(error, 'problem', None) or error})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read a config file here ({type(error).__name__}: {error})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top, got {type(data).__name__}")
    return data


def apply_override(data: dict[str, Any], override: str) -> None:
    """Set ``data[a][b] = value`` for an override ``"a.b=value"`` (value parsed as YAML)."""
    key, sep, raw = override.partition("=")
    if not sep or not key:
        raise ConfigError(f"override {override!r} must look like key=value, e.g. model.n_heads=4")
    *parents, leaf = key.strip().split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {override!r}: {part!r} is a value, not a section")
    try:
        node[leaf] = yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise ConfigError(f"override {override!r}: the value is not valid YAML ({error})") from None


def from_dict(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``, checking keys and types recursively."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in data.items():
        if key not in hints:
            raise ConfigError(f"unknown key {prefix + str(key)!r}; valid keys: {', '.join(prefix + n for n in names)}")
        kwargs[key] = _check_type(hints[key], value, prefix + key)
    return cls(**kwargs)


def _check_type(hint: Any, value: Any, key: str) -> Any:
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ConfigError(f"{key!r} is a section; expected a mapping, got {value!r}")
        return from_dict(hint, value, key + ".")
    if typing.get_origin(hint) is Literal:
        check_choice(key, value, typing.get_args(hint), ConfigError)
        return value
    if hint is dict and value is None:  # an empty YAML section
        return {}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    # bool is an int subclass: reject True for an int field and 1 for a bool field alike.
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise ConfigError(f"{key!r} must be of type {hint.__name__}, got {value!r} ({type(value).__name__})")
    return value


def flat_settings(config: Config) -> dict[str, Any]:
    """``{"seed": 1, "model.n_heads": 4, ...}``: every setting of ``config`` under its dotted key."""
    flat = {}
    for section, values in dataclasses.asdict(config).items():
        items = values.items() if isinstance(values, dict) else [(None, values)]
        flat.update({section if key is None else f"{section}.{key}": value for key, value in items})
    return flat


def save_config(config: Config, path: str | Path) -> None:
    """Write the resolved ``config`` as YAML; ``load_config(path)`` gives it back."""
    with open(path, "w") as f:
        yaml.safe_dump(dataclasses.asdict(config), f, sort_keys=False)
