"""Facts about the packed two-lane float instructions and the approximate math instructions,
shared by the PTX table, the LLVM lowerings, the simulator and the tile variants.

Packed arithmetic (PTX ISA §9.7.4 "Half Precision Floating-Point Instructions" and
§9.7.3 for ``.f32x2``): one instruction computes two lanes held in one register, lane 0 in
the low bits (``f16x2``/``bf16x2``: a 32-bit register, ``f32x2``: a 64-bit register). Each
lane is rounded as the scalar instruction rounds it (``.rn``), so a packed operation is
exactly two scalar operations of the arithmetic table (:mod:`tilewise.ir.alu`); ``fma`` is
fused (one rounding). ``min``/``max`` return the other lane when one is NaN, like the
scalar ``min.f16``. ``f32x2`` exists on sm_100 and newer (PTX 8.6), without min/max.

``cvt.rn.{f16x2,bf16x2}.f32 d, a, b`` packs two float32 values, rounded to nearest even:
``a`` in the upper half, ``b`` in the lower.

Approximate math (PTX ISA §9.7.3, "Floating Point Instructions"): the PTX ISA bounds the
error of each instruction; the simulator returns the correctly rounded value, which is
within the bound, and tests compare GPU results with it at the bound (:data:`APPROX`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import dtype as dt
from ..ir.dtype import DataType


@dataclass(frozen=True)
class Lanes:
    """A packed register type: two lanes of ``elem`` in one ``word``."""

    name: str  # f16x2 | bf16x2 | f32x2
    elem: DataType
    word: DataType
    feature: str | None  # target feature the instructions need (None: every target)


LANES = {
    "f16x2": Lanes("f16x2", dt.DTYPES["float16"], dt.uint32, None),
    "bf16x2": Lanes("bf16x2", dt.DTYPES["bfloat16"], dt.uint32, None),
    "f32x2": Lanes("f32x2", dt.float32, dt.uint64, "f32x2"),
}


@dataclass(frozen=True)
class PackedOp:
    """``ptx.<op>.<lanes>``: the arithmetic-table operator ``alu`` (``fma``: fused
    multiply-add) applied to each lane."""

    name: str  # the table entry, e.g. "ptx.add.f16x2"
    op: str  # add | sub | mul | fma | min | max
    alu: str  # "+", "-", "*", "fma", "min", "max"
    lanes: Lanes

    @property
    def arity(self) -> int:
        return 3 if self.op == "fma" else 2

    @property
    def ptx(self) -> str:
        rnd = ".rn" if self.op in ("add", "sub", "mul", "fma") else ""
        ops = ", ".join("abc"[: self.arity])
        return f"{self.op}{rnd}.{self.lanes.name} d, {ops}"


_OPS = {"add": "+", "sub": "-", "mul": "*", "fma": "fma", "min": "min", "max": "max"}

#: Every packed arithmetic instruction, by table name.
PACKED: dict[str, PackedOp] = {
    f"ptx.{op}.{lanes.name}": PackedOp(f"ptx.{op}.{lanes.name}", op, alu, lanes)
    for lanes in LANES.values()
    for op, alu in _OPS.items()
    if not (lanes.name == "f32x2" and op in ("min", "max"))
}

#: Tile-op binary operators that have a packed form, by arithmetic-table operator.
PACKED_BY_ALU = {alu: op for op, alu in _OPS.items()}


def packed_name(alu: str, elem: DataType) -> str | None:
    """The packed instruction computing ``alu`` on two ``elem`` lanes, if there is one."""
    for p in PACKED.values():
        if p.alu == alu and p.lanes.elem == elem:
            return p.name
    return None


#: ``ptx.cvt.<lanes>.f32``: pack two float32 values into one register of ``lanes``.
CVT_PACK = {f"ptx.cvt.{n}.f32": LANES[n] for n in ("f16x2", "bf16x2")}


@dataclass(frozen=True)
class Approx:
    """An approximate instruction and the error bound the PTX ISA states for it."""

    name: str  # the table entry
    ptx: str
    llvm: str  # the LLVM 22 intrinsic (measured: selects on sm_80, sm_90a, sm_100a)
    bound: str  # in words, as the PTX ISA gives it
    tol: float  # the error tests allow against the exact value ...
    kind: str  # ... relative ("rel"), or absolute ("abs", plus half an ulp of the result)
    doc: str


APPROX = {
    a.name: a for a in [
        Approx("ptx.ex2.approx", "ex2.approx.f32", "llvm.nvvm.ex2.approx.f",
               "maximum relative error 2^-22.5 (full range)",
               2.0 ** -22.5 + 2.0 ** -24, "rel",
               "2^x; -inf gives +0, +inf gives +inf, subnormal results kept (no .ftz)"),
        Approx("ptx.ex2.approx.ftz", "ex2.approx.ftz.f32", "llvm.nvvm.ex2.approx.ftz.f",
               "maximum relative error 2^-22.5 (full range); subnormals flushed",
               2.0 ** -22.5 + 2.0 ** -24, "rel",
               "2^x with a subnormal x read as 0 and a subnormal result flushed to +0: one "
               "MUFU.EX2, where the form without .ftz adds a range test and two multiplies"),
        Approx("ptx.lg2.approx", "lg2.approx.f32", "llvm.nvvm.lg2.approx.f",
               "maximum absolute error 2^-22.6 for the mantissa",
               2.0 ** -22.6 + 2.0 ** -24, "abs",
               "log2(x); 0 gives -inf, a negative x NaN, +inf +inf"),
        Approx("ptx.rsqrt.approx", "rsqrt.approx.f32", "llvm.nvvm.rsqrt.approx.f",
               "maximum relative error 2^-22.9 (full range)",
               2.0 ** -22.9 + 2.0 ** -24, "rel",
               "1/sqrt(x); +0 gives +inf, -0 gives -inf, a negative x NaN, +inf +0"),
    ]
}
