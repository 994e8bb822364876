"""The import graph of ``src/tilewise`` has no loops.

Every ``import`` / ``from ... import`` of a tilewise module counts, at module level,
inside a function (a lazy import is still a dependency) or under ``if TYPE_CHECKING:`` (an
annotation that names a type is a dependency too). Registration by discovery
(``tilewise._discover``: the variants, the LLVM lowerings, the simulator semantics) imports
by name at run time and is therefore not an edge: that is the one kind of loop the
architecture allows. ``tile/`` (dispatch) sits below ``script/`` (the parser) and never
imports it.
"""

import ast
import pathlib

import tilewise

ROOT = pathlib.Path(tilewise.__file__).parent

#: Loops still to remove, with why they remain. Keep this empty.
KNOWN: set = set()  # loops allowed, each with its reason (none today)


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _imports(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(name: str, is_pkg: bool, node, mods) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in mods}
    if node.level:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = set()
    for a in node.names:
        sub = f"{target}.{a.name}"
        out.add(sub if sub in mods else target)
    return {t for t in out if t in mods and t != name}


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: {t for node in _imports(ast.parse(p.read_text()))
                   for t in _targets(name, is_pkg, node, mods)}
            for name, (p, is_pkg) in mods.items()}


def loops(graph) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    g = import_graph()
    assert "tilewise.pipeline" in g and "tilewise.tile.dispatch" in g["tilewise.pipeline"]
    assert "tilewise.passes.flatten" in g["tilewise.pipeline"]


def test_no_import_loops():
    found = [c for c in loops(import_graph()) if frozenset(c) not in KNOWN]
    assert not found, "import loops: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


def test_the_known_loops_are_still_there():
    """An entry of KNOWN that no longer loops must be removed from the list."""
    present = {frozenset(c) for c in loops(import_graph())}
    assert KNOWN <= present, KNOWN - present


def test_type_checking_imports_count():
    """An import under ``if TYPE_CHECKING:`` is an edge of the graph."""
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from tilewise.ir import stmt\n")
    mods = _modules()
    assert {t for n in _imports(tree) for t in _targets("x", False, n, mods)} == \
        {"tilewise.ir.stmt"}


def test_tile_does_not_import_the_parser():
    g = import_graph()
    bad = sorted(f"{n} -> {d}" for n, deps in g.items() if n.startswith("tilewise.tile")
                 for d in deps if d.startswith("tilewise.script"))
    assert not bad, bad


def test_the_pipeline_sits_above_tile_and_passes():
    g = import_graph()
    for name, deps in g.items():
        if name.startswith(("tilewise.tile", "tilewise.passes")):
            assert "tilewise.pipeline" not in deps, name
