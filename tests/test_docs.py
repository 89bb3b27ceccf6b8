"""The docs name only what exists, their commands run from a clean clone, and they state today's
facts rather than tell how a day went.

Every doc is checked (``ALL_DOCS``: README.md, CHANGELOG.md, docs/*.md, pretrained/README.md), by
four classes of check:

1. **Names** (every doc but CHANGELOG.md, whose tables name what moved away; ``NAMED_DOCS``), read
   statically with ``ast``. What counts as this project's name:
     - a path under one of the project's folders (``encoder/attention.py``, ``cluster/``), or a
       bare ``*.py`` other than the reference's files; a relative Markdown link;
     - a dotted name starting with a project module (``learning.collector.Collector``), or a config key
       (``ppo.gae_values``, ``env.kwargs.map_dir``); not a file name (``evaluation.json``);
     - a CamelCase class or an ALL_CAPS constant, alone or as ``Class.attribute``, unless
       ``NOT_OURS`` lists it (the reference's classes with no home here, torch's, PyG's, gymnasium's,
       environment variables) or Python builtins have it (``ValueError``);
     - in a table, a class beside the file it is claimed to live in.
2. **Commands**: a line of a fenced block that is not Python, or an inline code span, that starts
   with ``python``, ``python -m``, ``make`` or ``bash`` (``.venv/bin/python`` and ``python3`` too;
   a ``NAME=value`` prefix, ``time`` or ``timeout N`` in front are read past; ``&&``, ``;`` and
   ``|`` split a line into commands, a trailing ``\\`` joins lines). A command fails when
     - its script (``X.py``, ``bash X``) is not a file a clean clone has (tracked, or untracked and
       not ignored by git), or its ``-m`` module is neither the project's nor importable here;
     - it runs a script or module under ``runs/`` (gitignored: a clean clone has none); ``runs/NAME``
       as an argument, a folder a training writes, is fine;
     - it gives a flag the program's parser does not define (exactly; no abbreviations). The parser
       is the program's own: each script the docs run is imported and its ``main`` called with
       ``argparse``'s parsing stubbed to hand back the parser at once, so nothing runs (about 4 s
       for every script the docs name in a fresh interpreter, 3 of them importing torch; the whole
       module about 6 s on 2 busy cores);
     - a ``make`` target is not one of the Makefile's;
     - a config override ``section.key=value`` names a key ``config.Config`` lacks, a retired
       setting (``config.SETTINGS_RETIRED``) or a retired value (``config.VALUES_RETIRED``); an env
       setting (``--env KEY=VALUE``, ``env.kwargs.KEY=VALUE``) a key ``GridExploreConfig`` lacks;
     - the file an input flag (``INPUT_FLAGS``: ``--checkpoint``, ``--config``, ...) reads exists
       nowhere: it must be in the clone, be under ``runs/`` (a training writes it), be named by an
       earlier command of the same doc (which writes it), or start with a placeholder;
     - it uses an ALL_CAPS word that is not one of the placeholders the docs use on purpose:
       ``PLACEHOLDERS`` is the whole list (``DUNGEON``, the folder of the reference's DungeonMaps
       floor plans; ``PATH``, the folder it sits in; ``RUN``, a run folder; ``OUT``, a file or
       folder to write; ...), so a doc cannot invent a second name for a thing.
   CHANGELOG.md's tables of what moved are exempt in their first column (the names before).
3. **Where things live**: no doc names a script under ``runs/`` or a ``runs/sNN`` folder anywhere,
   in prose too.
4. **Words of a lab notebook** (``NOTEBOOK_WORDS``): "scratch"; a machine by its VM kind ("VM",
   "AMX", "Zen 4"; the one machine a page measures on is stated by its cores and instruction sets,
   such as AVX-512); session words ("session", "this morning", "yesterday", "tonight", ...); a
   heading with a date. CHANGELOG.md, a record by date, may date its headings.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import dataclasses
import importlib
import importlib.util
import io
import itertools
import re
import shlex
import subprocess
import typing
from functools import cache
from pathlib import Path

import pytest

import config
from env.settings import GridExploreConfig
from tests.helpers import ROOT

ALL_DOCS = [doc for doc in ["README.md", "CHANGELOG.md", "pretrained/README.md",
                            *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/*.md"))]
            if (ROOT / doc).is_file()]
NAMED_DOCS = [doc for doc in ALL_DOCS if doc != "CHANGELOG.md"]
PROJECT_DIRS = ("bench", "cluster", "configs", "decoder", "docs", "encoder", "env", "evaluation", "experiments",
                "learning", "planner", "pretrained", "run", "tests", "viz")
REFERENCE_FILES = {"ppo.py", "model.py", "worker.py", "driver.py", "runner.py", "parameter.py", "graph_generator.py",
                   "ground_truth_graph.py", "node.py", "env.py", "agent.py", "local_node_manager_quadtree.py"}
"""Files of the reference code (and of later marmotlab code, and CleanRL's ``ppo.py``) the docs name."""
NOT_OURS = {"QNet", "OccupancyGrid", "Normalization", "Worker", "Node", "Categorical", "Function", "TransformerConv", "INPUT_DIM",
            "NODE_PADDING_SIZE", "K_SIZE", "DungeonMaps", "Discrete", "RAY_ADDRESS", "TORCH_EXTENSIONS_DIR",
            "SCHED_BATCH", "TORCH_LIBRARY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOMP_SPINCOUNT",
            "OMP_WAIT_POLICY"}
"""Classes and constants the docs name that are not this project's: the reference's (and its
DungeonMaps folder), torch's, PyG's, gymnasium's; environment variables and a C++ macro."""
FILE_SUFFIXES = ("json", "png", "gif", "pt", "csv", "npy", "txt", "log", "jsonl")
CONFIG_SECTIONS = typing.get_type_hints(config.Config)
"""Config section -> its dataclass: ``ppo.gae_values`` names a config key, not a module."""

PLACEHOLDERS = {"DUNGEON", "PATH", "RUN", "RUN_BEFORE", "RUN_AFTER", "OUT", "PREDICTOR", "CONFIG", "HEAD_IP",
                "STEP", "NODE"}
"""Every ALL_CAPS word a command may use for what the reader supplies, on purpose a short list:
``DUNGEON`` is the folder of the reference's DungeonMaps floor plans (``PATH/DungeonMaps/train``:
``PATH`` is where the reader put them); ``RUN`` a run folder, or where a program reads weights a
checkpoint or pretrained file (``RUN_BEFORE``, ``RUN_AFTER`` two of them); ``OUT`` a file or
folder written; ``PREDICTOR`` a map predictor's file; ``CONFIG`` a config file; ``HEAD_IP`` a Ray
head's address; ``STEP`` and ``NODE`` an episode's step and a graph node. One or two capitals
(``N``, ``W``) stand for a number or a file as well."""
INPUT_FLAGS = {"--checkpoint", "--config", "--init-from", "--resume", "--planner", "--predictor"}
"""Flags whose value is a file or folder the program reads, so it must exist by then."""
SHELL_PREFIXES = {"time", "nice", "env", "exec"}
NOTEBOOK_WORDS = {
    "scratch": r"\bscratch\b",
    "a VM kind": r"\bVMs?\b|\bvirtual machines?\b|\bAMX\b|\bZen ?\d\b",
    "a session word": r"\bsessions?\b|\b(this|last|yesterday) (morning|afternoon|evening|night)\b|\byesterday\b"
                      r"|\btonight\b|\b(earlier|later) today\b",
}
"""A lab notebook's words, each a regular expression (case-insensitive but for "VM" and "AMX")."""
CASE_SENSITIVE = {"a VM kind"}
DATED_HEADING = re.compile(r"^#+ .*\b20\d\d-\d\d-\d\d\b")
RUNS_SCRIPT = re.compile(r"\bruns/(?:[\w.*-]+/)*[\w.*-]+\.(?:py|sh)\b|\bruns/s\d+\b")

CAMEL = re.compile(r"^[A-Z][a-z0-9]+[A-Z]\w*$|^[A-Z][a-z0-9]{2,}$")  # PolicyNet, Encoder; not F, U, K
CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]+$")  # NODE_FEATURE_NAMES
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
PATH = re.compile(r"^[\w./*-]+(\.(py|md|yaml|cpp)|/)$")
FENCED_PATH = re.compile(r"(?<![\w./])([a-z_][\w/]*(?:\.(?:py|md|yaml|cpp)|/))(?![\w/])")
CAPS_WORD = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9_]{2,}(?![\w-])")
OVERRIDE = re.compile(r"^([a-z_]+(?:\.[a-z_]+)*)=(.*)$", re.DOTALL)
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def doc_text(doc: str) -> tuple[list[str], list[str]]:
    """(inline code spans outside fenced blocks, lines inside fenced blocks) of ``doc``."""
    text = (ROOT / doc).read_text()
    fences = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.DOTALL)
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
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
    if parts[-1] in FILE_SUFFIXES:
        return None  # a file's name: evaluation.json
    if parts[0] in CONFIG_SECTIONS and parts[1:2] == ["kwargs"] and len(parts) == 3:
        return check_env_key(parts[2])
    if parts[0] == "env" and len(parts) == 2 and any(parts[1] in class_attributes(node) for node in
                                                     definitions()["GridExploreEnv"]):
        return None  # env.reset(), env.lookahead_copy(): a method of an env
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
        if name in NOT_OURS or name in dir(builtins):
            return None
        return None if name in definitions() else f"{name}: defined nowhere in the project (not ours? NOT_OURS)"
    return None


