"""The house rules of python-engines, checked on the source: no import cycle between modules (imports inside
functions and under TYPE_CHECKING count: they are the same dependency, only later), and no source file over
400 lines. Each rule is also shown to fire on a small made-up package."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rollflow_engines"
MAX_LINES = 400


def modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    found = {}
    for file in package.rglob("*.py"):
        parts = list(file.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (file, is_package)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    mods = modules(package)
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, (file, is_package) in mods.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def long_files(package: Path) -> list[str]:
    return [f"{f.relative_to(package.parent)}: {n} lines" for f in sorted(package.rglob("*.py"))
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES]


def test_no_import_cycle_in_python_engines():
    assert cycles(import_graph(PACKAGE)) == []


def test_no_source_file_over_400_lines():
    assert long_files(PACKAGE) == []


@pytest.fixture
def made_up(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .b import B\n")
    (pkg / "a.py").write_text("def f():\n    from .sub.b import B  # lazy: still a dependency\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import f\nB = 1\n")
    (pkg / "c.py").write_text("from . import a\n" + "x = 1\n" * MAX_LINES)
    return pkg


def test_the_rules_fire_on_a_lazy_and_a_type_only_cycle_and_a_long_file(made_up):
    assert cycles(import_graph(made_up)) == [["pkg.a", "pkg.sub.b"]]
    assert long_files(made_up) == [f"pkg/c.py: {MAX_LINES + 1} lines"]
