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

from .errors import DispatchError
from .ir.stmt import PrimFunc
from .ir.verify import verify
from .passes.check_targets import check_targets
from .passes.dead_code import dead_code
from .passes.flatten import flatten
from .passes.simplify import simplify
from .tile.dispatch import dispatch


@dataclass
class Lowered:
    """The result of :func:`lower`: ``func`` is flat IR, ``kernel`` the input."""

    func: PrimFunc
    dispatch_log: list = field(default_factory=list)
    kernel: PrimFunc | None = None
    target: object = None


def _dispatch(func: PrimFunc, out: Lowered) -> PrimFunc:
    new, log = dispatch(func, out.target)
    out.dispatch_log.extend(log)
    return new


PASSES: list[tuple[str, Callable[[PrimFunc, Lowered], PrimFunc]]] = [
    ("verify-input", lambda f, out: verify(f)),
    ("check-targets", lambda f, out: check_targets(f, out.target)),
    ("dispatch", _dispatch),
    ("check-dispatched-targets", lambda f, out: check_targets(f, out.target)),
    ("flatten", lambda f, out: flatten(f)),
    ("simplify", lambda f, out: simplify(f)),
    ("dead-code", lambda f, out: dead_code(f)),
    ("verify-flat", lambda f, out: verify(f, flat=True)),
]


def _as_target(target):
    from .target import Target

    return target if isinstance(target, Target) else Target(target)


def lower(func: PrimFunc, target, until: str | None = None) -> Lowered:
    """Run :data:`PASSES` on ``func`` for ``target`` (a Target or its name); stop after
    the pass named ``until`` when given (for debugging and tests)."""
    out = Lowered(func=func, kernel=func, target=_as_target(target))
    f = func
    for name, run in PASSES:
        f = run(f, out)
        if name == until:
            break
    out.func = f
    return out


def explain(func: PrimFunc, target) -> str:
    """Every tile call of ``func``, every candidate, chosen or the reason it declined."""
    try:
        log = lower(func, target, until="dispatch").dispatch_log
        tail = ""
    except DispatchError as e:
        log = getattr(e, "dispatch_log", [])
        tail = f"\n{e}"
    head = f"dispatch of {func.name} for {target}:"
    body = "\n".join(d.render() for d in log) or "    (no tile-primitive calls)"
    return f"{head}\n{body}{tail}"
