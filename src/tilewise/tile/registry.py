"""The dispatch registry: which variants implement which tile primitive.

A variant registers itself at the bottom of its own file::

    @register_dispatch("copy_async", "cuda", variant="ldgsts", priority=20,
                       when=[predicate("global -> shared", direction, pairs=...)])
    def ldgsts(ctx: DispatchContext) -> Stmt: ...

Candidates are tried by descending priority. Two variants of one op at the same priority
are an error at registration (no alphabetical tie-break). A predicate returns ``True`` or
``(False, reason)``; the implementation may still decline with :class:`DispatchFail`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import DispatchError

TARGET_KINDS = ("cuda",)


class DispatchFail(Exception):
    """Raised by a variant (or a predicate) that cannot implement the call; ``reason``
    says why, in the user's terms."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Predicate:
    """A named condition on a :class:`DispatchContext`; ``kw`` are fixed arguments."""

    name: str
    fn: Callable
    kw: tuple = ()

    def __call__(self, ctx) -> tuple[bool, str | None]:
        try:
            res = self.fn(ctx, **dict(self.kw))
        except DispatchFail as e:
            return False, e.reason
        if res is True or (isinstance(res, tuple) and res and res[0] is True):
            return True, None
        if isinstance(res, tuple) and len(res) == 2 and res[0] is False:
            return False, str(res[1])
        return False, f"{self.name}: predicate returned {res!r}"


def predicate(name: str, fn: Callable, **kw) -> Predicate:
    """A predicate ``fn(ctx, **kw) -> True | (False, reason)`` named ``name``."""
    return Predicate(name, fn, tuple(sorted(kw.items())))


@dataclass
class Variant:
    op: str
    target_kind: str
    name: str
    priority: int
    impl: Callable
    when: tuple[Predicate, ...] = field(default_factory=tuple)
    module: str = ""

    def check(self, ctx) -> tuple[bool, str | None]:
        for p in self.when:
            ok, reason = p(ctx)
            if not ok:
                return False, reason
        return True, None


_REGISTRY: dict[tuple[str, str], list[Variant]] = {}


def _add(v: Variant) -> None:
    table = _REGISTRY.setdefault((v.op, v.target_kind), [])
    table[:] = [x for x in table if x.name != v.name]  # a reloaded module re-registers
    for other in table:
        if other.priority == v.priority:
            raise DispatchError(
                f"variants {other.name!r} and {v.name!r} of {v.op} both have priority "
                f"{v.priority}", hint="give every variant of one primitive its own priority")
    table.append(v)
    table.sort(key=lambda x: -x.priority)


def register_dispatch(op: str, target_kind: str = "cuda", *, variant: str, priority: int,
                      when: Sequence[Predicate] = ()) -> Callable:
    """Decorator registering ``fn(ctx) -> Stmt`` as variant ``variant`` of ``op``."""
    if target_kind not in TARGET_KINDS:
        raise DispatchError(f"unknown target kind {target_kind!r}",
                            hint="known: " + ", ".join(TARGET_KINDS))

    def deco(fn: Callable) -> Callable:
        _add(Variant(op, target_kind, variant, priority, fn, tuple(when), fn.__module__))
        return fn

    return deco


def candidates(op: str, target_kind: str = "cuda") -> list[Variant]:
    """Registered variants of ``op``, highest priority first."""
    load_variants()
    return list(_REGISTRY.get((op, target_kind), ()))


_LOADED = False


def load_variants() -> None:
    """Import every module under ``tilewise.variants`` (each registers itself)."""
    global _LOADED
    if _LOADED:
        return
    from .._discover import import_all

    import_all("tilewise.variants")
    _LOADED = True
