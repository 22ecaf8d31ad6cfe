"""The import graph of ``syncer/`` has no cycle: every module's imports, at module level and
inside functions, read with ``ast`` (those under ``if TYPE_CHECKING:`` are left out: they never
run). ``from a.b import c`` imports the module ``a.b.c`` when there is one, else ``a.b``; the
packages a dotted name passes through are not counted (Python initialises them first anyway)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "syncer"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(name: str, path: Path) -> set[str]:
    """The modules of ``syncer`` that module ``name`` imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            subs = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(base)
        todo.extend(ast.iter_child_nodes(node))
    out = set()
    for module in found:
        while module and module not in MODULES:
            module = module.rpartition(".")[0]
        if module and module != name:
            out.add(module)
    return out


def graph() -> dict[str, set[str]]:
    return {name: _imported(name, path) for name, path in MODULES.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            here, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on:
                    low[here] = min(low[here], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[here])
            if low[here] == index[here]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == here:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def test_the_reader_sees_imports_inside_functions_and_skips_type_checking_blocks() -> None:
    edges = graph()
    assert "syncer.sources.dispatch" in edges["syncer.gather.oneshot"]  # imported inside likely_lists
    assert "syncer.config" not in edges["syncer.cache"]  # only under TYPE_CHECKING
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_syncer_imports_itself_back() -> None:
    edges = graph()
    found = cycles(edges)
    shown = [" -> ".join(group) + ": " + "; ".join(f"{a} -> {b}" for a in group for b in sorted(edges[a])
                                                   if b in group) for group in found]
    assert shown == []
