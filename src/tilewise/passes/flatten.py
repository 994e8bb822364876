"""Lower to the flat IR: apply layouts to indices, flatten buffers to 1-D, drop
tensor-memory declarations.

Every buffer with more than one dimension or a layout becomes a one-dimensional buffer
of its storage size (:func:`indexing.storage_size`), with the same name, dtype, scope and
``data``. Every ``BufferLoad``/``BufferStore``/``AddressOf`` gets one index: the element
offset of :func:`indexing.memory_offset`. A ``DeclBuffer`` of tensor memory is removed;
any use left after dispatch is an error at the user's line (dispatch must have replaced
it by tcgen05 calls carrying the address as a value).
"""

from __future__ import annotations

import dataclasses

from ..errors import CompileError
from ..ir.expr import AddressOf, BufferLoad, BufferRegion, const
from ..ir.stmt import Buffer, BufferStore, DeclBuffer, PrimFunc, SeqStmt, seq
from ..ir.visitor import Mutator
from .indexing import memory_offset, storage_size


class _Flatten(Mutator):
    def __init__(self):
        self.map: dict[int, Buffer] = {}

    def buffer(self, b: Buffer, span=None) -> Buffer:
        new = self.map.get(id(b))
        if new is not None:
            return new
        if b.scope == "tmem":
            raise CompileError(f"tensor-memory buffer {b.name!r} is used after dispatch", span,
                               hint="tensor memory is reached through Tx.*.copy_async with "
                               "a tcgen05 variant only")
        view_of = self.buffer(b.view_of, span) if b.view_of is not None else None
        if len(b.shape) == 1 and b.layout is None and view_of is b.view_of and not b.strides:
            new = b
        else:
            size = storage_size(b.shape, b.layout, b.strides)
            new = dataclasses.replace(b, shape=(size,), layout=None, view_of=view_of,
                                      strides=None)
        self.map[id(b)] = new
        return new

    def index(self, b: Buffer, indices, span):
        flat = self.buffer(b, span)
        idx = self.visit(indices)
        if not idx:
            return flat, (const(0),)
        if flat is b and len(idx) == 1:
            return flat, idx
        return flat, (memory_offset(b.layout, b.shape, idx, strides=b.strides),)

    def visit_BufferLoad(self, e: BufferLoad):
        b, idx = self.index(e.buffer, e.indices, e.span)
        return BufferLoad(b, idx, span=e.span)

    def visit_AddressOf(self, e: AddressOf):
        b, idx = self.index(e.buffer, e.indices, e.span)
        return AddressOf(b, idx, span=e.span)

    def visit_BufferStore(self, s: BufferStore):
        b, idx = self.index(s.buffer, s.indices, s.span)
        return BufferStore(b, idx, self.visit(s.value), span=s.span)

    def visit_BufferRegion(self, r: BufferRegion):
        raise CompileError(f"a region of {r.buffer.name!r} remains after dispatch", r.span)

    def visit_SeqStmt(self, s: SeqStmt):
        out = [self.visit(x) for x in s.stmts]
        if all(a is b for a, b in zip(out, s.stmts)):
            return s
        return seq(*out)

    def visit_DeclBuffer(self, s: DeclBuffer):
        if s.buffer.scope == "tmem":
            return SeqStmt(())
        return DeclBuffer(self.buffer(s.buffer, s.span), span=s.span)


def flatten(func: PrimFunc) -> PrimFunc:
    """The flat form of ``func`` (see docs/ir.md, "Flat IR")."""
    m = _Flatten()
    buffer_map = tuple((v, m.buffer(b, func.span)) for v, b in func.buffer_map)
    body = m.visit(func.body)
    return dataclasses.replace(func, buffer_map=buffer_map, body=body)
