"""TMA facts: tensor maps, swizzle modes, cache policies (PTX ISA §5.5, §9.7.9.25.5;
CUDA driver ``cuTensorMapEncodeTiled``; ptx-semantics.md §5).

The one home of these numbers. The ``tma`` variant plans boxes against them, the LLVM
lowering spells the cache policies, the runtime encodes tensor maps from them and the
simulator checks and executes them, so a limit is written once.

A *tensor map* describes a global array to the copy engine: its element type, up to five
dimensions (innermost first) with their extents and byte strides, the *box* one copy
moves, the shared-memory swizzle the box is written with, and what out-of-bounds elements
read as. :class:`TensorMapSpec` is what a kernel needs of one (its extents may be symbolic
sizes, evaluated at launch); :class:`TensorMapParam` ties a spec to the global buffer it
describes and to the hidden kernel parameter (``byval``, ``nvvm.grid_constant``) that
carries the encoded map.

Pure Python: the standard library, and :mod:`tilewise.errors` for launch errors.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_RANK = 5
MAX_BOX = 256  # elements per box dimension
ALIGN = 16  # bytes: global address, global strides, the inner box row
MAX_GLOBAL_DIM = 1 << 32
MAX_GLOBAL_STRIDE = 1 << 40
TENSORMAP_BYTES, TENSORMAP_ALIGN = 128, 64

#: Swizzle span in bytes -> CUtensorMapSwizzle (0: none).
SWIZZLE_MODES = {0: 0, 32: 1, 64: 2, 128: 3}
#: ``oob=`` -> CUtensorMapFloatOOBfill: zeros, or a NaN (float types only).
OOB_FILL = {"zero": 0, "nan": 1}
#: ``l2_promotion=`` bytes -> CUtensorMapL2promotion.
L2_PROMOTION = {0: 0, 64: 1, 128: 2, 256: 3}
DEFAULT_L2_PROMOTION = 128
#: ``cache_hint=`` -> the 64-bit L2 cache policy of ``.L2::cache_hint`` (the encodings of
#: ``createpolicy.fractional.L2::<hint>.b64 p, 1.0``, as CUTLASS's CacheHintSm90 spells them).
CACHE_POLICY = {"normal": 0x1000000000000000, "evict_first": 0x12F0000000000000,
                "evict_last": 0x14F0000000000000}
#: ``use_tma_reduce=``: the ``cp.reduce.async.bulk.tensor`` operations on stores, and the
#: element types each takes (the tensor map's type decides the operation's).
REDUCE_TYPES = {
    "add": ("float16", "bfloat16", "float32", "int32", "uint32", "uint64"),
    "min": ("float16", "bfloat16", "int32", "uint32", "int64", "uint64"),
    "max": ("float16", "bfloat16", "int32", "uint32", "int64", "uint64"),
}
REDUCE_OPS = tuple(REDUCE_TYPES)
#: Element types a tensor map takes (CUtensorMapDataType); 8-bit floats travel as bytes.
DATA_TYPES = {"int8": 0, "uint8": 0, "float8_e4m3": 0, "float8_e5m2": 0,
              "int16": 1, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4, "int64": 5,
              "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9}
FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")
#: The bits an out-of-bounds element reads as with ``oob="nan"``: NOT the canonical NaN.
#: Measured on the H200 (2026-11-30): the copy engine fills every 16-bit half of an
#: element with 0x7FF7 (float16 0x7FF7, float32 0x7FF77FF7). bfloat16 and float64 are
#: taken to follow the same 16-bit pattern (0x7FF7 is a NaN in bfloat16 too); unmeasured.
NAN_BITS = {"float16": 0x7FF7, "bfloat16": 0x7FF7, "float32": 0x7FF77FF7,
            "float64": 0x7FF77FF77FF77FF7}


def swizzle_repeat(swizzle: int) -> int:
    """Bytes after which a swizzle pattern repeats (256 / 512 / 1024); the alignment a
    swizzled shared destination needs so that absolute addresses swizzle like offsets."""
    return 8 * swizzle


#: Swizzle span in bytes -> the mask ``M`` of :func:`swizzle_offset` (32B, 64B, 128B).
SWIZZLE_MASKS = {32: 1, 64: 3, 128: 7}


def swizzle_offset(o, swizzle: int, log2_unit: int = 0):
    """The one swizzle formula of TMA, wgmma and tcgen05 (PTX ISA §5.5.6): on a shared byte
    address ``a``, ``a ^ (((a >> 7) & M) << 4)`` -- the 16-byte chunk index inside a
    128-byte line XORed with the line index modulo 2, 4 or 8 (M = 1, 3, 7 for a 32, 64,
    128-byte swizzle; 0: none). ``o`` counts units of ``2**log2_unit`` bytes (elements:
    log2 of their byte size, negative below a byte), so the shifts are ``7 - log2_unit``
    and ``4 - log2_unit``. ``o`` may be an int, a numpy array or an IR expression."""
    if not swizzle:
        return o
    return o ^ (((o >> (7 - log2_unit)) & SWIZZLE_MASKS[swizzle]) << (4 - log2_unit))


def swizzle_bytes(addr, swizzle: int):
    """The swizzled shared byte address of ``addr`` (:func:`swizzle_offset` on bytes)."""
    return swizzle_offset(addr, swizzle)


@dataclass(frozen=True)
class TensorMapSpec:
    """One tensor map, innermost dimension first.

    ``dims``: global extents (ints, or size expressions evaluated at launch); ``strides``:
    element strides of dimensions 1.. (dimension 0 is contiguous); ``box``: elements one
    copy moves per dimension; ``swizzle``: 0 / 32 / 64 / 128; ``oob``: ``"zero"`` or
    ``"nan"``; ``l2_promotion``: 0 / 64 / 128 / 256 bytes."""

    dtype: str
    elem_bytes: int
    dims: tuple
    strides: tuple
    box: tuple[int, ...]
    swizzle: int = 0
    oob: str = "zero"
    l2_promotion: int = DEFAULT_L2_PROMOTION

    @property
    def rank(self) -> int:
        return len(self.box)

    @property
    def box_elems(self) -> int:
        n = 1
        for b in self.box:
            n *= b
        return n

    @property
    def box_bytes(self) -> int:
        return self.box_elems * self.elem_bytes

    def describe(self) -> str:
        box = "x".join(str(b) for b in reversed(self.box))
        swz = f", {self.swizzle}B swizzle" if self.swizzle else ""
        return f"{self.rank}-D box {box}{swz}, oob {self.oob}"


@dataclass(frozen=True, eq=False)
class TensorMapParam:
    """A hidden kernel parameter: ``var`` (of dtype ``tensormap``) carries the encoded map
    ``spec`` of global buffer ``buffer``, which the runtime and the simulator build from the
    array bound to that buffer at launch. Kept in ``PrimFunc.attrs["tensor_maps"]``."""

    var: object
    buffer: object
    spec: TensorMapSpec


def resolve(spec: TensorMapSpec, value) -> tuple[list[int], list[int]]:
    """The spec's extents and byte strides at launch (``value(e)``: a size expression's value
    for the launch's bound sizes)."""
    dims = [int(value(d)) for d in spec.dims]
    strides = [int(value(s)) * spec.elem_bytes for s in spec.strides]
    return dims, strides


