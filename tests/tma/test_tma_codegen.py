"""TMA, cluster and dsmem code generation: the PTX of each form, the tensor map as a
grid-constant byval parameter, the tensor-map specs a kernel records, the argument
marshalling of the driver's encoder, and that every form assembles (nvJitLink)."""

import numpy as np
import pytest

import tilewise as tw
from kernels_cluster import make_multicast, make_ring
from kernels_tma import make_roundtrip
from tilewise import T, Tx
from tilewise.codegen.cubin import link_cubin
from tilewise.errors import CompileError
from tilewise.layout import S, TileLayout
from tilewise.ptx import tma
from tilewise.runtime import tensormap as rt


def _ptx(func, target="sm_90a", **options):
    k = tw.compile(func, target, **options)
    ptx = k.source("ptx")
    assert link_cubin(ptx, target)[:4] == b"\x7fELF"
    return k, ptx


def test_tensor_map_is_a_grid_constant_byval_parameter():
    k, ptx = _ptx(make_roundtrip(2, "float16", 128, (8, 64)))
    llvm = k.source("llvm")
    assert 'ptr byval([128 x i8]) align 64 "nvvm.grid_constant"' in llvm
    assert ".param .align 64 .b8 tma_roundtrip_2d_param_6[128]" in ptx  # after A, B, R, sizes
    assert "cvta.param.u64" in ptx and ".local" not in ptx  # no local copy of the map
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            in ptx)
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx


def test_the_kernel_records_its_tensor_maps():
    k = tw.compile(make_roundtrip(3, "float32", 64, (2, 8, 16)), "sm_90a")
    (a_map, b_map) = k.lowered.func.attr("tensor_maps")
    assert (a_map.buffer.name, b_map.buffer.name) == ("A", "B")
    spec = a_map.spec
    assert (spec.dtype, spec.rank, spec.box, spec.swizzle, spec.oob) == \
        ("float32", 3, (16, 8, 2), 64, "zero")
    assert [str(d.name) for d in spec.dims] == ["N", "M", "D"]  # innermost first
    assert "# A_tmap: tensor map of A, 3-D box 2x8x16, 64B swizzle, oob zero" in \
        k.source("lowered")


def test_five_dimensional_box():
    _, ptx = _ptx(make_roundtrip(5, "int8", 32, (2, 1, 2, 4, 32)))
    assert "cp.async.bulk.tensor.5d.shared::cluster.global.tile" in ptx


def _tile_kernel(**options):
    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (256, 64), "float16")
        B = T.match_buffer(B_ptr, (256, 64), "float16")
        T.device_entry()
        bx = T.cta_id([4])
        tid = T.thread_id([128])
        Sh = T.alloc_buffer((64, 64), "float16", scope="shared.dyn",
                            layout=TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16))
        bar = T.alloc_shared([1], "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 8192)
        Tx.cta.copy_async(Sh[:, :], A[bx * 64:bx * 64 + 64, :], dispatch="tma",
                          mbar=T.address_of(bar[0]), cache_hint=options.get("load_hint"),
                          prefetch_tensormap=options.get("prefetch"),
                          l2_promotion=options.get("l2"), cta_group=options.get("cta_group"))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        if tid == 0:
            Tx.thread.copy_async(B[bx * 64:bx * 64 + 64, :], Sh[:, :], dispatch="tma",
                                 cache_hint=options.get("store_hint"),
                                 use_tma_reduce=options.get("reduce"))
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return k


def test_cache_hints_prefetch_and_reduction():
    k, ptx = _ptx(_tile_kernel(load_hint="evict_first", store_hint="evict_last",
                               prefetch=True, reduce="add", l2=256))
    assert "prefetch.param.tensormap" in ptx
    assert ".mbarrier::complete_tx::bytes.L2::cache_hint" in ptx
    assert str(tma.CACHE_POLICY["evict_first"]) in ptx
    assert str(tma.CACHE_POLICY["evict_last"]) in ptx
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in ptx
    a_map = k.lowered.func.attr("tensor_maps")[0]
    assert a_map.spec.l2_promotion == 256


def test_cta_group_is_spelt_on_blackwell_and_refused_on_hopper():
    _, ptx = _ptx(_tile_kernel(cta_group=1), "sm_100a")
    assert ".cta_group::1" in ptx
    with pytest.raises(tw.DispatchError, match="TMA cta_group= needs sm_100a"):
        tw.compile(_tile_kernel(cta_group=1), "sm_90a")


def test_multicast_declares_the_cluster():
    k, ptx = _ptx(make_multicast(2))
    assert ".reqnctapercluster 2, 1, 1" in ptx and "%cluster_ctaid.x" in ptx
    assert ".multicast::cluster" in ptx and "fence.mbarrier_init.release.cluster" in ptx
    assert "barrier.cluster.arrive.aligned" in ptx and "barrier.cluster.wait.aligned" in ptx
    assert k.options["cluster_dim"] == (2, 1, 1)


def test_dsmem_maps_the_destination_and_its_mbarrier():
    _, ptx = _ptx(make_ring(4, 1024))
    lines = ptx.splitlines()
    copy = next(ln for ln in lines if "cp.async.bulk.shared::cluster.shared::cta" in ln)
    dst, mbar = copy.split("[")[1].split("]")[0], copy.split("[")[-1].split("]")[0]
    mapped = [ln.split()[1].rstrip(",") for ln in lines if "mapa.shared::cluster.u64" in ln]
    assert dst in mapped and mbar in mapped and dst != mbar


def test_cluster_option_must_agree_with_the_declaration():
    with pytest.raises(CompileError, match=r"cluster_dim=\(4, 1, 1\) but the kernel declares "
                       r"clusters of \(2, 1, 1\)"):
        tw.compile(make_multicast(2), "sm_90a", cluster_dim=4)


@pytest.mark.parametrize("relaxed, aligned", [(False, False), (True, False), (False, True),
                                              (True, True)])
def test_cluster_barrier_forms(relaxed, aligned):
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (256,), "int32")
        T.device_entry()
        T.cta_id([2])
        c = T.cta_id_in_cluster([2])
        tid = T.thread_id([128])
        T.ptx.barrier.cluster.arrive(relaxed, aligned)
        T.ptx.barrier.cluster.wait(aligned)
        A[c * 128 + tid] = c

    _, ptx = _ptx(k)
    spell = "barrier.cluster.arrive" + (".relaxed" if relaxed else "") + \
        (".aligned" if aligned else "") + ";"
    assert spell in ptx


