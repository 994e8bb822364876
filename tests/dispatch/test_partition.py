"""Property: the lowered partition covers every element of the tile exactly once.

Kernels are built as IR directly (random shapes, dtypes, scopes, swizzles); the flat IR
is evaluated here by a tiny numpy evaluator of its loops and index expressions, for every
thread at once; the covered (dst, src) element offsets must equal the layouts' own map.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling import examples
from tilewise.errors import DispatchError
from tilewise.ir import (BinOp, Buffer, BufferRegion, BufferStore,
                         DeclBuffer, Evaluate, For, IfThenElse, IntImm, PrimFunc, Range,
                         SeqStmt, ThreadBinding, TileCall, UnaryOp, Var, dtype)
from tilewise.layout import S, TileLayout
from tilewise.pipeline import lower

OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide,
       "%": np.mod, "^": np.bitwise_xor, "&": np.bitwise_and, "<<": np.left_shift,
       ">>": np.right_shift, "<": np.less, "==": np.equal}


def ev(e, env):
    if isinstance(e, IntImm):
        return np.int64(e.value)
    if isinstance(e, Var):
        return env[id(e)]
    if isinstance(e, BinOp):
        return OPS[e.op](ev(e.a, env), ev(e.b, env)).astype(np.int64)
    if isinstance(e, UnaryOp) and e.op == "-":
        return -ev(e.a, env)
    raise TypeError(type(e))


def run(stmt, env, out):
    """Collect (dst offsets, src offsets, element count) per executed copy."""
    if isinstance(stmt, SeqStmt):
        for s in stmt.stmts:
            run(s, env, out)
    elif isinstance(stmt, For):
        for i in range(ev(stmt.extent, env)):
            run(stmt.body, {**env, id(stmt.var): np.int64(i)}, out)
    elif isinstance(stmt, IfThenElse):
        mask = ev(stmt.cond, env).astype(bool)
        run(stmt.then_body, {**env, "mask": env["mask"] & mask}, out)
    elif isinstance(stmt, Evaluate):
        dst, src, nbytes = stmt.value.args[:3]
        k = nbytes.value // (dst.buffer.dtype.bits // 8)
        out.append((ev(dst.indices[0], env), ev(src.indices[0], env), k, env["mask"]))
    elif isinstance(stmt, BufferStore):
        out.append((ev(stmt.indices[0], env), ev(stmt.value.indices[0], env), 1, env["mask"]))
    elif not isinstance(stmt, DeclBuffer):
        raise TypeError(type(stmt))


def covered(func):
    low = lower(func, "sm_90a").func
    tid = next(b.var for b in low.launch if b.kind == "thread_id")
    n = low.launch_config.block
    env = {id(tid): np.arange(n), "mask": np.ones(n, bool)}
    pairs = []
    for d, s, k, mask in run_all(low.body, env):
        d, s = np.broadcast_to(d, (n,))[mask], np.broadcast_to(s, (n,))[mask]
        for v in range(k):
            pairs += list(zip((d + v).tolist(), (s + v).tolist()))
    return pairs


def run_all(body, env):
    out = []
    run(body, env, out)
    return out


def expected(dst_buf, src_buf, shape):
    idx = np.stack(np.unravel_index(np.arange(math.prod(shape)), shape), axis=1)

    def offs(b):
        if b.layout is None:
            return np.ravel_multi_index(tuple(idx.T), shape)
        return b.layout.apply_np(idx, shape=shape)["m"]

    return sorted(zip(offs(dst_buf).tolist(), offs(src_buf).tolist()))


def make(shape, dt, scope, threads, swz, to_shared, op):
    t = dtype.dtype(dt)
    h = Var("a_ptr", dtype.handle)
    g = Buffer("A", shape, t, "global", data=h)
    layout = None
    if swz:
        layout = TileLayout(S[shape]).swizzle(swz, t.bits)
    s = Buffer("A_smem", shape, t, "shared", layout=layout)
    tid = Var("tid")
    full = lambda b: BufferRegion(b, tuple(Range(IntImm(0), e) for e in shape))
    args = (full(s), full(g)) if to_shared else (full(g), full(s))
    call = TileCall(op, scope, args)
    body = SeqStmt((DeclBuffer(s), call))
    launch = (ThreadBinding(tid, "thread_id", (threads,)),)
    return PrimFunc("k", (h,), ((h, g),), launch, body), g, s


shapes = st.sampled_from([(512,), (64, 32), (32, 64), (4, 8, 64), (2, 16, 128), (256, 16)])


@settings(max_examples=examples(60), deadline=None)
@given(shape=shapes, dt=st.sampled_from(["int8", "float16", "bfloat16", "float32", "float64"]),
       scope=st.sampled_from(["thread", "warp", "warpgroup", "cta"]),
       swz=st.sampled_from([0, 0, 32, 64, 128]), to_shared=st.booleans(),
       op=st.sampled_from(["copy", "copy_async"]))
def test_partition_covers_exactly_once(shape, dt, scope, swz, to_shared, op):
    if op == "copy_async" and not to_shared:
        return  # never ldgsts (tested in test_seed)
    threads = {"thread": 32, "warp": 64, "warpgroup": 128, "cta": 256}[scope]
    func, g, s = make(shape, dt, scope, threads, swz, to_shared, op)
    try:
        pairs = covered(func)
    except DispatchError as e:  # only legal reason here: element count vs thread count
        assert "not a multiple" in str(e) or "aligned" in str(e) or "contiguous" in str(e)
        return
    dst, src = (s, g) if to_shared else (g, s)
    want = expected(dst, src, shape)
    # every scope instance copies the whole (same) region
    instances = threads // {"thread": 1, "warp": 32, "warpgroup": 128, "cta": 256}[scope]
    assert sorted(pairs) == sorted(want * instances)