def table_homes(doc: str) -> list[tuple[str, str]]:
    """(class, file) pairs from table rows whose cells are one backticked name beside one backticked file."""
    pairs = []
    for line in (ROOT / doc).read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        for left, right in itertools.pairwise(cells):
            name, home = re.fullmatch(r"`(\w+)`", left), re.fullmatch(r"`([\w/]+\.py)`", right)
            if name and home and CAMEL.match(name[1]):
                pairs.append((name[1], home[1]))
    return pairs


# --- 2. Commands -------------------------------------------------------------------------------

@cache
def clone_files() -> frozenset[str]:
    """Files a clean clone has (tracked), and those untracked but not ignored (about to be committed);
    every file on disk outside runs/ and hidden folders where git cannot say."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, text=True, check=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        listed = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                  and not any(part.startswith(".") or part == "runs" for part in p.relative_to(ROOT).parts)]
    return frozenset(listed)


def in_clone(path: str) -> bool:
    """Whether ``path`` (a file, a folder or a glob, relative to the repository) is in a clean clone."""
    path = path.removeprefix("./").rstrip("/")
    files = clone_files()
    if any(ch in path for ch in "*?["):
        return any(Path(f).match(path) for f in files)
    return path in files or any(f.startswith(path + "/") for f in files)


@cache
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, flags=re.MULTILINE))


class _ParserReached(Exception):
    """Raised by the stubbed parse methods, carrying the parser the program built."""


def _hand_back(self: argparse.ArgumentParser, *args: typing.Any, **kwargs: typing.Any) -> typing.NoReturn:
    raise _ParserReached(self)


@cache
def program_options(module: str) -> dict[str, bool] | str:
    """``module``'s options (``--help`` included), each -> whether it reads a value: its own parser,
    caught as ``main`` reaches ``parse_args``, before anything runs. A string says why it could not
    be read; a ``main`` that parses nothing takes no options."""
    methods = ("parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args")
    saved = {name: getattr(argparse.ArgumentParser, name) for name in methods}
    try:
        main = importlib.import_module(module).main
        for name in methods:
            setattr(argparse.ArgumentParser, name, _hand_back)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                pytest.MonkeyPatch.context() as patch:
            patch.setattr("sys.argv", [module])
            main([]) if main.__code__.co_argcount else main()
    except _ParserReached as reached:
        return {option: action.nargs != 0 for option, action in reached.args[0]._option_string_actions.items()}
    except Exception as error:  # noqa: BLE001 - the doc's problem, reported with the error
        return f"{module}: its command line could not be read ({type(error).__name__}: {error})"
    finally:
        for name, method in saved.items():
            setattr(argparse.ArgumentParser, name, method)
    return {}


def shell_commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line, each as its words: ``&&``, ``;``, ``|`` split them, a
    redirection and its target are dropped, ``[--opt VALUE]`` reads as ``--opt VALUE``."""
    lexer = shlex.shlex(line.replace("[", " ").replace("]", " "), posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split, lexer.commenters = True, "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: a fragment of a command in prose
        tokens = line.split()
    commands, current, skip_next = [], [], False
    for token in tokens:
        if skip_next:
            skip_next = False
        elif set(token) <= set(";&|()"):
            commands.append(current)
            current = []
        elif set(token) <= set("<>&"):
            skip_next = True
            if current and current[-1].isdigit():  # 2>&1
                current.pop()
        else:
            current.append(token)
    return [words for words in [*commands, current] if words]


def program_of(words: list[str]) -> tuple[str, str, list[str]] | None:
    """(kind, name, arguments) of a command this test checks, e.g. ``("script", "train.py", [...])``,
    ``("module", "planner.imitation", [...])``, ``("make", "", [...])``, ``("bash", ".ci/run", [...])``;
    None for any other program."""
    while words and (ENV_ASSIGNMENT.match(words[0]) or words[0] in SHELL_PREFIXES or words[0] == "timeout"):
        words = words[2:] if words[0] == "timeout" else words[1:]
    if not words:
        return None
    program, rest = words[0].removeprefix("./"), words[1:]
    if program == "make":
        return "make", "", rest
    if program == "bash" and rest and not rest[0].startswith("-"):
        return "bash", rest[0], rest[1:]
    if program not in ("python", "python3", ".venv/bin/python", ".venv/bin/python3"):
        return None
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]
    if not rest or rest[0] == "-c":
        return None
    if rest[0] == "-m":
        return ("module", rest[1], rest[2:]) if len(rest) > 1 else None
    return "script", rest[0], rest[1:]


