"""The dispatch registry: which variants implement which tile primitive.

A variant registers itself at the bottom of its own file::

    @register_dispatch("copy_async", "cuda", variant="ldgsts", priority=20,
                       options=(O.PREFETCH_SIZE,),
                       when=[predicate("global -> shared", direction, pairs=...)])
    def ldgsts(ctx: DispatchContext) -> Stmt: ...

Candidates are tried by descending priority. Two variants of one op at the same priority
are an error at registration (no alphabetical tie-break). A predicate returns ``True`` or
``(False, reason)``; the implementation may still decline with :class:`DispatchFail`.

``options=`` is the variant's allow-list (:mod:`.options`): the options it honours. A call
that gives an option the variant does not list declines it before its predicates run, with
the reason ``declines=`` holds for that option (or for ``"*"``, any), else one naming the
variants that do take it. A primitive's options are the union of its variants'
(:func:`options_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import DispatchError
from .options import DISPATCH, Option

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
    options: tuple[Option, ...] = ()  # the options it honours (dispatch= is every variant's)
    declines: tuple = ()  # (option or "*", reason) for options it does not honour

    def honours(self, name: str) -> bool:
        return name == DISPATCH.name or any(o.name == name for o in self.options)

    def check(self, ctx) -> tuple[bool, str | None]:
        for name, _ in ctx.call.options:
            if not self.honours(name):
                return False, self._decline(name)
        for p in self.when:
            ok, reason = p(ctx)
            if not ok:
                return False, reason
        return True, None


    def _decline(self, name: str) -> str:
        reasons = dict(self.declines)
        why = reasons.get(name, reasons.get("*"))
        if why is not None:
            return why.format(option=name)
        owners = [v.name for v in _REGISTRY.get((self.op, self.target_kind), ())
                  if v.honours(name)]
        if not owners:
            return f"{name}= is not an option of the {self.name} variant"
        which = " or ".join(f'dispatch="{o}"' for o in owners)
        return (f"{name}= is an option of the {', '.join(owners)} variant"
                f"{'s' if len(owners) > 1 else ''}; this variant does not implement it (pass "
                f"{which})")


_REGISTRY: dict[tuple[str, str], list[Variant]] = {}
GENERATION = [0]  # bumped by every registration: a kernel's kept lowering is of one table


def _check_options(v: Variant, table: list[Variant]) -> None:
    """Every option is an :class:`Option` of one definition across the variants of an op."""
    for o in v.options:
        if not isinstance(o, Option) or o.name == DISPATCH.name:
            raise DispatchError(f"variant {v.name!r} of {v.op}: options= lists {o!r}; list "
                                "the Option definitions of tilewise.tile.options it honours "
                                "(dispatch= is every variant's)")
        for other in table:
            same = next((x for x in other.options if x.name == o.name), None)
            if same is not None and same != o:
                raise DispatchError(f"variants {other.name!r} and {v.name!r} of {v.op} define "
                                    f"option {o.name!r} differently",
                                    hint="name one Option definition (tilewise.tile.options)")


def _add(v: Variant) -> None:
    table = _REGISTRY.setdefault((v.op, v.target_kind), [])
    table[:] = [x for x in table if x.name != v.name]  # a reloaded module re-registers
    _check_options(v, table)
    for other in table:
        if other.priority == v.priority:
            raise DispatchError(
                f"variants {other.name!r} and {v.name!r} of {v.op} both have priority "
                f"{v.priority}", hint="give every variant of one primitive its own priority")
    table.append(v)
    table.sort(key=lambda x: -x.priority)
    GENERATION[0] += 1


def register_dispatch(op: str, target_kind: str = "cuda", *, variant: str, priority: int,
                      when: Sequence[Predicate] = (), options: Sequence[Option] = (),
                      declines: dict | None = None) -> Callable:
    """Decorator registering ``fn(ctx) -> Stmt`` as variant ``variant`` of ``op``;
    ``options``: the options it honours; ``declines``: {option or "*": reason} for the
    options it does not (``{option}`` in a reason is replaced by the option's name)."""
    if target_kind not in TARGET_KINDS:
        raise DispatchError(f"unknown target kind {target_kind!r}",
                            hint="known: " + ", ".join(TARGET_KINDS))

    def deco(fn: Callable) -> Callable:
        _add(Variant(op, target_kind, variant, priority, fn, tuple(when), fn.__module__,
                     tuple(options), tuple(sorted((declines or {}).items()))))
        return fn

    return deco


def options_of(op: str, target_kind: str = "cuda") -> tuple[Option, ...]:
    """The options of primitive ``op``: ``dispatch=`` and the union of its variants'
    allow-lists (highest priority first)."""
    out = {DISPATCH.name: DISPATCH}
    for v in candidates(op, target_kind):
        for o in v.options:
            out.setdefault(o.name, o)
    return tuple(out.values())


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
