"""The TMA / cluster error corpus: every option and decline of the tma and dsmem variants,
every hazard of tensor copies, multicast and clusters, and the launch checks of tensor
maps is a TilewiseError at the user's line (marked ``# <-``), saying what to change."""

import numpy as np
import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source
from tilewise.layout import S, TileLayout
from tilewise.pipeline import lower

FILE = "tmakernel.py"
ENV = {"S": S, "TileLayout": TileLayout}


def kernel(*lines: str, a=("M", 64), dtype="float16", cluster: int = 0, extra: str = "",
           mark_def: bool = False) -> str:
    """A kernel with A and B of shape ``a`` and ``dtype`` (and ``extra``, a third global
    buffer's match line on C_ptr), 128 threads, an mbarrier ``bar`` initialised for one
    arrival, and a 64 x 64 shared tile ``Sh`` swizzled for its dtype."""
    shape = "(" + ", ".join(map(str, a)) + ("," if len(a) == 1 else "") + ")"
    head = ["M = T.int32()"] if "M" in shape + extra else []
    head += [f'A = T.match_buffer(A_ptr, {shape}, "{dtype}")',
             f'B = T.match_buffer(B_ptr, {shape}, "{dtype}")']
    head += [extra] if extra else []
    head += ["T.device_entry()"]
    if cluster:
        head += [f"T.cta_id([{cluster}])", f"rank = T.cta_id_in_cluster([{cluster}])"]
    bits = {"float16": 16, "int8": 8, "float32": 32}[dtype]
    swz = min(128, bits * 8)
    head += ["tid = T.thread_id([128])", 'bar = T.alloc_shared((1,), "uint64")',
             f'Sh = T.alloc_buffer((64, 64), "{dtype}", scope="shared.dyn", '
             f"layout=TileLayout(S[(64, 64)]).swizzle({swz}, dtype_bits={bits}))",
             "if tid == 0:", "    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)",
             "T.cuda.cta_sync()"]
    params = "A_ptr: T.handle, B_ptr: T.handle" + (", C_ptr: T.handle" if extra else "")
    return (f"\n@T.prim_func\ndef k({params}):" + (MARK if mark_def else "") + "\n"
            + "".join("    " + ln + "\n" for ln in head + list(lines)))


MARK = "  # <-"
LOAD = ('Tx.cta.copy_async(Sh[:, :], A[0:64, 0:64], dispatch="tma", '
        "mbar=T.address_of(bar[0]){}){}")
