"""The reading guide and the architecture page name only files, modules and classes that exist.

Read statically (``ast``): no project module is imported but ``config``, for its keys. What
counts as this project's name:
  - a path under one of the project's folders (``encoder/attention.py``, ``cluster/``), or a
    bare ``*.py`` other than the reference's files; a relative Markdown link;
  - a dotted name starting with a project module (``learning.collector.Collector``), or a config key
    (``ppo.gae_values``);
  - a CamelCase class or an ALL_CAPS constant, alone or as ``Class.attribute``, unless
    ``NOT_OURS`` lists it (the reference's classes with no home here, torch's and PyG's);
  - in a table, a class beside the file it is claimed to live in.
"""
from __future__ import annotations

import ast
import dataclasses
import re
import typing
from functools import cache
from pathlib import Path

import pytest

import config
from tests.helpers import ROOT

DOCS = ["docs/reading-guide.md", "docs/architecture.md", "docs/floor-plans.md"]
PROJECT_DIRS = ("bench", "cluster", "configs", "decoder", "docs", "encoder", "env", "evaluation", "experiments",
                "learning", "planner", "run", "tests", "viz")
REFERENCE_FILES = {"model.py", "worker.py", "driver.py", "runner.py", "parameter.py", "graph_generator.py",
                   "ground_truth_graph.py", "node.py", "env.py", "agent.py", "local_node_manager_quadtree.py"}
"""Files of the reference code (and of later marmotlab code) the guide names."""
NOT_OURS = {"QNet", "Normalization", "Worker", "Categorical", "Function", "TransformerConv", "INPUT_DIM",
            "NODE_PADDING_SIZE", "K_SIZE"}
"""Classes and constants the docs name that are not this project's: the reference's, torch's, PyG's."""
CONFIG_SECTIONS = typing.get_type_hints(config.Config)
"""Config section -> its dataclass: ``ppo.gae_values`` names a config key, not a module."""

CAMEL = re.compile(r"^[A-Z][a-z0-9]+[A-Z]\w*$|^[A-Z][a-z0-9]{2,}$")  # PolicyNet, Encoder; not F, U, K
CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]+$")  # NODE_FEATURE_NAMES
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
PATH = re.compile(r"^[\w./*-]+(\.(py|md|yaml|cpp)|/)$")
FENCED_PATH = re.compile(r"(?<![\w./])([a-z_][\w/]*(?:\.(?:py|md|yaml|cpp)|/))(?![\w/])")


def doc_text(doc: str) -> tuple[list[str], list[str]]:
    """(inline code spans outside fenced blocks, lines inside fenced blocks) of ``doc``."""
    text = (ROOT / doc).read_text()
    fences = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", prose), [line for block in fences for line in block.splitlines()]


def project_files() -> list[Path]:
    return [p for p in ROOT.rglob("*.py")
            if not any(part.startswith(".") or part in ("scratch", "runs") for part in p.relative_to(ROOT).parts)]


@cache
def top_level_names(path: Path) -> dict[str, ast.AST]:
    """Names a module defines or imports at its top level -> their node."""
    names = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(alias.asname or alias.name).split(".")[0]: node for alias in node.names})
    return names


def class_attributes(cls: ast.ClassDef) -> set[str]:
    """Methods, class-level names and dataclass fields of ``cls``, every ``self.x = ...``, and
    the same of its base classes that the project defines (``EncoderLayer`` from ``AttentionBlock``)."""
    attributes = set()
    for base in cls.bases:
        if isinstance(base, ast.Name):
            for node in definitions().get(base.id, []):
                if isinstance(node, ast.ClassDef):
                    attributes |= class_attributes(node)
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef):
            attributes.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            attributes.add(node.attr)
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            attributes.add(node.target.id)
        elif isinstance(node, ast.Assign):
            attributes.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return attributes


@cache
def definitions() -> dict[str, list[ast.AST]]:
    """Every top-level class, function and constant of the project -> where each is defined."""
    found: dict[str, list[ast.AST]] = {}
    for path in project_files():
        for name, node in top_level_names(path).items():
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                found.setdefault(name, []).append(node)
    return found


def module_path(parts: list[str]) -> Path | None:
    """The file of module ``parts`` (``['rl', 'collector']``), a package's ``__init__.py``, or None."""
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def check_dotted(name: str) -> str | None:
    """Why the dotted ``name`` does not resolve, or None (also None when it is not this project's)."""
    parts = name.split(".")
    if parts[0] in CONFIG_SECTIONS and len(parts) == 2 and not module_path(parts):
        fields = {f.name for f in dataclasses.fields(CONFIG_SECTIONS[parts[0]])}
        return None if parts[1] in fields else f"{name}: no config key {parts[1]!r} in {parts[0]}"
    if parts[0] in NOT_OURS:
        return None
    if CAMEL.match(parts[0]):
        return check_class_attribute(parts[0], parts[1:])
    if not module_path(parts[:1]):
        return None  # torch.*, nn.*, a local variable's attribute: not a project module
    depth = max(i for i in range(1, len(parts) + 1) if module_path(parts[:i]))
    rest = parts[depth:]
    if not rest:
        return None
    names = top_level_names(module_path(parts[:depth]))
    if rest[0] not in names:
        return f"{name}: {'.'.join(parts[:depth])} defines no {rest[0]!r}"
    node = names[rest[0]]
    if len(rest) > 1 and isinstance(node, ast.ClassDef) and rest[1] not in class_attributes(node):
        return f"{name}: class {rest[0]} has no attribute {rest[1]!r}"
    return None