def test_encoder_arguments(monkeypatch):
    """The driver's cuTensorMapEncodeTiled gets the map innermost first, byte strides of
    dimensions 1.., the box, unit element strides, and the enums of ptx/tma.py, into a
    128-byte aligned buffer; a second launch with the same geometry reuses the map."""
    calls = []

    def fake(out, dtype, rank, addr, dims, strides, box, estrides, il, swz, l2, oob):
        calls.append((out % 128, dtype, rank, addr.value, list(dims[:rank]),
                      list(strides[:rank - 1]), list(box[:rank]), list(estrides[:rank]),
                      il, swz, l2, oob))
        return 0

    monkeypatch.setattr(rt, "_encoder", lambda: fake)
    rt._CACHE.clear()
    spec = tma.TensorMapSpec("bfloat16", 2, (100, 40), (104,), (64, 8), 128, "nan", 256)
    out = rt.encode(spec, 0x7000, [100, 40], [208])
    again = rt.encode(spec, 0x7000, [100, 40], [208])
    assert out is again and len(calls) == 1 and out.size == 128
    assert calls[0] == (0, 9, 2, 0x7000, [100, 40], [208], [64, 8], [1, 1], 0, 3, 3, 1)


def test_geometry_is_checked_before_encoding():
    spec = tma.TensorMapSpec("float16", 2, (100, 40), (100,), (64, 8))
    m = tma.TensorMapParam(None, type("B", (), {"name": "A"})(), spec)
    with pytest.raises(tw.LaunchError, match="stride of dimension 1 .* is 200 bytes"):
        tma.launch_geometry(m, lambda e: e, 0)
    with pytest.raises(tw.LaunchError, match="not on a 16-byte boundary"):
        tma.launch_geometry(m, lambda e: 104 if e == 100 else e, 8)
    assert np.asarray(tma.launch_geometry(m, lambda e: 104 if e == 100 else e, 0)[1]) == 208


class _DeviceArray:
    def __init__(self, shape, typestr="<f2", ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": None, "version": 3}


def test_launch_checks_tensor_maps_before_the_driver():
    """The geometry the driver would refuse is a LaunchError in prepare(), naming the
    buffer; a good one passes and binds the sizes the maps are encoded from."""
    from tilewise.runtime.launch import prepare

    k = tw.compile(make_roundtrip(2, "float16", 128, (8, 64)), "sm_90a")
    r = _DeviceArray((4, 1024), "|u1")
    call, grid = prepare(k, [_DeviceArray((40, 104)), _DeviceArray((40, 104)), r])
    assert grid == (4, 1, 1)
    with pytest.raises(tw.LaunchError, match="the tensor map of 'A' .* 200 bytes"):
        prepare(k, [_DeviceArray((40, 100)), _DeviceArray((40, 100)), r])


def test_encoder_entry_point_through_the_driver(monkeypatch):
    """The encoder is the function pointer the driver's cuGetProcAddress returns, called
    through ctypes with the C signature of cuTensorMapEncodeTiled (here a Python callback
    stands in for the driver's function)."""
    import ctypes
    import types

    from cuda.bindings import driver

    seen = []

    @rt._PROTO
    def encode_tiled(out, dtype, rank, addr, dims, strides, box, estrides, il, swz, l2, oob):
        seen.append((dtype, rank, addr, [dims[i] for i in range(rank)],
                     [box[i] for i in range(rank)], swz, l2, oob))
        ctypes.memset(out, 0x5A, 128)
        return 0

    pfn = ctypes.cast(encode_tiled, ctypes.c_void_p).value
    fake = types.SimpleNamespace(
        CUresult=driver.CUresult, CUdriverProcAddress_flags=driver.CUdriverProcAddress_flags,
        cuGetProcAddress=lambda sym, ver, flags: (driver.CUresult.CUDA_SUCCESS, pfn, 0))
    monkeypatch.setattr(rt.device, "_driver", lambda: fake)
    monkeypatch.setattr(rt, "_ENCODE", None)
    rt._CACHE.clear()
    spec = tma.TensorMapSpec("float16", 2, (64, 32), (64,), (64, 32), 128, "zero", 128)
    out = rt.encode(spec, 0x20000, [64, 32], [128])
    assert seen == [(6, 2, 0x20000, [64, 32], [64, 32], 3, 2, 0)]
    assert bytes(out) == b"\x5a" * 128 and out.ctypes.data % 128 == 0
    rt._CACHE.clear()
