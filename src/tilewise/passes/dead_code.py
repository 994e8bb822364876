"""Drop what the flat program never uses: locals whose value is never read (and computes
nothing with an effect), and buffer declarations nothing refers to — the register views
dispatch has consumed, a shared tile only the removed path used.

Iterates to a fix point (removing one local can orphan the locals it read), capped.
"""

from __future__ import annotations

from ..errors import VerifyError
from ..ir.expr import Call, Var
from ..ir.stmt import Buffer, DeclBuffer, LetStmt, PrimFunc, SeqStmt, seq
from ..ir.visitor import Mutator, walk

MAX_ROUNDS = 16


def _used(func: PrimFunc) -> tuple[set[int], set[int]]:
    """ids of Vars read and of Buffers referred to (a declaration is not a use)."""
    vars_, bufs = set(), set()

    def look(n):
        if isinstance(n, Var):
            vars_.add(id(n))
        elif isinstance(n, Buffer):
            bufs.add(id(n))
            if n.view_of is not None:
                bufs.add(id(n.view_of))

    class _Uses(Mutator):
        def visit_LetStmt(self, s):
            walk(s.value, look)
            return s

        def visit_DeclBuffer(self, s):
            b = s.buffer
            if b.view_of is not None:
                bufs.add(id(b.view_of))
            if b.allocated_addr is not None:
                walk(b.allocated_addr, look)
            return s

        def visit(self, node):
            if isinstance(node, (Var, Buffer)):
                look(node)
                return node
            return super().visit(node)

    _Uses().visit(func.body)
    return vars_, bufs


def _pure(e) -> bool:
    calls = []
    walk(e, lambda n: calls.append(n) if isinstance(n, Call) else None)
    return not calls


class _Drop(Mutator):
    def __init__(self, used_vars, used_bufs):
        self.used_vars, self.used_bufs = used_vars, used_bufs
        self.dropped = 0

    def visit_SeqStmt(self, s: SeqStmt):
        kept = []
        for x in s.stmts:
            if isinstance(x, LetStmt) and id(x.var) not in self.used_vars and _pure(x.value):
                self.dropped += 1
                continue
            if isinstance(x, DeclBuffer) and id(x.buffer) not in self.used_bufs:
                self.dropped += 1
                continue
            kept.append(self.visit(x))
        return seq(*kept)


def dead_code(func: PrimFunc) -> PrimFunc:
    for _ in range(MAX_ROUNDS):
        drop = _Drop(*_used(func))
        body = drop.visit(func.body)
        if not drop.dropped:
            return func
        func = func.with_body(body)
    raise VerifyError(f"dead-code elimination did not settle after {MAX_ROUNDS} rounds",
                      func.span)