STORE = 'Tx.cta.copy_async(B[0:64, 0:64], Sh[:, :], dispatch="tma"{}){}'
DISPATCH = [
    ("no-mbar", "a TMA load completes on an mbarrier: pass mbar=",
     kernel('Tx.cta.copy_async(Sh[:, :], A[0:64, :], dispatch="tma")' + MARK)),
    ("store-with-mbar", "mbar= is for TMA loads; a store completes through bulk async-groups",
     kernel(STORE.format(", mbar=T.address_of(bar[0])", MARK))),
    ("load-with-reduce", "use_tma_reduce= reduces into global memory: it is for stores",
     kernel(LOAD.format(', use_tma_reduce="add"', MARK))),
    ("swizzle-for-other-dtype", "swizzle mismatch: the 128B swizzle of 'W' is laid out for "
     "32-bit elements but the tile is float16; swizzle with dtype_bits=16",
     kernel('W = T.alloc_buffer((64, 64), "float16", scope="shared.dyn", '
            "layout=TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=32))",
            'Tx.cta.copy_async(W[:, :], A[0:64, :], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK)),
    ("swizzled-view-unaligned", "is only 16-byte aligned; the copy engine swizzles absolute "
     "addresses: allocate it with align=1024",
     kernel('P = T.alloc_buffer((8192,), "uint8", scope="shared.dyn")',
            'V = P.view(64, 64, dtype="float16", layout=TileLayout(S[(64, 64)]).swizzle(128, '
            "dtype_bits=16))",
            'Tx.cta.copy_async(V[:, :], A[0:64, :], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK)),
    ("row-pitch", "the stride of dimension 0 of 'A' is 200 bytes, not a multiple of 16",
     kernel('Tx.cta.copy_async(Sh[:, 0:64], A[0:64, 0:64], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK, a=(64, 100))),
    ("inner-row", "a TMA box row must be a multiple of 16 bytes",
     kernel('N = T.alloc_buffer((64, 12), "float16", scope="shared")',
            'Tx.cta.copy_async(N[:, :], A[0:64, 0:12], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK)),
    ("nan-on-int", "oob=\"nan\" fills with NaN, which int8 does not have",
     kernel(LOAD.format(', oob="nan"', MARK), dtype="int8")),
    ("mask-without-cluster", "cta_mask= multicasts into the CTAs of a cluster; declare one "
     "with T.cta_id_in_cluster([n])", kernel(LOAD.format(", cta_mask=3", MARK))),
    ("cta-group-off-blackwell", "TMA cta_group= needs sm_100a",
     kernel(LOAD.format(", cta_group=1", MARK))),
    ("column-major-global", "the innermost dimension of 'D' has stride M; TMA reads the "
     "innermost dimension contiguously",
     kernel('C = T.alloc_buffer((64, 64), "float16", scope="shared")',
            'Tx.cta.copy_async(C[:, :], D[0:64, 0:64], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK,
            extra='D = T.match_buffer(C_ptr, (64, M), "float16", strides=(1, M))')),
    ("six-dims", "'A' has 6 dimensions; a tensor map has at most 5",
     kernel('Q = T.alloc_buffer((2, 2, 2, 2, 2, 8), "float16", scope="shared")',
            'Tx.cta.copy_async(Q[:, :, :, :, :, :], A[:, :, :, :, :, :], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK, a=(2, 2, 2, 2, 2, 8))),
    ("column-major-shared", "does not hold the tile's rows at consecutive offsets",
     kernel('Cm = T.alloc_buffer((64, 64), "float16", scope="shared", '
            "layout=TileLayout(S[(64, 64):(1, 64)]))",
            'Tx.cta.copy_async(Cm[:, :], A[0:64, :], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK)),
    ("unaligned-destination", "a box starts only 16-byte aligned in shared memory; a TMA "
     "destination must be 128-byte aligned",
     kernel('Pl = T.alloc_buffer((64, 64), "float16", scope="shared")',
            'Tx.cta.copy_async(Pl[:, 8:40], A[0:64, 0:32], dispatch="tma", '
            "mbar=T.address_of(bar[0]))" + MARK)),
    ("tma-option-elsewhere", "oob= is an option of the tma variant",
     kernel('Pl = T.alloc_buffer((64, 64), "float16", scope="shared")',
            'Tx.cta.copy_async(Pl[:, :], A[0:64, :], oob="nan")' + MARK)),
    ("dsmem-without-rank", "pass remote_cta_id=<rank in the cluster>",
     kernel('D2 = T.alloc_buffer((64, 64), "float16", scope="shared.dyn")',
            'Tx.cta.copy_async(D2[:, :], Sh[:, :], dispatch="dsmem", '
            "mbar=T.address_of(bar[0]))" + MARK, cluster=2)),
    ("dsmem-without-mbar", "the destination CTA learns of the copy through its mbarrier",
     kernel('D2 = T.alloc_buffer((64, 64), "float16", scope="shared.dyn")',
            'Tx.cta.copy_async(D2[:, :], Sh[:, :], dispatch="dsmem", remote_cta_id=1)' + MARK,
            cluster=2)),
    ("dsmem-option-on-tma", "remote_cta_id= names the CTA of a shared -> shared (dsmem) copy",
     kernel(LOAD.format(", remote_cta_id=1", MARK))),
]


@pytest.mark.parametrize("case", DISPATCH, ids=[c[0] for c in DISPATCH])
def test_dispatch_declines_at_the_users_line(case):
    _, message, src = case
    with pytest.raises(tw.DispatchError) as info:
        lower(from_source(src, filename=FILE, env=ENV), "sm_90a")
    check_error(info.value, message, None, src, FILE)


def test_corpus_is_distinct():
    cases = DISPATCH + HAZARDS
    assert len({c[1] for c in cases}) == len(cases), "every case has its own message"


WAIT = "T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)"
EXPECT = "    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), {})"
TILE = 64 * 64 * 2

HAZARDS = [
    ("expect-too-many", "mbarrier wait can never complete (deadlock)",
     "expect_tx announced 2048 byte(s) more than the copies delivered",
     kernel("if tid == 0:", EXPECT.format(TILE + 2048), LOAD.format("", ""), WAIT + MARK)),
    ("expect-too-few", "copies delivered 4096 byte(s) more than expect_tx announced", None,
     kernel("if tid == 0:", EXPECT.format(TILE - 4096), LOAD.format("", ""), WAIT + MARK)),
    ("read-before-wait", "read before the bulk copy's mbarrier completed",
     "cp.async.bulk.tensor",
     kernel("if tid == 0:", EXPECT.format(TILE), LOAD.format("", ""),
            "B[tid, 0] = Sh[tid % 64, 0]" + MARK, WAIT)),
    ("store-without-fence", "wrote with ordinary stores and no fence.proxy.async since", None,
     kernel("for i in range(32):", "    Sh[i * 2 + tid // 64, tid % 64] = A[0, 0]",
            "T.cuda.cta_sync()",
            "if tid == 0:", "    " + STORE.format("", MARK),
            "    T.ptx.cp_async.bulk.commit_group()", "    T.ptx.cp_async.bulk.wait_group(0)")),
    ("multicast-before-peer-init", "complete_tx on an mbarrier that was never initialised",
     None, kernel("if tid == 0:", EXPECT.format(TILE),
                  LOAD.format(", cta_mask=3", MARK), WAIT, cluster=2)),
    ("cluster-deadlock", "can never complete (deadlock)", None,
     kernel("if rank == 0:", "    T.cuda.cluster_sync()" + MARK,
            "    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1)",
            "else:", "    " + WAIT, cluster=2)),
    ("cluster-wait-without-arrive", "barrier.cluster.wait without an earlier "
     "barrier.cluster.arrive by this thread", None,
     kernel("T.ptx.barrier.cluster.wait()" + MARK, cluster=2)),
]


def _run(src, cluster=0, m=64):
    func = from_source(src, filename=FILE, env=ENV)
    a = np.zeros((m, 64), np.float16)
    return tw.simulate(func, a, np.zeros_like(a))


@pytest.mark.parametrize("case", HAZARDS, ids=[c[0] for c in HAZARDS])
def test_hazard_at_the_users_line(case):
    name, message, extra, src = case
    with pytest.raises(tw.HazardError) as info:
        _run(src)
    check_error(info.value, message, None, src, FILE)
    if extra is not None:
        assert extra in str(info.value)


def test_remote_rank_outside_the_cluster():
    # known only at run time (rank + 2 with rank 0): the simulator reports it
    src = kernel("if rank == 0:",
                 "    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=rank + 2)"
                 + MARK, cluster=2)
    with pytest.raises(tw.SimulationError) as info:
        _run(src)
    check_error(info.value, "names CTA rank 2 of the cluster, which has 2 CTA(s) (ranks 0..1)",
                "T.cta_id_in_cluster", src, FILE)
    # a constant: the compiler refuses it
    src = kernel("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=2)" + MARK,
                 cluster=2)
    with pytest.raises(tw.CompileError) as info:
        _run(src)
    check_error(info.value, "remote= 2 is outside the cluster of 2 CTA(s) (2, 1, 1)",
                "use a rank in 0..1", src, FILE)


@pytest.mark.parametrize("mask,message", [
    (4, "multicast cta_mask 0x4 names CTA rank(s) 2 outside the cluster of 2 CTA(s)"),
    (0, "multicast cta_mask 0x0 names no CTA")])
def test_a_constant_multicast_mask_outside_the_cluster_is_refused_at_compile_time(mask,
                                                                                  message):
    src = kernel("if tid == 0:", EXPECT.format(TILE),
                 LOAD.format(f", cta_mask={mask}", MARK), WAIT, cluster=2)
    with pytest.raises(tw.CompileError) as info:
        _run(src)
    check_error(info.value, message, "set bits 0..1 only" if mask else None, src, FILE)


def test_row_pitch_known_at_launch_only():
    """A symbolic row pitch is checked when the array is bound (runtime and simulator
    alike), naming the buffer."""
    src = kernel("if tid == 0:", EXPECT.format(TILE), LOAD.format("", ""), WAIT,
                 a=(64, "M"), mark_def=True)
    func = from_source(src, filename=FILE, env=ENV)
    a = np.zeros((64, 100), np.float16)
    with pytest.raises(tw.LaunchError) as info:
        tw.simulate(func, a, np.zeros_like(a))
    check_error(info.value, "the tensor map of 'A' (2-D box 64x64, 128B swizzle, oob zero) "
                "cannot describe this array: the stride of dimension 1 (innermost first) is "
                "200 bytes", "pad the array", src, FILE)


OPTIONS = [
    ("prefetch-not-bool",
     "option prefetch_tensormap= of copy_async must be a compile-time True or False",
     kernel(LOAD.format(", prefetch_tensormap=1", MARK))),
    ("oob-unknown", "option oob='inf' of copy_async is not one of 'zero', 'nan'",
     kernel(LOAD.format(', oob="inf"', MARK))),
    ("l2-promotion-unknown", "option l2_promotion=100 of copy_async is not one of 0, 64, 128, "
     "256", kernel(LOAD.format(", l2_promotion=100", MARK))),
    ("reduce-unknown", "option use_tma_reduce='mul' of copy_async is not one of 'add', 'min', "
     "'max'", kernel(STORE.format(', use_tma_reduce="mul"', MARK))),
    ("cluster-extent", "T.cta_id_in_cluster takes a list of up to 3 positive compile-time "
     "int(s), got [0]",
     kernel("c = T.cta_id_in_cluster([0])" + MARK)),
]


@pytest.mark.parametrize("case", OPTIONS, ids=[c[0] for c in OPTIONS])
def test_options_checked_at_the_call(case):
    _, message, src = case
    with pytest.raises(tw.ScriptError) as info:
        from_source(src, filename=FILE, env=ENV)
    check_error(info.value, message, None, src, FILE)


def test_explain_shows_why_tma_was_chosen():
    """A swizzled load with an mbarrier: bulk and ldgsts decline with their reasons, tma
    takes it and says what it planned."""
    from tilewise.pipeline import explain

    src = kernel("if tid == 0:", EXPECT.format(TILE),
                 "Tx.cta.copy_async(Sh[:, :], A[0:64, :], mbar=T.address_of(bar[0]))", WAIT,
                 a=(64, 64))
    text = explain(from_source(src, filename=FILE, env=ENV), "sm_90a")
    assert "bulk (priority 25): declined: shared buffer 'Sh' is swizzled" in text
    assert "ldgsts (priority 20): declined: completion by mbarrier needs a TMA variant" in text
    assert ("tma (priority 10): chosen (1 TMA load(s) of a 2-D box 64x64, 128B swizzle, oob "
            "zero (8192 bytes each))") in text


@pytest.mark.parametrize("target, decl, message", [
    ("sm_80", "[2]", "T.cta_id_in_cluster declares a cluster; thread-block clusters need sm_90 "
     "or newer, target is sm_80"),
    ("sm_90a", "[4, 4, 2]", "a cluster of (4, 4, 2) has 32 CTAs; a cluster has at most 16"),
])
def test_cluster_declaration_is_checked_for_the_target(target, decl, message):
    src = kernel(f"c = T.cta_id_in_cluster({decl})" + MARK)
    with pytest.raises(tw.CompileError) as info:
        lower(from_source(src, filename=FILE, env=ENV), target)
    check_error(info.value, message, None, src, FILE)


FENCED_TILE = ("for i in range(32):", "    Sh[i * 2 + tid // 64, tid % 64] = A[0, 0]",
               "T.ptx.fence.proxy_async()", "T.cuda.cta_sync()")


def test_tma_stores_of_two_ctas_into_one_tile_race():
    """A TMA store writes global memory like any store: the race shadows see it."""
    src = kernel(*FENCED_TILE, "if tid == 0:", "    " + STORE.format("", MARK),
                 "    T.ptx.cp_async.bulk.commit_group()", "    T.ptx.cp_async.bulk.wait_group(0)")
    func = from_source(src, filename=FILE, env=ENV)
    a = np.zeros((64, 64), np.float16)
    assert tw.simulate(func, a, np.zeros_like(a)).ok  # one CTA: no race
    with pytest.warns(tw.SimulationWarning):  # the same tile twice: benign, a warning
        assert len(tw.simulate(func, a, np.zeros_like(a), grid=2).warnings) == 1
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(func, a, np.zeros_like(a), grid=2, strict_races=True)
    check_error(info.value, "write-write race on global memory with identical bytes: this "
                "thread writes bytes CTA (0, 0, 0) wrote in the same launch",
                "give each CTA its own part", src, FILE)


def test_a_tma_load_of_global_bytes_another_thread_just_wrote_races():
    write = "A[tid % 64, tid // 64] = A[tid % 64, tid // 64] + 1.0"
    load = ("if tid == 0:", EXPECT.format(TILE), "    " + LOAD.format("", MARK), WAIT)
    src = kernel(write, *load)
    with pytest.raises(tw.HazardError) as info:
        _run(src)
    check_error(info.value, "read-after-write race on global memory: this thread reads bytes "
                "thread 64 of this CTA wrote with no bar.sync in between", None, src, FILE)
    assert _run(kernel(write, "T.cuda.cta_sync()", *load)).ok
