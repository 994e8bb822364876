"""The table's instruction traits agree with the simulator semantics.

Which instructions can block and which access shared memory through the async proxy is not
listed a second time here: it is *derived* from the semantics. Each mechanism is marked
where the simulator implements it (``@mechanism("blocks")`` on the scheduler's wait,
``@mechanism("async_proxy")`` on the copy engine's shared-memory accesses); an instruction
whose semantics can reach a marked function (following calls and function references
through every module of ``tilewise.sim``, methods by name) must declare the matching trait
on its row. The walk over-approximates (a method name reaches every method of that name),
which can only ask for more declarations, never fewer.
"""

import ast
import inspect
import pkgutil
import textwrap
from functools import lru_cache

import pytest

import tilewise.sim
from tilewise.ptx.table import FAMILIES, PTX_OPS, ROWS
from tilewise.ptx.traits import ASYNC, COMPLETIONS
from tilewise.sim.registry import MECHANISMS, load_all


def _sim_modules():
    load_all()
    import importlib

    out = [tilewise.sim]
    for info in pkgutil.walk_packages(tilewise.sim.__path__, "tilewise.sim."):
        out.append(importlib.import_module(info.name))
    return out


def _functions_of(obj, module):
    """The functions defined in ``module``: module level, and methods of its classes."""
    for value in vars(obj).values():
        fn = getattr(value, "fget", value)  # properties: their getter
        fn = getattr(fn, "__func__", fn)  # staticmethod / classmethod
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            yield fn
        elif inspect.isclass(value) and value.__module__ == module.__name__ and obj is module:
            yield from _functions_of(value, module)


@lru_cache(maxsize=1)
def _index():
    """name -> every simulator function or method of that name, and the names of the
    methods that are property getters (reached by an attribute read)."""
    by_name: dict[str, list] = {}
    props: set[str] = set()
    for mod in _sim_modules():
        for fn in _functions_of(mod, mod):
            by_name.setdefault(fn.__name__, []).append(fn)
        for cls in vars(mod).values():
            if inspect.isclass(cls) and cls.__module__ == mod.__name__:
                props |= {k for k, v in vars(cls).items() if isinstance(v, property)}
    return by_name, props


@lru_cache(maxsize=None)  # every trait test walks the same simulator functions
def _tree(fn):
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return None


def _in_sim(obj) -> bool:
    return getattr(obj, "__module__", "").startswith("tilewise.sim")


def _callees(fn):
    """The simulator functions ``fn`` calls or refers to: names it resolves to simulator
    functions (called or passed on), classes it builds (their ``__init__``), methods it
    calls (every method of that name) and properties it reads."""
    tree = _tree(fn)
    if tree is None:
        return
    by_name, props = _index()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if id(node) in called or node.attr in props:
                yield from by_name.get(node.attr, ())
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            target = fn.__globals__.get(node.id)
            if inspect.isfunction(target) and _in_sim(target):
                yield target
            elif inspect.isclass(target) and _in_sim(target) and "__init__" in vars(target):
                yield target.__init__


def reached(fn) -> set[str]:
    """The mechanisms the semantics ``fn`` can reach."""
    seen, todo, found = set(), [fn], set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        kind = getattr(f, "__tw_mechanism__", None)
        if kind is not None:
            found.add(kind)
            continue
        todo.extend(_callees(f))
    return found


def _declared(op, kind) -> bool:
    return op.traits.blocks if kind == "blocks" else op.traits.proxy == ASYNC


NAMES = sorted(PTX_OPS)


@pytest.mark.parametrize("name", NAMES)
def test_the_row_declares_what_its_semantics_do(name):
    op, fn = PTX_OPS[name], load_all()[name]
    missing = [k for k in sorted(reached(fn)) if not _declared(op, k)]
    assert not missing, (f"T.{name}: its simulator semantics ({fn.__module__}.{fn.__name__}) "
                         f"reach {missing}; declare " + ", ".join(MECHANISMS[k] for k in missing)
                         + f" on its row in {_row_file(op)}")


def _row_file(op) -> str:
    """The family module that writes ``op``'s row (``ptx/rows_*.py``)."""
    name = op.alias_of or op.name
    family = next(f for f in FAMILIES if any(r.name == name for r in f.ROWS))
    return f"ptx/{family.__name__.rsplit('.', 1)[1]}.py"


def test_the_derivation_finds_the_mechanisms():
    """The walk is not vacuous: it finds the known blocking and async-proxy instructions."""
    sem = load_all()
    assert "blocks" in reached(sem["ptx.mbarrier.try_wait"])
    assert "blocks" in reached(sem["ptx.bar.sync"])
    assert "blocks" in reached(sem["cuda.cluster_sync"])
    assert "async_proxy" in reached(sem["ptx.cp_async.bulk.tensor.s2g"])
    assert "async_proxy" in reached(sem["ptx.cp_async.bulk.g2s"])
    assert not reached(sem["ptx.elect_sync"])


def test_blocking_rows_are_exactly_those_whose_semantics_block():
    """The other direction for ``blocks``: a row that declares it and cannot block would make
    the simulator fork branches for nothing."""
    sem = load_all()
    for op in ROWS:
        if op.traits.blocks:
            assert "blocks" in reached(sem[op.name]), op.name


def test_every_asynchronous_completion_has_an_instruction_that_completes_it():
    used = {op.traits.completion for op in ROWS} - {"none"}
    completed = {op.traits.completes for op in ROWS} - {None}
    assert used <= completed, used - completed
    assert used | completed <= set(COMPLETIONS)


def test_registers_read_and_written_follow_the_operand_kinds():
    wg, ld, st = (PTX_OPS[n] for n in ("ptx.wgmma.mma_async", "ptx.tcgen05.ld",
                                       "ptx.tcgen05.st"))
    assert (wg.reads_regs, wg.writes_regs) == (True, True)
    assert (ld.reads_regs, ld.writes_regs) == (False, True)
    assert (st.reads_regs, st.writes_regs) == (True, False)
