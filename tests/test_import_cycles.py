"""No import cycles between rigwise's modules, function-level imports included.

The graph is read from the source with ``ast`` (nothing is imported): every ``import`` and
``from ... import`` anywhere in a module (top level, functions, methods) is an edge to the
rigwise module it names; ``from pkg import name`` is an edge to ``pkg.name`` when that is a
module, else to ``pkg`` itself. Imports under ``if TYPE_CHECKING:`` are left out: they never
run, they only name types for checkers. A cycle is a strongly connected set of two or more
modules; the test names each one with a path through it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import rigwise

SRC = Path(rigwise.__file__).parent


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for the package rooted at ``root`` (packages by __init__.py)."""
    package = root.name
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (anywhere in its body)."""
    files = module_files(root)
    package = root.name
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _absolute(name, path.name == "__init__.py", node)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in files:  # import a.b.c of a module a.b
                    target = target.rpartition(".")[0]
                if target.split(".")[0] == package and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative, so deep graphs cannot overflow the stack
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
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
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def _path_through(graph: dict[str, set[str]], members: list[str]) -> str:
    """One cycle inside a strongly connected set, as 'a -> b -> a'."""
    inside = set(members)
    start = members[0]
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & inside):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return " -> ".join([start, *reversed(path[:-1]), start])
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return " <-> ".join(members)


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_rigwise_has_no_import_cycles() -> None:
    graph = import_graph(SRC)
    assert len(graph) > 100  # the walk found the package
    found = [_path_through(graph, members) for members in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_the_checker_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from pkg import c\n    return c\n",
            "c.py": "from . import a\n",
            "d.py": "import pkg.a\n",
        },
    )
    graph = import_graph(root)
    assert graph["pkg.c"] == {"pkg.a"} and graph["pkg.d"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert _path_through(graph, ["pkg.a", "pkg.b", "pkg.c"]) == "pkg.a -> pkg.b -> pkg.c -> pkg.a"


def test_the_checker_passes_a_layered_package_and_skips_type_checking_imports(
    tmp_path: Path,
) -> None:
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "low.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.high import Thing\n"
            ),
            "high.py": "from pkg import low\nfrom pkg.sub.leaf import x\n",
            "sub/__init__.py": "",
            "sub/leaf.py": "from .. import low\nx = 1\n",
        },
    )
    graph = import_graph(root)
    assert graph["pkg.low"] == set()
    assert graph["pkg.high"] == {"pkg.low", "pkg.sub.leaf"}
    assert graph["pkg.sub.leaf"] == {"pkg.low"}
    assert cycles(graph) == []
