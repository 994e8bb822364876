"""Bulk TMA copies, bulk groups, fence.proxy.async and the blocking mbarrier wait: the
round-trip kernels compile to cubin for sm_90a and sm_100a, with the PTX the table spells."""

import re

import pytest

import tilewise as tw
from tilewise import T
from tilewise.errors import CompileError


@T.prim_func
def bulk_round_trip(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group_read(0)
        T.ptx.cp_async.bulk.wait_group(0)


@T.prim_func
def store_round_trip(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid < 8:  # eight stores, per-thread addresses
        T.ptx.cp_async.bulk.s2g(T.address_of(B[tid * 128]), T.address_of(S[tid * 128]), 256)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group(0)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("kernel", [bulk_round_trip, store_round_trip])
def test_round_trip_assembles(kernel, target):
    k = tw.compile(kernel, target)
    assert k.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_round_trip_ptx_has_every_instruction(target):
    ptx = tw.compile(bulk_round_trip, target).source("ptx")
    for spelling in ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                     "cp.async.bulk.global.shared::cta.bulk_group",
                     "cp.async.bulk.commit_group;", "cp.async.bulk.wait_group.read \t0;",
                     "cp.async.bulk.wait_group \t0;", "mbarrier.try_wait.parity.shared.b64",
                     "mbarrier.arrive.expect_tx"):
        assert spelling in ptx, spelling
    # the shared::cluster destination is the CTA's own shared address, converted
    assert "cvta.to.shared::cluster.u64" in ptx
    assert ".version 8.0" in ptx if target == "sm_90a" else ".version 8.6" in ptx
    fence = tw.compile(store_round_trip, target).source("ptx")
    assert "fence.proxy.async.shared::cta;" in fence


def test_wait_parity_is_a_loop_back_to_the_try_wait():
    ptx = tw.compile(bulk_round_trip, "sm_90a").source("ptx")
    lines = ptx.splitlines()
    at = next(i for i, line in enumerate(lines) if "mbarrier.try_wait.parity" in line)
    label = next(line.strip().rstrip(":") for line in reversed(lines[:at])
                 if re.match(r"^\$\w+:$", line.strip()))
    branch_back = [line for line in lines[at + 1:] if re.search(r"\bbra(\.uni)?\s+" +
                                                                 re.escape(label) + ";", line)]
    assert branch_back, f"no branch back to {label} after the try_wait:\n{ptx}"
    assert "@" in branch_back[0]  # conditional: leaves the loop once try_wait succeeds


def test_bulk_copies_need_sm_90():
    with pytest.raises(CompileError) as info:
        tw.compile(store_round_trip, "sm_80")  # refused before LLVM could abort
    assert "T.ptx.fence.proxy_async (fence.proxy.async{.space}) needs sm_90" in str(
        info.value)
