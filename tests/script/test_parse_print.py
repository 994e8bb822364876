"""The front end and the printer: every example parses, prints, and parses back equal."""

import importlib.util
import pathlib

import pytest

import tilewise as tw
from tilewise import T, Tx, from_source
from tilewise.ir import (BufferStore, DeclBuffer, Evaluate, For, IfThenElse, LetStmt, TileCall,
                         structural_equal, verify, walk)
from tilewise.layout import S, TileLayout

# the examples that write kernels (examples/torch_ops.py registers the others' as torch ops)
EXAMPLES = sorted(p for p in pathlib.Path(__file__).resolve().parents[2].joinpath("examples")
                  .glob("*.py") if "@T.prim_func" in p.read_text())


def _kernels(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [v for v in vars(mod).values() if isinstance(v, tw.ir.PrimFunc)]


def _nodes(func, cls):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


WIDTH = 4
N = 256


@T.prim_func
def everything(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N,), "float32")
    B = T.match_buffer(B_ptr, (N,), "float32")
    C = T.match_buffer(C_ptr, (2, N // 2), "int32")
    T.device_entry()
    bx, by = T.cta_id([2, 3])
    tid = T.thread_id([128])
    lane = T.lane_id([32])
    acc: T.float32 = 0.0
    count = tid * 2 + bx
    regs = T.alloc_local((WIDTH,), "float32")
    for i in T.unroll(WIDTH):
        regs[i] = A[tid * 2 + i % 2]
    for j in range(1, 3):
        acc = acc + T.exp(regs[j]) * 2.0
    if tid < 64 and lane != 3:
        B[tid] = T.max(acc, A[tid])
    elif tid >= 120:
        B[tid] = T.select(count > 4, acc, -acc)
    else:
        C[tid % 2, tid // 2] = T.cast(acc, "int32") + T.min(count, 7)
    count = count + 1
    vals = [regs[k] for k in range(WIDTH) if k % 2 == 0]
    B[255] = vals[0] + vals[1] + T.float32(by)
    s = T.alloc_shared((64,), "float32", layout=TileLayout(S[(8, 8):(1, 8)]))
    Tx.warp.copy(s[0:64], A[tid:tid + 64])


def test_everything_parses_to_the_expected_statements():
    f = everything
    assert [b.kind for b in f.launch] == ["cta_id", "cta_id", "thread_id", "lane_id"]
    assert f.launch_config.grid == (2, 3, 1) and f.launch_config.block == 128
    assert [s.kind for s in _nodes(f, For)] == ["unroll", "serial"]
    assert len(_nodes(f, IfThenElse)) == 2  # if + elif
    assert {s.var.name for s in _nodes(f, LetStmt)} >= {"acc", "count"}
    calls = _nodes(f, TileCall)
    assert len(calls) == 1 and calls[0].scope == "warp" and calls[0].args[1].shape == (64,)
    assert len(_nodes(f, BufferStore)) == 5
    assert [d.buffer.scope for d in _nodes(f, DeclBuffer)] == ["local", "shared"]
    verify(f)


def test_everything_round_trips():
    text = everything.script()
    again = from_source(text)
    assert structural_equal(everything, again)
    assert again.script() == text


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_round_trip(path):
    kernels = _kernels(path)
    assert kernels, f"{path.name} defines no kernel"
    for k in kernels:
        verify(k)
        again = from_source(k.script())
        assert structural_equal(k, again), k.script()


def test_structural_equal_sees_differences():
    a = from_source(everything.script())
    b = from_source(everything.script().replace("tid < 64", "tid < 65"))
    assert not structural_equal(a, b)
    assert not structural_equal(a, from_source(everything.script().replace("2.0", "3.0")))


def test_seed_ldgsts_prints_like_the_seed():
    (k,) = _kernels(next(p for p in EXAMPLES if p.stem == "ldgsts_copy"))
    text = k.script()
    assert 'Tx.cta.copy_async(A_smem[0:128, 0:32], A[0:128, 0:32], dispatch=\'ldgsts\')' in text
    assert "T.ptx.cp_async.commit_group()" in text and "T.cuda.cta_sync()" in text


def test_spans_point_at_this_file():
    store = _nodes(everything, BufferStore)[0]
    assert store.span.file == __file__
    line = store.span.text()
    assert "regs[i] = A[tid * 2 + i % 2]" in line


def test_compile_time_values_are_folded():
    (ev,) = [s for s in _nodes(everything, Evaluate)] or [None]
    assert ev is None  # no stray expression statements
    stores = _nodes(everything, BufferStore)
    assert "vals" not in everything.script()  # the comprehension expanded at parse time
    assert any("regs[0] + regs[2]" in tw.ir.script(s.value) for s in stores)


K = 3


@T.prim_func
def unrolled(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    S = T.alloc_shared((64,), "float32")
    for j in T.static_range(K):
        T.ptx.cp_async(T.address_of(S[j * 16]), T.address_of(A[j * 16]), 16)
        T.ptx.cp_async.commit_group()
    for j in T.static_range(K):
        T.ptx.cp_async.wait_group(K - 1 - j)


def test_static_range_unrolls_at_parse_time():
    text = unrolled.script()
    assert "for " not in text
    assert [f"wait_group({n})" in text for n in (2, 1, 0)] == [True] * 3
    assert "T.address_of(S[32])" in text


def test_known_multiple_sees_through_floor_division():
    from tilewise.ir import Var
    from tilewise.script.analysis import known_multiple

    t = Var("t")
    assert known_multiple(t // 16 * 1024 + t % 16 * 8) == 8
    assert known_multiple((t * 64) // 4 + 32) == 16
    assert known_multiple((t * 6) % 4) == 2
    assert known_multiple(t + 1) == 1
    assert known_multiple(t * 0) == 0


def test_known_multiple_sees_through_a_swizzle():
    """A swizzle XORs an offset with bits moved above its chunk size: a multiple of 64
    elements swizzled at 8-element (16-byte) chunks stays a multiple of 8."""
    from tilewise.ir import Var
    from tilewise.script.analysis import known_multiple

    t = Var("t")
    o = t * 64
    assert known_multiple(o ^ (((o >> 6) & 7) << 3)) == 8
    assert known_multiple((t * 4) | 8) == 4
    assert known_multiple((t * 3) & 16) == 16
    assert known_multiple((t * 12) ^ 6) == 2
    assert known_multiple(t ^ 8) == 1


REGS = 4


@T.prim_func
def splat(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "uint32")
    T.device_entry()
    tid = T.thread_id([128])
    taddr = T.alloc_shared([1], "uint32")
    r32 = T.alloc_local((REGS,), "uint32")
    T.ptx.tcgen05.st(taddr[0], 0, 0, "32x32b", REGS, False, *[r32[i] for i in range(REGS)])


def test_argument_splat_over_a_compile_time_comprehension():
    (call,) = [s.value for s in _nodes(splat, Evaluate)]
    assert call.op == "ptx.tcgen05.st" and len(call.args) == 6 + REGS
    assert [tw.ir.script(a) for a in call.args[6:]] == [f"r32[{i}]" for i in range(REGS)]
    assert structural_equal(splat, from_source(splat.script()))
