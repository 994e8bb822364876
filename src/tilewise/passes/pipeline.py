"""The lowering pipeline: kernel IR with tile calls -> flat IR (docs/ir.md).

The whole pipeline is the list :data:`PASSES`; each pass is a named function
``(func, state) -> func``. :func:`lower` runs them in order and returns a
:class:`Lowered` with the flat function, the dispatch log and the input kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..ir.stmt import PrimFunc
from ..ir.verify import verify
from .check_limits import check_limits
from .check_targets import check_targets
from .dead_code import dead_code
from .flatten import flatten
from .simplify import simplify


@dataclass
class Lowered:
    """The result of :func:`lower`: ``func`` is flat IR, ``kernel`` the input."""

    func: PrimFunc
    dispatch_log: list = field(default_factory=list)
    kernel: PrimFunc | None = None
    target: object = None


def _dispatch(func: PrimFunc, out: Lowered) -> PrimFunc:
    from ..tile.dispatch import dispatch

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
    ("check-limits", lambda f, out: check_limits(f, out.target)),
    ("verify-flat", lambda f, out: verify(f, flat=True)),
]


def _as_target(target):
    from ..target import Target

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
