"""The pipeline driver: kernel IR with tile calls -> flat IR (docs/ir.md), and
:func:`explain`.

The whole pipeline is the list :data:`PASSES`; each pass is a named function
``(func, state) -> func`` from :mod:`tilewise.passes` or the dispatch pass of
:mod:`tilewise.tile`. :func:`lower` runs them in order and returns a :class:`Lowered` with
the flat function, the dispatch log and the input kernel. This module sits above both
packages: neither imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import DispatchError, performance_warning
from .ir.stmt import PrimFunc, as_prim_func
from .ir.verify import verify
from .passes.check_limits import check_limits
from .passes.check_operands import check_operands, check_params
from .passes.check_targets import check_targets
from .passes.dead_code import dead_code
from .passes.flatten import flatten
from .passes.shared_plan import SharedPlan, plan_shared
from .passes.simplify import simplify
from .target import Target
from .tile.dispatch import dispatch
from .tile.registry import GENERATION


@dataclass
class Lowered:
    """The result of :func:`lower`, what the code generator and the simulator consume:
    ``func`` is flat IR, ``kernel`` the input, ``target`` the :class:`~tilewise.target.Target`
    it was lowered for (built once, here), ``features`` the target features its
    instructions need, ``uses_math`` whether it calls libdevice and ``shared`` the layout
    of its shared memory (:class:`~tilewise.passes.shared_plan.SharedPlan`: the one both
    executors and the launch limits read)."""

    func: PrimFunc
    target: Target
    dispatch_log: list = field(default_factory=list)
    kernel: PrimFunc | None = None
    features: frozenset[str] = frozenset()
    uses_math: bool = False
    shared: SharedPlan | None = None


def _dispatch(func: PrimFunc, out: Lowered) -> PrimFunc:
    """Dispatch every tile call. When nothing accepts a call, the user's own instructions
    are checked against the target first: a missing target feature (a tcgen05 kernel
    compiled for sm_90a) is the root cause to report, not the copy that could not be
    dispatched on that target."""
    try:
        new, log = dispatch(func, out.target)
    except DispatchError:
        check_targets(func, out.target)
        raise
    out.dispatch_log.extend(log)
    _warn_slow_paths(log)
    return new


def _warn_slow_paths(log) -> None:
    for d in log:
        for text in d.slow:
            performance_warning(f"{d.call}: {text}", d.span)


def _check_targets(func: PrimFunc, out: Lowered) -> PrimFunc:
    out.features, out.uses_math = check_targets(func, out.target)
    return func


def _plan_shared(func: PrimFunc, out: Lowered) -> PrimFunc:
    out.shared = plan_shared(func)
    return func


PASSES: list[tuple[str, Callable[[PrimFunc, Lowered], PrimFunc]]] = [
    ("verify-input", lambda f, out: verify(f)),
    ("dispatch", _dispatch),
    ("check-targets", _check_targets),
    ("flatten", lambda f, out: flatten(f)),
    ("simplify", lambda f, out: simplify(f)),
    ("dead-code", lambda f, out: dead_code(f)),
    ("plan-shared", _plan_shared),
    ("check-limits", lambda f, out: check_limits(f, out.target, out.shared)),
    ("check-operands", lambda f, out: check_operands(f)),
    ("check-params", lambda f, out: check_params(f, out.target.ptx_version_for(out.features))),
    ("verify-flat", lambda f, out: verify(f, flat=True)),
]


def lower(func: PrimFunc, target: str | Target, until: str | None = None) -> Lowered:
    """Run :data:`PASSES` on ``func`` for ``target`` (a Target or its name, a TargetError
    if unknown); stop after the pass named ``until`` when given (for debugging and tests).

    A kernel's whole lowering for a target is kept on the kernel (IR is immutable, and the
    passes read nothing else): simulating or compiling it again skips the passes and
    repeats only their performance warnings."""
    func = as_prim_func(func)
    target = Target(target)
    key = (target.name, GENERATION[0])  # a variant registered since: lower afresh
    memo = func.__dict__.get(_MEMO)
    if until is None and memo is not None and key in memo:
        out = memo[key]
        _warn_slow_paths(out.dispatch_log)
        return out
    out = Lowered(func=func, target=target, kernel=func)
    f = func
    for name, run in PASSES:
        f = run(f, out)
        if name == until:
            break
    out.func = f
    if until is None:
        if memo is None:
            memo = {}
            object.__setattr__(func, _MEMO, memo)  # beside the frozen fields, not one of them
        memo[key] = out
    return out


_MEMO = "_tilewise_lowered"  # a PrimFunc's {(target name, registry generation): Lowered}


def explain(func: PrimFunc, target) -> str:
    """Every tile call of ``func``, every candidate, chosen or the reason it declined."""
    func = as_prim_func(func)
    try:
        log = lower(func, target, until="dispatch").dispatch_log
        tail = ""
    except DispatchError as e:
        log = getattr(e, "dispatch_log", [])
        tail = f"\n{e}"
    head = f"dispatch of {func.name} for {target}:"
    body = "\n".join(d.render() for d in log) or "    (no tile-primitive calls)"
    return f"{head}\n{body}{tail}"
