"""Shared-memory swizzles (ptx-semantics.md §5), expressed on element offsets.

On the byte address ``a`` of the shared window the TMA / wgmma swizzles are::

    swz(a) = a ^ (((a >> 7) & M) << 4)        M = 1 (32B), 3 (64B), 7 (128B)

i.e. the 16-byte chunk index inside a 128-byte line is XORed with the line index modulo
2, 4 or 8. A layout's ``m`` axis counts *elements*, so with ``k = log2(element bytes)``
the same map on the element offset ``o`` is ``o ^ (((o >> (7-k)) & M) << (4-k))``.

The swizzle is applied to the final ``m`` offset (offset included), relative to a buffer
base aligned to the swizzle repeat (256 / 512 / 1024 bytes), which is what the hardware
does when the buffer is aligned as the CUDA guide requires.

Only bits of the 16-byte chunk index move, so any run of elements that lies inside one
aligned 16-byte chunk before the swizzle is still contiguous (and in the same order)
after it: that is what lets a copy partitioner "see through" a swizzle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.errors import LayoutError
from tilewise.ptx.tma import SWIZZLE_MASKS, swizzle_offset  # the formula above, once
CHUNK_BYTES = 16  # the swizzle permutes whole 16-byte chunks


@dataclass(frozen=True)
class Swizzle:
    """A 32B / 64B / 128B swizzle for elements of ``dtype_bits`` bits."""

    mode: int
    dtype_bits: int

    def __post_init__(self) -> None:
        if isinstance(self.mode, bool) or self.mode not in SWIZZLE_MASKS:
            raise LayoutError(
                f"swizzle mode {self.mode!r} is not supported",
                hint="use 32, 64 or 128 (the swizzle span in bytes), or no swizzle",
            )
        bits = self.dtype_bits
        ok = isinstance(bits, int) and not isinstance(bits, bool) and 0 < bits <= 128
        if not ok or bits & (bits - 1):
            raise LayoutError(
                f"swizzle element size of {bits!r} bits is not a power of two up to 128",
                hint="pass dtype_bits=4, 8, 16, 32, 64 or 128",
            )

    @property
    def log2_elem_bytes(self) -> int:
        """log2 of the element size in bytes (negative for sub-byte types)."""
        return self.dtype_bits.bit_length() - 1 - 3

    @property
    def chunk_elems(self) -> int:
        """Elements in one 16-byte chunk: the longest run a swizzle keeps contiguous."""
        return CHUNK_BYTES * 8 // self.dtype_bits

    @property
    def repeat_elems(self) -> int:
        """Elements after which the swizzle pattern repeats (256 / 512 / 1024 bytes)."""
        return self.mode * 8 * 8 // self.dtype_bits

    def apply(self, offset):
        """The swizzled element offset of element offset ``offset`` (an int, a numpy array
        or an IR expression: :func:`tilewise.ptx.tma.swizzle_offset`)."""
        return swizzle_offset(offset, self.mode, self.log2_elem_bytes)

    def apply_np(self, offsets: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`apply` (the same function)."""
        return self.apply(offsets)

    def __repr__(self) -> str:
        return f"Swizzle({self.mode}, dtype_bits={self.dtype_bits})"