def check_setting(key: str, value: str) -> str | None:
    """Why the override ``key=value`` is no setting of today's ``config.Config``, or None (also for
    a key outside the config: a make variable)."""
    if key in config.SETTINGS_RETIRED:
        return f"{key}: a retired setting (config.SETTINGS_RETIRED)"
    if (key, value) in config.VALUES_RETIRED:
        return f"{key}={value}: a retired value, now {config.VALUES_RETIRED[key, value]!r} (config.VALUES_RETIRED)"
    parts = key.split(".")
    if parts[0] not in CONFIG_SECTIONS or parts == ["seed"]:
        return None
    fields = {f.name for f in dataclasses.fields(CONFIG_SECTIONS[parts[0]])}
    if len(parts) < 2 or parts[1] not in fields:
        return f"{key}: no config key {'.'.join(parts[1:2])!r} in {parts[0]}"
    if parts[:2] == ["env", "kwargs"] and len(parts) > 2:
        return check_env_key(parts[2])
    return None


def check_env_key(key: str) -> str | None:
    """Why ``key`` (``--env KEY=VALUE``, ``env.kwargs.KEY``) is no env setting, or None."""
    names = {f.name for f in dataclasses.fields(GridExploreConfig)} | {"render_mode"}
    return None if key in names else f"env setting {key!r}: env.settings.GridExploreConfig has no such field"