def check_class_attribute(cls_name: str, attributes: list[str]) -> str | None:
    """Why ``cls_name`` is no project class or lacks ``attributes[0]``, or None."""
    classes = [node for node in definitions().get(cls_name, []) if isinstance(node, ast.ClassDef)]
    if not classes:
        return f"{cls_name}: no such class in the project (if it is not ours, add it to NOT_OURS)"
    if attributes and not any(attributes[0] in class_attributes(c) for c in classes):
        return f"{cls_name}.{attributes[0]}: the class has no such attribute"
    return None


def check_path(path: str) -> str | None:
    """Why ``path`` (relative to the repository) does not exist, or None (also when not ours)."""
    if "/" in path:
        if path.split("/")[0] not in PROJECT_DIRS:
            return None  # another repository's path (utils/node_manager.py)
    elif path in REFERENCE_FILES or not path.endswith(".py"):
        return None
    return None if any(ROOT.glob(path.rstrip("/"))) else f"{path}: no such file or folder"


def check_span(span: str) -> str | None:
    """Check one inline code span; spans that are code or prose rather than a name pass."""
    name = span.split("(")[0].split(":")[0].strip()
    if PATH.match(name):
        return check_path(name)
    if DOTTED.match(name):
        return check_dotted(name)
    if CAMEL.match(name) or CONSTANT.match(name):
        if name in NOT_OURS:
            return None
        return None if name in definitions() else f"{name}: defined nowhere in the project (not ours? NOT_OURS)"
    return None


def table_homes(doc: str) -> list[tuple[str, str]]:
    """(class, file) pairs from table rows whose cells are one backticked name beside one backticked file."""
    pairs = []
    for line in (ROOT / doc).read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        for left, right in zip(cells, cells[1:]):
            name, home = re.fullmatch(r"`(\w+)`", left), re.fullmatch(r"`([\w/]+\.py)`", right)
            if name and home and CAMEL.match(name[1]):
                pairs.append((name[1], home[1]))
    return pairs


@pytest.mark.parametrize("doc", DOCS)
def test_every_name_in_the_doc_exists(doc):
    spans, fenced = doc_text(doc)
    problems = [problem for span in spans if (problem := check_span(span))]
    problems += [problem for line in fenced for path in FENCED_PATH.findall(line) if (problem := check_path(path))]
    assert not problems, f"{doc} names what does not exist:\n" + "\n".join(sorted(set(problems)))


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_point_at_files(doc):
    links = re.findall(r"\]\(([^)#\s]+)", (ROOT / doc).read_text())
    missing = [link for link in links if "://" not in link and not (ROOT / doc).parent.joinpath(link).exists()]
    assert not missing, f"{doc} links to missing files: {missing}"


def test_each_class_lives_in_the_file_the_guide_gives():
    homes = table_homes("docs/reading-guide.md")
    assert len(homes) >= 7  # SingleHeadAttention ... PolicyNet: the table is still read
    wrong = [f"{name} is not defined in {path}" for name, path in homes
             if not isinstance(top_level_names(ROOT / path).get(name), ast.ClassDef)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("span, problem", [
    ("encoder/attention_old.py", "encoder/attention_old.py: no such file"),
    ("learning.collectors.Collector", "learning defines no 'collectors'"),
    ("learning.collector.Collecter", "learning.collector defines no 'Collecter'"),
    ("PolicyNet.value_heads", "PolicyNet.value_heads: the class has no such attribute"),
    ("EncoderLayer.feed_forward", None),  # set in its base class, AttentionBlock
    ("GraphTrunks", "GraphTrunks: defined nowhere"),
    ("ppo.gae_value", "no config key 'gae_value' in ppo"),
    ("helpers_old.py", "helpers_old.py: no such file"),
    ("model.py", None), ("utils/node_manager.py", None), ("nn.LayerNorm", None), ("QNet", None),
])
def test_the_checker_catches_a_wrong_name(span, problem):
    found = check_span(span)
    assert found is None if problem is None else (found is not None and problem in found)


def test_the_readme_stays_a_short_users_document():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; at most 250 (the rest belongs in docs/)"
    assert lines[3].startswith("make train") and lines[4].startswith("make test")  # the first two commands
