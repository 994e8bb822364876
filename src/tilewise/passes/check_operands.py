"""Instruction operands the compiler can judge before the kernel runs: every rule the
simulator applies to an operand's *value* (docs/simulator.md, "Hazard checks") is applied
here to the operand when it is a constant of the flat IR, so a constant mistake is an error
at the user's line when the kernel is compiled (and simulated), not a ptxas failure worded
as a code generator defect, nor a hazard found only when that line runs.

* named barriers (``bar.sync`` / ``bar.arrive``): id 0..15, count a positive multiple of 32
  and at most the CTA's threads;
* ``mbarrier.init`` count in [1, 2^20 - 1]; an ``expect_tx`` of more than 2^20 - 1 bytes;
* ranks of the cluster (``remote=`` of an arrive, the dsmem copy's ``rank``) and a
  multicast's ``cta_mask``: inside the declared cluster (a kernel with none is a cluster of
  one CTA); a mask naming no CTA;
* bulk copy sizes: positive multiples of 16 bytes; a cp.async ``src_size`` in
  [0, cp_size];
* a float constant for any integer operand of these instructions (``bar.sync(1, 64.0)``).

Values computed at run time are checked by the simulator when the line runs.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CompileError
from ..ir.expr import Call, Cast, FloatImm, as_int
from ..ir.launch import WARP
from ..ir.stmt import PrimFunc
from ..ir.visitor import walk

MAX_COUNT = (1 << 20) - 1  # mbarrier counts are 20-bit (PTX ISA 9.7.13.15)
_RULES: dict[str, Callable] = {}


def rule(*ops: str):
    def deco(fn):
        for op in ops:
            _RULES[op] = fn
        return fn
    return deco


def check_operands(func: PrimFunc) -> PrimFunc:
    """Raise a CompileError at the first call whose constant operand no execution accepts."""
    cfg = func.launch_config

    def look(n):
        if isinstance(n, Call) and n.op in _RULES:
            problem = _float_operand(n) or _RULES[n.op](n, cfg)
            if problem is not None:
                message, hint = problem
                name = n.op.removeprefix("ptx.")
                if not message.startswith(name + " "):
                    message = f"{name}: {message}"
                raise CompileError(message, n.span, hint)
    walk(func.body, look)
    return func


def _float_operand(call: Call):
    """A float constant given for an integer operand (``bar.sync(1, 64.0)``): converting
    it would hide the mistake (1e300 became 2147483647, which ptxas refused)."""
    from ..ptx.table import PTX_OPS

    for p, a in zip(PTX_OPS[call.op].params, call.args):
        inner = a.value if isinstance(a, Cast) else a
        if isinstance(inner, FloatImm) and p.dtype.is_int and p.kind in ("value", "rank"):
            return (f"operand {p.name!r} is an integer ({p.dtype}), got the float "
                    f"{inner.value!r}", "pass an int")
    return None


def _const(call: Call, name: str) -> int | None:
    """The constant value of operand ``name`` of ``call`` (by the table's parameter order),
    None when it is absent or computed at run time."""
    from ..ptx.table import PTX_OPS

    names = [p.name for p in PTX_OPS[call.op].params]
    if name not in names or names.index(name) >= len(call.args):
        return None
    a = call.args[names.index(name)]
    if isinstance(a, Cast) and a.type.is_int:  # a constant cast to the operand's type
        v = as_int(a.value)
        return v if v is not None and 0 <= v < 1 << (a.type.bits - 1) else None
    return None if a is None else as_int(a)


@rule("ptx.bar.sync", "ptx.bar.arrive")
def _named_barrier(call, cfg):
    bid, count = _const(call, "id"), _const(call, "count")
    if bid is not None and not 0 <= bid < 16:
        return (f"barrier id {bid} is not one of 0..15",
                "use ids 1..15 for named barriers (0 is the one T.cuda.cta_sync uses)")
    if count is not None and (count <= 0 or count % WARP or count > cfg.block):
        name = call.op.removeprefix("ptx.")
        return (f"{name} {bid if bid is not None else '<id>'}, {count}: the thread count of "
                f"a named barrier must be a positive multiple of {WARP} (whole warps), up to "
                f"the CTA's {cfg.block} threads",
                "count whole warps: the threads of the warps that execute the barrier, e.g. "
                "128 for a warpgroup")
    return None


@rule("ptx.mbarrier.init")
def _mbarrier_init(call, cfg):
    count = _const(call, "count")
    if count is not None and not 1 <= count <= MAX_COUNT:
        return (f"count {count} is outside [1, {MAX_COUNT}] (the arrival count is 20 bits)",
                "initialise with the number of arrivals one phase expects")
    return None


@rule("ptx.mbarrier.arrive.expect_tx", "ptx.mbarrier.arrive_expect_tx",
      "ptx.mbarrier.expect_tx")
def _expect_tx(call, cfg):
    tx = _const(call, "tx_bytes")
    if tx is not None and abs(tx) > MAX_COUNT:
        return (f"{tx} transaction bytes are more than a phase counts ({MAX_COUNT}: 20 bits)",
                "split the transfer over several phases")
    return _rank(call, cfg, "remote", "remote=")


@rule("ptx.cp_async.bulk.s2c")
def _dsmem(call, cfg):
    return _bulk_size(call) or _rank(call, cfg, "rank", "the destination rank")


def _rank(call, cfg, name: str, what: str):
    rank, n = _const(call, name), cfg.cluster_size
    if rank is None or 0 <= rank < n:
        return None
    if n == 1:
        return (f"{what} {rank} names a CTA of a cluster, but the kernel declares no cluster "
                "(a cluster of one CTA: rank 0 only)",
                "declare the cluster with T.cta_id_in_cluster([n]), or drop the rank")
    return (f"{what} {rank} is outside the cluster of {n} CTA(s) {cfg.cluster}",
            f"use a rank in 0..{n - 1}")


@rule("ptx.cp_async.bulk.tensor.g2c")
def _multicast(call, cfg):
    mask, n = _const(call, "cta_mask"), cfg.cluster_size
    if mask is None:
        return None
    if mask <= 0 or mask >> n:
        outside = [r for r in range(max(mask.bit_length(), 1)) if mask >> r & 1 and r >= n]
        why = ("names no CTA" if mask <= 0 else
               f"names CTA rank(s) {', '.join(map(str, outside))} outside the cluster of {n} "
               f"CTA(s) {cfg.cluster}")
        return (f"multicast cta_mask {mask:#x} {why}",
                f"set bits 0..{n - 1} only (bit r: the CTA of rank r receives the tile)"
                if n > 1 else "declare a cluster with T.cta_id_in_cluster([n]) to multicast")
    return None


@rule("ptx.cp_async.bulk.g2s", "ptx.cp_async.bulk.s2g")
def _bulk(call, cfg):
    return _bulk_size(call)


def _bulk_size(call):
    n = _const(call, "nbytes")
    if n is not None and (n <= 0 or n % 16):
        return (f"size {n} is not a positive multiple of 16 bytes",
                "bulk copies move multiples of 16 bytes (pad the buffer, or use "
                "T.ptx.cp_async for smaller pieces)")
    return None


@rule("ptx.cp_async")
def _cp_async(call, cfg):
    size, src = _const(call, "cp_size"), _const(call, "src_size")
    if size is not None and src is not None and not 0 <= src <= size:
        return (f"src_size {src} is outside [0, {size}] (the copy reads src_size bytes of "
                f"its {size} and zero-fills the rest)", f"pass a src_size of 0..{size}")
    return None


# ---------------------------------------------------------------- the parameter space
PARAM_SPACE = 4352  # bytes of kernel parameters before PTX ISA 8.1
PARAM_SPACE_81 = 32764  # from PTX ISA 8.1 (ptxas: "Kernel parameter size larger than 4352")


def param_bytes(func: PrimFunc) -> int:
    """The bytes the kernel's parameters take in PTX's parameter space, laid out as the code
    generator declares them: pointers 8, scalars their size, tensor maps 128 bytes aligned
    to 64, each at its alignment."""
    from ..ptx.tma import TENSORMAP_ALIGN, TENSORMAP_BYTES

    off = 0
    for p in func.params:
        kind = p.dtype.kind
        size, align = ((TENSORMAP_BYTES, TENSORMAP_ALIGN) if kind == "tensormap" else
                       (8, 8) if kind == "handle" else (p.dtype.bytes,) * 2)
        off = -(-off // align) * align + size
    return off


def check_params(func: PrimFunc, ptx_version: tuple[int, int]) -> PrimFunc:
    """A kernel whose parameters do not fit the parameter space is refused at its ``def``,
    naming the limit, instead of failing in ptxas."""
    limit = PARAM_SPACE_81 if ptx_version >= (8, 1) else PARAM_SPACE
    n = param_bytes(func)
    if n > limit:
        maps = sum(p.dtype.kind == "tensormap" for p in func.params)
        raise CompileError(
            f"the kernel's {len(func.params)} parameters take {n} bytes of parameter space"
            + (f" ({maps} hidden tensor map(s) of 128 bytes included)" if maps else "")
            + f"; PTX ISA {ptx_version[0]}.{ptx_version[1]} allows {limit} bytes"
            + (f" ({PARAM_SPACE_81} from PTX ISA 8.1, which tilewise emits for sm_100a and "
               "newer)" if limit == PARAM_SPACE else ""), func.span,
            "pass fewer parameters: gather scalars into one array, or several arrays into "
            "one with offsets")
    return func