def check_input(flag: str, value: str, made: set[str]) -> str | None:
    """Why the file or folder ``value`` that ``flag`` reads cannot be there, or None."""
    placeholder = re.fullmatch(r"[A-Z][A-Z0-9_]*", value.split("/")[0])  # checked as a placeholder apart
    if in_clone(value) or value.startswith(("runs/", "$", "~")) or placeholder:
        return None
    if value in made or any(value.startswith(m.rstrip("/") + "/") for m in made):
        return None  # written by an earlier command of the same doc
    return f"{flag} {value}: not in a clean clone, and no earlier command of the doc names it"


def check_program(kind: str, name: str, arguments: list[str], made: set[str]) -> list[str]:
    """Why one program of a command would not run from a clean clone, given its arguments."""
    if kind == "make":
        return [f"make {target}: the Makefile has no such target" for target in arguments
                if not target.startswith("-") and "=" not in target and target not in make_targets()]
    if kind == "module":
        top = name.split(".")[0]
        if top == "runs":
            return [f"python -m {name}: a module under runs/, which a clean clone does not have"]
        if not module_path(name.split(".")):
            if top in PROJECT_DIRS or module_path([top]) or importlib.util.find_spec(top) is None:
                return [f"python -m {name}: no such module"]
            return []  # pytest, pip, venv: not ours, their options not ours to check
        module = name
    else:
        if name.removeprefix("./").startswith("runs/"):
            return [f"{kind} {name}: a script under runs/, which a clean clone does not have"]
        if not in_clone(name):
            return [f"{kind} {name}: no such file in a clean clone"]
        if kind == "bash" or not name.endswith(".py"):
            return []
        module = name.removeprefix("./").removesuffix(".py").replace("/", ".")
    options = program_options(module)
    if isinstance(options, str):
        return [options]
    problems, i = [], 0
    while i < len(arguments):
        argument, value = arguments[i], None
        if argument.startswith("-") and not re.fullmatch(r"-[\d.e-]+", argument):
            flag, has_value, inline = argument.partition("=")
            if flag not in options:
                problems.append(f"{name}: no option {flag} (its options: {', '.join(sorted(options))})")
            elif options[flag]:
                value = inline if has_value else arguments[i + 1] if i + 1 < len(arguments) else None
                i += 0 if has_value else 1
            if value is not None and flag == "--env":
                problems.append(check_env_key(value.partition("=")[0]))
            elif value is not None and flag == "--sweep":
                key, _, values = value.partition("=")
                problems.append(check_setting(key, values.split(",")[0]))
            elif value is not None and flag in INPUT_FLAGS:
                problems.append(check_input(flag, value, made))
        elif match := OVERRIDE.match(argument):
            problems.append(check_setting(match[1], match[2]))
        i += 1
    return [problem for problem in problems if problem]


