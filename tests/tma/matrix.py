"""The swizzle x dtype x rank x edge matrix of TMA round trips, shared by the simulator
tests (always) and the GPU tests (GPU bytes == simulator bytes == numpy)."""

from __future__ import annotations

from dataclasses import dataclass

from kernels_tma import elem_bits

SWIZZLES = (0, 32, 64, 128)
DTYPES = ("float16", "bfloat16", "float32", "int8")


@dataclass(frozen=True)
class Case:
    rank: int
    dtype: str
    swizzle: int
    tile: tuple
    shape: tuple
    blocked: bool = False
    oob: str = "zero"

    @property
    def id(self) -> str:
        b = "-blocked" if self.blocked else ""
        return (f"{self.rank}d-{self.dtype}-swz{self.swizzle}{b}-oob{self.oob}-"
                f"{'x'.join(map(str, self.shape))}")


def _inner(dtype: str, swizzle: int) -> tuple[int, int]:
    """(tile inner extent, array inner extent): one swizzle row (64 bytes unswizzled), and
    an array that leaves the second tile hanging over the edge (rows stay 16-byte
    multiples, as tensor maps need)."""
    es = elem_bits(dtype) // 8
    tile = (swizzle or 64) // es
    return tile, 2 * tile - 16 // es


def cases() -> list[Case]:
    out = []
    for dtype in DTYPES:
        oob = "nan" if dtype in ("float16", "float32") else "zero"
        for swz in SWIZZLES:
            ti, ni = _inner(dtype, swz)
            out.append(Case(2, dtype, swz, (8, ti), (12, ni), oob=oob))
            out.append(Case(3, dtype, swz, (2, 8, ti), (3, 10, ni)))
            out.append(Case(5, dtype, swz, (2, 1, 2, 4, ti), (3, 2, 3, 5, ni)))
            if swz:  # two column blocks of one swizzle row each: two boxes per tile
                out.append(Case(2, dtype, swz, (8, 2 * ti), (12, 2 * ni), blocked=True))
    return out


CASES = cases()