def launch_geometry(m: TensorMapParam, value, address: int) -> tuple[list[int], list[int]]:
    """Extents and byte strides of map ``m`` for a launch (``value``: a size expression's
    value at launch); a LaunchError naming the buffer when the copy engine cannot take them
    (the runtime and the simulator check alike)."""
    dims, strides = resolve(m.spec, value)
    problem = encode_problem(m.spec, dims, strides, address)
    if problem:
        from ..errors import LaunchError

        raise LaunchError(f"the tensor map of {m.buffer.name!r} ({m.spec.describe()}) cannot "
                          f"describe this array: {problem}",
                          hint="TMA needs 16-byte aligned arrays whose strides (row pitches) "
                          "are multiples of 16 bytes; pad the array or copy without TMA")
    return dims, strides


def encode_problem(spec: TensorMapSpec, dims: list[int], strides: list[int],
                   address: int) -> str | None:
    """Why ``cuTensorMapEncodeTiled`` would refuse these launch values (byte ``strides`` of
    dimensions 1..), in words naming the dimension; None when it accepts them."""
    if address % ALIGN:
        return f"the array starts at {address:#x}, not on a {ALIGN}-byte boundary"
    for k, n in enumerate(dims):
        if not 1 <= n <= MAX_GLOBAL_DIM:
            return f"dimension {k} (innermost first) has extent {n}; TMA takes 1..2^32"
    for k, s in enumerate(strides, 1):
        if s % ALIGN or not 0 < s < MAX_GLOBAL_STRIDE:
            return (f"the stride of dimension {k} (innermost first) is {s} bytes; TMA needs a "
                    f"positive multiple of {ALIGN} below 2^40")
    return None