def check_command(line: str, made: set[str] | None = None) -> list[str]:
    """Why the shell line ``line`` would not run from a clean clone (empty when it would). ``made``:
    what earlier commands of the same doc named (files they may write); this line's are added."""
    made = set() if made is None else made
    problems = []
    for words in shell_commands(line):
        found = program_of(words)
        if found is None:
            continue
        kind, name, arguments = found
        problems += check_program(kind, name, arguments, made)
        values = [a.partition("=")[2] if ENV_ASSIGNMENT.match(a) else a for a in arguments if not a.startswith("-")]
        problems += [f"{word}: an ALL_CAPS word that is not one of PLACEHOLDERS" for value in values
                     for word in CAPS_WORD.findall(value) if word not in PLACEHOLDERS]
        made.update(arguments)
        made.update(a.partition("=")[2] for a in arguments if "=" in a)
    return problems


def without_fences(text: str) -> str:
    """``text`` with each fenced block blanked, its line breaks kept so that line numbers hold."""
    return re.sub(r"```.*?```", lambda m: "\n" * m[0].count("\n"), text, flags=re.DOTALL)


def commands_in(text: str, doc: str = "") -> list[tuple[int, str]]:
    """(line number, command) of every command ``text`` gives, in order: the non-Python lines of its
    fenced blocks (a trailing ``\\`` joining lines) and its inline code spans that start with a
    program this test checks. CHANGELOG.md's table rows lose their first column (the names before)."""
    found = []
    for block in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.DOTALL):
        if block[1] in ("python", "py", "yaml", "text"):
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        joined, start = "", None
        for number, line in enumerate(block[2].splitlines(), first):
            start = number if start is None else start
            joined += line.removeprefix("$ ")
            if joined.endswith("\\"):
                joined = joined[:-1] + " "
                continue
            found.append((start, joined))
            joined, start = "", None
    prose = without_fences(text)
    if Path(doc).name == "CHANGELOG.md":
        prose = re.sub(r"^(\s*\|)([^|\n]*)", lambda m: m[1] + " " * len(m[2]), prose, flags=re.MULTILINE)
    for span in re.finditer(r"`([^`]+)`", prose):
        command = " ".join(span[1].split())
        if re.match(r"(\.venv/bin/)?(python3?|make|bash) ", command) and "\n\n" not in span[1]:
            found.append((prose.count("\n", 0, span.start()) + 1, command))
    return sorted(found)


