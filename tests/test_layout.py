"""The repository's layout holds by itself: no import cycles, dependencies pointing one way.

Plain Python over the source (ast), no imports of the code under test. Every
import counts, also those inside functions: a lazy import hides a cycle, it
does not remove it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", ".venv-lts", "build", "dist", "wheels", "out", "__pycache__", ".pytest_cache"}

# What each core package may import (besides itself). A new package must be added here, with its
# place in the layering said in its __init__ docstring.
CORE_LAYERS = {
    "model": set(),
    "motion": {"model"},
    "chains": {"model", "motion"},
    "feet": {"model", "motion", "chains"},
    "collision": {"model", "motion", "chains", "feet"},
    "retarget": {"model", "motion", "chains", "feet", "collision"},
    "playback": {"model", "motion"},
    "splice": {"model", "motion"},
    "waypoints": {"model", "motion"},
    "balance": {"model", "motion", "chains", "feet", "collision", "retarget"},
    "program": {"model", "motion"},
    "stream": {"model", "motion", "chains", "feet", "retarget"},
    "library": {"model", "motion", "chains", "feet", "retarget", "playback", "balance"},
}
# The Blender side, bottom to top: a part may import core and the parts before it.
BLENDER_SIDE = ["registration", "props", "operators", "panels", "cli", ""]
NO_BLENDER_IN_CORE = {"bpy", "mathutils", "bpy_extras", "gpu", "bmesh", "addon_utils"}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        if SKIP_DIRS.isdisjoint(path.relative_to(root).parts[:-1]):
            found[module_name(path, root)] = path
    return found


def _resolve(name: str, modules: dict) -> str | None:
    """The longest prefix of `name` that is one of our modules."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def imports_of(module: str, path: Path, modules: dict) -> tuple[set[str], set[str]]:
    """(our modules it imports, external top-level names it imports)."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    ours, external = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                hit = _resolve(alias.name, modules)
                (ours.add(hit) if hit else external.add(alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                full = f"{target}.{alias.name}" if target else alias.name
                hit = full if full in modules else _resolve(target, modules) if target else None
                if hit:
                    ours.add(hit)
                elif not node.level:
                    external.add(target.split(".")[0])
    ours.discard(module)
    return ours, external


def import_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = source_modules(root)
    graph, external = {}, {}
    for name, path in modules.items():
        graph[name], external[name] = imports_of(name, path, modules)
    return graph, external


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _blender_part(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in BLENDER_SIDE else ("" if module == "" else None)


def layer_violations(graph: dict[str, set[str]], external: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        parts = module.split(".")
        if parts[0] == "core":
            own = parts[1] if len(parts) > 1 else None
            if own is not None and own not in CORE_LAYERS and len(parts) > 2:
                problems.append(f"{module}: package core.{own} is not in the layer table (tests/test_layout.py)")
                continue
            for name in sorted(external[module] & NO_BLENDER_IN_CORE):
                problems.append(f"{module} imports {name}: core never imports Blender")
            for target in sorted(targets):
                tparts = target.split(".")
                if tparts[0] != "core":
                    problems.append(f"{module} imports {target}: core imports nothing outside core")
                elif own and len(tparts) > 1 and tparts[1] != own and tparts[1] not in CORE_LAYERS.get(own, ()):
                    problems.append(f"{module} imports {target}: core.{own} may import only "
                                    f"{sorted(CORE_LAYERS.get(own, ())) or 'nothing else in core'}")
        elif (part := _blender_part(module)) is not None:
            rank = BLENDER_SIDE.index(part)
            for target in sorted(targets):
                tpart = _blender_part(target)
                if tpart is not None and BLENDER_SIDE.index(tpart) > rank:
                    problems.append(f"{module} imports {target}: {part or 'the extension root'} sits below "
                                    f"{tpart or 'the extension root'}")
    return problems


# ------------------------------------------------------------------ tests ---

def test_repository_has_no_import_cycles():
    graph, _ = import_graph(ROOT)
    assert "core.retarget.pipeline" in graph and "cli" in graph, "the checker did not find the tree"
    assert cycles(graph) == []


def test_dependencies_point_one_way():
    graph, external = import_graph(ROOT)
    assert layer_violations(graph, external) == []


def test_every_core_package_says_what_it_holds_and_may_import():
    for package in CORE_LAYERS:
        init = ROOT / "core" / package / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init}: no docstring"
        allowed = CORE_LAYERS[package]
        assert all(f"core.{name}" in doc for name in allowed), f"{init}: docstring does not name {sorted(allowed)}"
    packages = {p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(CORE_LAYERS)
    assert not [p.name for p in (ROOT / "core").glob("*.py") if p.name != "__init__.py"], \
        "modules belong in a capability package, not loose in core/"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_checker_finds_a_cycle_through_a_lazy_import(tmp_path):
    root = _tree(tmp_path, {
        "core/__init__.py": "", "core/model/__init__.py": "",
        "core/model/a.py": "from .b import f\n",
        "core/model/b.py": "def f():\n    from .a import g\n",
    })
    graph, _ = import_graph(root)
    assert cycles(graph) == [["core.model.a", "core.model.b"]]


@pytest.mark.parametrize("rel, text, expected", [
    ("core/model/x.py", "from ..feet import plant\n", "core.model may import only"),
    ("core/motion/x.py", "from ...operators import common\n", "core imports nothing outside core"),
    ("core/motion/y.py", "import bpy\n", "core never imports Blender"),
    ("core/extra/__init__.py", "", None),
    ("operators/x.py", "from ..cli import common\n", "operators sits below cli"),
])
def test_checker_finds_upward_imports(tmp_path, rel, text, expected):
    root = _tree(tmp_path, {
        "__init__.py": "", "core/__init__.py": "", "core/model/__init__.py": "", "core/motion/__init__.py": "",
        "core/feet/__init__.py": "", "core/feet/plant.py": "", "operators/__init__.py": "",
        "operators/common.py": "", "cli/__init__.py": "", "cli/common.py": "", rel: text,
    })
    if rel.startswith("core/extra"):
        (root / "core/extra/m.py").write_text("")
        expected = "not in the layer table"
    graph, external = import_graph(root)
    problems = layer_violations(graph, external)
    assert any(expected in p for p in problems), problems
