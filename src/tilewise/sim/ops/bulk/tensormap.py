"""Tensor maps in the simulator: what ``cp.async.bulk.tensor`` reads and writes
(ptx-semantics.md §5; PTX ISA §5.5).

A :class:`SimTensorMap` is the host-side structure the simulator binds to a kernel's hidden
tensor-map parameter, built at ``simulate()`` from the array and the sizes exactly as the
runtime encodes the real one (same checks, :func:`tilewise.ptx.tma.launch_geometry`).

For a box at coordinates ``c`` (innermost first), element ``j`` of the box (box-linear
order, dimension 0 fastest) is tensor element ``x = c + j``:

* global: byte ``x0·es + Σ_{k≥1} x_k·stride_k`` of the array; ``x`` is *out of bounds* when
  some ``x_k < 0`` or ``x_k ≥ dim_k``: a load fills it (zeros, or PTX's canonical NaN with
  ``oob="nan"``), a store skips it;
* shared: byte ``dst + j·es + b``, swizzled by the absolute shared address
  (``ptx/tma.swizzle_bytes``: the 16-byte chunk index within a 128-byte row XORed with the
  row index modulo 2, 4 or 8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....ptx import tma
from ...memory import byte_span


@dataclass
class SimTensorMap:
    spec: tma.TensorMapSpec
    name: str  # the global buffer's
    space: int  # the buffer's global space
    dims: list[int]
    strides: list[int]  # bytes, dimensions 1..

    @property
    def rank(self) -> int:
        return self.spec.rank

    def elements(self, coords) -> tuple[np.ndarray, np.ndarray]:
        """(global byte offset, in bounds) of every box element, box-linear order."""
        box = self.spec.box
        j = np.indices(tuple(reversed(box))).reshape(len(box), -1)[::-1]  # innermost first
        x = j + np.asarray(coords, np.int64)[:, None]
        dims = np.asarray(self.dims, np.int64)[:, None]
        ok = ((x >= 0) & (x < dims)).all(axis=0)
        steps = np.asarray([self.spec.elem_bytes] + list(self.strides), np.int64)
        return (x * steps[:, None]).sum(axis=0), ok

    def shared_offsets(self, dst: int) -> np.ndarray:
        """Shared byte offsets the box's bytes occupy, box-linear order, swizzled."""
        return tma.swizzle_bytes(np.arange(dst, dst + self.spec.box_bytes, dtype=np.int64),
                                 self.spec.swizzle)

    def read_box(self, mem, coords) -> np.ndarray:
        """The box's bytes at ``coords``, out-of-bounds elements filled."""
        es = self.spec.elem_bytes
        offs, ok = self.elements(coords)
        data = np.empty((len(offs), es), np.uint8)
        data[:] = np.frombuffer(self._fill(), np.uint8)
        src = mem.space_bytes(self.space)
        data[ok] = src[byte_span(offs[ok], es)]
        return data.reshape(-1)

    def _fill(self) -> bytes:
        es = self.spec.elem_bytes
        if self.spec.oob == "nan":
            return tma.NAN_BITS[self.spec.dtype].to_bytes(es, "little")
        return bytes(es)

    def write_box(self, mem, coords, data: np.ndarray, combine=None) -> None:
        """Store the box's bytes ``data`` at ``coords``, out-of-bounds elements skipped;
        ``combine(old, new)`` (typed values) reduces into global memory instead."""
        es = self.spec.elem_bytes
        offs, ok = self.elements(coords)
        dst = mem.space_bytes(self.space)
        cols = byte_span(offs[ok], es)
        new = data.reshape(-1, es)[ok]
        if combine is not None:
            t = np.dtype(_np_dtype(self.spec.dtype))
            old = dst[cols].copy().view(t).reshape(-1)
            new = np.ascontiguousarray(combine(old, new.copy().view(t).reshape(-1)).astype(t))
            new = new.view(np.uint8).reshape(-1, es)
        dst[cols] = new


def _np_dtype(name: str):
    from ....ir.dtype import DTYPES

    return DTYPES[name].numpy()


def bind_tensor_maps(flat, binding) -> dict:
    """``{id(var): SimTensorMap}`` for the hidden tensor-map parameters of flat kernel
    ``flat`` (their global spaces follow its buffer order, as the storage plan's do)."""
    from ...memory import GLOBAL0

    out = {}
    data = [v for v, _ in flat.buffer_map]
    for m in flat.attr("tensor_maps", ()):
        k = next(i for i, v in enumerate(data) if v is m.buffer.data)
        dims, strides = tma.launch_geometry(m, binding.value, 0)
        out[id(m.var)] = SimTensorMap(m.spec, m.buffer.name, GLOBAL0 + k, dims, strides)
    return out
