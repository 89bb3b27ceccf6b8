"""Typed configuration: dataclasses with a docstring per field, loaded from YAML.

``load_config("configs/default.yaml", ["model.n_heads=4"])`` reads the file, applies dotted
``key=value`` overrides (values parsed as YAML), and checks every key and type: an unknown key
or a wrong type is a ``ConfigError`` naming the key and listing the valid ones.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """A configuration file or override that does not fit the schema."""


@dataclass
class ModelConfig:
    """Sizes and switches of ``PolicyNet``; every size reaches the modules as an argument."""

    embed_dim: int = 128
    """D, the node embedding size (the reference uses 128)."""
    n_heads: int = 8
    """H, attention heads in encoder and decoder; must divide ``embed_dim`` (reference: 8)."""
    n_layers: int = 6
    """Encoder depth: a node sees neighbours up to this many hops away (reference: 6)."""
    n_decoder_layers: int = 1
    """Decoder depth: cross-attention blocks of the current node over all nodes (reference: 1)."""
    ff_dim: int = 512
    """Hidden width of each feed-forward block (reference: 512)."""
    tanh_clipping: float = 10.0
    """C in the pointer's logits C * tanh(...) (reference: 10)."""
    attention_impl: Literal["reference", "sdpa", "sparse"] = "sdpa"
    """Attention implementation: all give the same result; sdpa is fastest (docs/performance.md)."""
    separate_critic: bool = False
    """Give the value head its own embedding, encoder and decoder (the reference keeps separate networks)."""

    def __post_init__(self) -> None:
        for name in ("embed_dim", "n_heads", "n_layers", "n_decoder_layers", "ff_dim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be >= 1, got {getattr(self, name)}")
        if self.embed_dim % self.n_heads != 0:
            divisors = [h for h in range(1, self.embed_dim + 1) if self.embed_dim % h == 0]
            raise ConfigError(
                f"model.n_heads={self.n_heads} must divide model.embed_dim={self.embed_dim}; "
                f"allowed head counts: {divisors}"
            )
        if self.tanh_clipping <= 0:
            raise ConfigError(f"model.tanh_clipping must be > 0, got {self.tanh_clipping}")


@dataclass
class Config:
    """A whole run: what ``train.py`` reads and saves beside every checkpoint."""

    seed: int = 1
    """Seeds torch, numpy and the environments."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy network."""


def load_config(path: str | Path | None = None, overrides: typing.Sequence[str] = ()) -> Config:
    """The ``Config`` from a YAML file (or the defaults when ``path`` is None) plus overrides."""
    data: dict[str, Any] = {}
    if path is not None:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of keys at the top, got {type(data).__name__}")
    for override in overrides:
        apply_override(data, override)
    return from_dict(Config, data)


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
    node[leaf] = yaml.safe_load(raw)


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
        if value not in typing.get_args(hint):
            raise ConfigError(f"{key!r} must be one of {list(typing.get_args(hint))}, got {value!r}")
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    # bool is an int subclass: reject True for an int field and 1 for a bool field alike.
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise ConfigError(f"{key!r} must be of type {hint.__name__}, got {value!r} ({type(value).__name__})")
    return value


def save_config(config: Config, path: str | Path) -> None:
    """Write the resolved ``config`` as YAML; ``load_config(path)`` gives it back."""
    with open(path, "w") as f:
        yaml.safe_dump(dataclasses.asdict(config), f, sort_keys=False)
