"""The import rules of docs/architecture.md, read from the source (every import, also inside functions)."""
import ast
import subprocess
import sys

import pytest

from tests.helpers import ROOT

NETWORK = {"encoder", "decoder", "policy", "graph_batch", "reference_weights"}
ABOVE_THE_CORE = {"run", "learning", "evaluation", "cluster", "planner", "viz", "bench", "experiments"}
PROGRAMS = {"train", "evaluate", "visualize", "ablate", "compare"}
FORBIDDEN = {  # package or module -> top-level modules it must never import (docs/architecture.md)
    "env": {"torch", "torch_geometric", "config", *NETWORK, *ABOVE_THE_CORE, *PROGRAMS, "ray"},
    "encoder": {"env", "gymnasium", "policy", "graph_batch", *ABOVE_THE_CORE, *PROGRAMS, "ray"},
    "decoder": {"env", "gymnasium", "policy", "graph_batch", *ABOVE_THE_CORE, *PROGRAMS, "ray"},
    "policy.py": {*ABOVE_THE_CORE, *PROGRAMS, "ray"},
    "graph_batch.py": {"policy", *ABOVE_THE_CORE, *PROGRAMS, "ray"},
    "run": {"learning", "evaluation", "cluster", "planner", "viz", "bench", "experiments", *PROGRAMS, "ray"},
    "learning": {"evaluation", "planner", "viz", "bench", "experiments", *PROGRAMS, "ray"},
    "evaluation": {"cluster", "planner", "viz", "bench", "experiments", *PROGRAMS, "ray"},
    "cluster": {"planner", "viz", "bench", "experiments", *PROGRAMS},
    "planner": {"cluster", "bench", "experiments", *PROGRAMS, "ray"},
    "viz": {"learning", "run", "cluster", "planner", "bench", "experiments", *PROGRAMS, "ray"},
    "explorer": {"learning", "cluster", "viz", "bench", "experiments", *PROGRAMS, "ray"},
    "examples": {"env", *NETWORK, *ABOVE_THE_CORE, *PROGRAMS, "ray", "torch"},
}
ALLOWED = {"learning/choose_collector.py": {"cluster.rollout_actors", "cluster.connect"},
           "examples/robot_loop.py": {"env.ros_map"}}
"""The one import upwards: ``env.vector: ray`` picks the Ray collector where every collector is
chosen (imported inside the function, so nothing else in a run loads Ray). And the robot loop's
one import of the env: it reads a ROS map file; its simulation is its own."""


def project_modules() -> dict[str, object]:
    """Every module of the project outside tests/ (dotted name -> path); a package is its __init__."""
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[0] in ("tests", ".venv", "scratch") or any(p.startswith(".") for p in parts):
            continue
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(modules: dict) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its file (``from a.b import c`` counts as
    ``a.b.c`` when that is a module, else ``a.b``)."""
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_circle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_module_imports_itself_through_others():
    """No import circle anywhere, also through imports inside functions."""
    graph = import_graph(project_modules())
    assert {"learning.collector", "learning.choose_collector", "cluster.rollout_actors"} <= graph.keys()
    assert "learning.collector" in graph["cluster.rollout_actors"]  # the graph sees what it must
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def imported_modules(path):
    """Top-level names of every module ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_it_must_not(layer):
    paths = [ROOT / layer] if layer.endswith(".py") else sorted((ROOT / layer).rglob("*.py"))
    broken = {}
    for path in paths:
        where = str(path.relative_to(ROOT))
        bad = {name for name in imported_modules(path)
               if name.split(".")[0] in FORBIDDEN[layer] and name not in ALLOWED.get(where, ())}
        if bad:
            broken[where] = sorted(bad)
    assert not broken, broken


def test_the_layer_rules_cover_every_package():
    """A new folder of code gets its rule here, so its imports are checked from its first commit."""
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages - {"bench", "experiments"} <= FORBIDDEN.keys(), packages - FORBIDDEN.keys()


def test_only_cluster_imports_ray():
    """Ray is for scaling out: the training, the model and the env never need it (tests may)."""
    importers = {str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
                 if ".venv" not in path.parts and path.parts[len(ROOT.parts)] != "tests"
                 and any(m.split(".")[0] == "ray" for m in imported_modules(path))}
    assert importers and all(name.startswith("cluster/") for name in importers), sorted(importers)


def test_the_model_files_import_no_ray():
    for name in ("policy.py", "graph_batch.py", "config.py", "checks.py", "evaluation/stats.py"):
        assert not {m for m in imported_modules(ROOT / name) if m.split(".")[0] == "ray"}, name


def test_test_modules_import_no_other_test_module():
    broken = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        bad = {name for name in imported_modules(path)
               if name.startswith("tests.") and name.split(".")[-1].startswith(("test_", "conftest"))}
        if bad:
            broken[str(path.relative_to(ROOT))] = sorted(bad)
    assert not broken, broken


def test_packages_export_their_public_classes():
    import decoder
    import encoder
    from decoder import Decoder, DecoderLayer, SingleHeadAttention
    from encoder import Encoder, EncoderLayer, MultiHeadAttention

    assert {MultiHeadAttention, EncoderLayer, Encoder} <= {getattr(encoder, name) for name in encoder.__all__}
    assert {SingleHeadAttention, DecoderLayer, Decoder} <= {getattr(decoder, name) for name in decoder.__all__}


def test_the_model_env_and_training_load_neither_ray_nor_pyg():
    """Ray is for scaling out; PyG only for the ``sparse`` attention path and its converters: a
    process that imports the programs and plays the model's default path loads neither (PyG's
    import alone costs every such process 2.4 s). Nor do ``train.py`` and ``evaluate.py`` load
    matplotlib before they draw (0.9 s; ablate.py plots every sweep's end)."""
    code = ("import sys, encoder, decoder, env, policy, graph_batch, learning.trainer, train, evaluate\n"
            "print('matplotlib' in sys.modules)\n"
            "import ablate\n"
            "from config import load_config\n"
            "from graph_batch import collate\n"
            "from policy import build_policy\n"
            "from learning.envs import make_env\n"
            "config = load_config('configs/smoke.yaml')\n"
            "build_policy(config)(collate(make_env(config.env).reset(seed=0)[0]))\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'torch_geometric'}))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.split("\n")[:2] == ["False", "[]"], loaded.stdout