def command_problems(text: str, doc: str = "") -> list[str]:
    """``line: why`` for each command of a doc that would not run from a clean clone."""
    made: set[str] = set()
    return [f"{line}: {problem}   [{command}]" for line, command in commands_in(text, doc)
            for problem in check_command(command, made)]


def notebook_problems(text: str, doc: str = "") -> list[str]:
    """``line: why`` for each lab-notebook word, runs/ script and (outside CHANGELOG.md) dated heading."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in NOTEBOOK_WORDS.items():
            flags = 0 if what in CASE_SENSITIVE else re.IGNORECASE
            problems += [f"{number}: {m[0]!r}, {what}" for m in re.finditer(pattern, line, flags=flags)]
        problems += [f"{number}: {m[0]}: a script or sNN folder under runs/, which a clean clone does not have"
                     for m in RUNS_SCRIPT.finditer(line)]
        if DATED_HEADING.match(line) and Path(doc).name != "CHANGELOG.md":
            problems.append(f"{number}: a dated heading (dates belong in CHANGELOG.md)")
    return problems


# --- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("doc", NAMED_DOCS)
def test_every_name_in_the_doc_exists(doc):
    spans, fenced = doc_text(doc)
    problems = [problem for span in spans if (problem := check_span(span))]
    problems += [problem for line in fenced for path in FENCED_PATH.findall(line) if (problem := check_path(path))]
    assert not problems, f"{doc} names what does not exist:\n" + "\n".join(sorted(set(problems)))


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_relative_links_point_at_files(doc):
    links = re.findall(r"\]\(([^)#\s]+)", (ROOT / doc).read_text())
    missing = [link for link in links if "://" not in link and not (ROOT / doc).parent.joinpath(link).exists()]
    assert not missing, f"{doc} links to missing files: {missing}"


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_every_command_runs_from_a_clean_clone(doc):
    problems = command_problems((ROOT / doc).read_text(), doc)
    assert not problems, f"{doc}: commands that would not run from a clean clone:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_the_doc_states_facts_not_a_lab_notebook(doc):
    problems = notebook_problems((ROOT / doc).read_text(), doc)
    assert not problems, f"{doc}: lab-notebook words (see this test's docstring):\n" + "\n".join(problems)


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


BAD_DOC = """\
# Training

```bash
python train_old.py --config configs/default.yaml
python -m experiments.headroom_old --episodes 10
python evaluate.py --checkpoint pretrained/default.pt --episode 100
python train.py --config configs/default.yaml ppo.update_threads=2 env.vector=async model.n_head=8
python runs/s23/collect_time.py
bash runs/sweep.sh
make trian
```

Then `python -m runs.s23.probe --seed 1`, and `python evaluate.py --checkpoint mine.pt` plays
it on `--env map_dir=DUNGEON`; `python evaluate.py --env map_dir=HOME/maps --env map_sise=48`.
"""
"""A doc with one of each mistake in its commands; ``test_the_checker_catches_a_bad_command``
lists what each line must report."""

GOOD_DOC = """\
```bash
make train   # the default agent
make test ARGS="tests/encoder -k sdpa"
python train.py --config configs/dungeon.yaml env.kwargs.map_dir=DUNGEON run.name=dungeon_v1 \\
    ppo.total_timesteps=491520 && python -m run.pretrained runs/dungeon_v1 v1.pt --env map_dir=DungeonMaps/train
python -m planner.imitation --config configs/dungeon.yaml --out runs/imitation --init-from v1.pt
TEST_WORKERS=0 .venv/bin/python -m pytest -q tests/test_docs.py 2>&1 | tail -3
```

```python
python = "not a command"
```

`python visualize.py --checkpoint RUN --seed 0 [--at STEP] --out viz_out`, `python train.py
--resume runs/default`, `python evaluate.py --checkpoint pretrained/dungeon.pt --resume --json
test.json`, `python ablate.py --sweep model.n_layers=2,4 --address HEAD_IP:6379`, `bash .ci/run`.
"""


@pytest.mark.parametrize("line, expected", [
    (4, "train_old.py: no such file"),
    (5, "experiments.headroom_old: no such module"),
    (6, "evaluate.py: no option --episode "),
    (7, "ppo.update_threads: a retired setting"),
    (7, "env.vector=async: a retired value, now 'processes'"),
    (7, "model.n_head: no config key 'n_head' in model"),
    (8, "runs/s23/collect_time.py: a script under runs/"),
    (9, "bash runs/sweep.sh: a script under runs/"),
    (10, "make trian: the Makefile has no such target"),
    (13, "python -m runs.s23.probe: a module under runs/"),
    (13, "--checkpoint mine.pt: not in a clean clone"),
    (14, "HOME: an ALL_CAPS word that is not one of PLACEHOLDERS"),
    (14, "env setting 'map_sise'"),
])
def test_the_checker_catches_a_bad_command(line, expected):
    problems = command_problems(BAD_DOC)
    assert any(p.startswith(f"{line}: ") and expected in p for p in problems), "\n".join(problems)


def test_the_checker_passes_good_commands_and_reads_each_once():
    assert [line for line, _ in commands_in(GOOD_DOC)] == [2, 3, 4, 6, 7, 14, 14, 15, 16, 16]
    assert command_problems(GOOD_DOC) == []
    assert len(command_problems(BAD_DOC)) == 13  # one for each mistake, none twice


@pytest.mark.parametrize("text, expected", [
    ("Timings are from a scratch run.", "'scratch', scratch"),
    ("Measured on the AVX2 VM.", "'VM', a VM kind"),
    ("The Intel machine with AMX was faster.", "'AMX', a VM kind"),
    ("An AMD EPYC Zen 4 ran it.", "'Zen 4', a VM kind"),
    ("As in the third session, the run resumed.", "'session', a session word"),
    ("The agent was trained this morning.", "'this morning', a session word"),
    ("Yesterday's run was slower.", "'Yesterday', a session word"),
    ("Its script is runs/s23/probe.py.", "runs/s23/probe.py: a script or sNN folder under runs/"),
    ("## 2026-11-28: the cycle rule", "a dated heading"),
])
def test_the_checker_catches_lab_notebook_words(text, expected):
    problems = notebook_problems(text, "docs/results.md")
    assert any(expected in p for p in problems), problems


def test_the_checker_passes_plain_facts():
    text = ("Measured on 2 CPU cores with AVX-512 (`lscpu | grep -o 'avx512_bf16\\|amx_bf16'`); a training\n"
            "writes `runs/default/`, `--checkpoint runs/default` reads it.\n## A section\n")
    assert notebook_problems(text, "docs/performance.md") == []
    assert notebook_problems("## 2026-12-06: the house in layers", "CHANGELOG.md") == []
    assert notebook_problems("A Ray session, yesterday.", "CHANGELOG.md") != []  # dates, but no session words


def test_the_readme_stays_a_short_users_document():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; at most 250 (the rest belongs in docs/)"
    assert lines[3].startswith("make train") and lines[4].startswith("make test")  # the first two commands


def test_the_readmes_policy_snippet_runs_as_pasted():
    """The README's snippet under "The policy network", run as it stands: it makes its own ``obs``."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## The policy network"):]
    snippet = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - the project's own README
    logits, value, attention = namespace["logits"], namespace["value"], namespace["attention"]
    assert logits.shape[-1] == namespace["obs"]["action_mask"].shape[-1] and value.numel() == 1
    assert len(attention.encoder) == 6  # a [B, H, N, N] weight per encoder layer of the default config
