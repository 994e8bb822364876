"""LLVM lowerings of the synchronisation instructions the next issues build on, in their
TIRx spellings: what they become in PTX, and that nvJitLink assembles it."""

import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.codegen.cubin import link_cubin

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
'''


CLUSTER_HEAD = HEAD.replace("    T.device_entry()\n", "    T.device_entry()\n"
                           "    T.cta_id([2])\n    T.cta_id_in_cluster([2])\n")


def ptx_of(*lines: str, target="sm_90a", head=HEAD) -> str:
    src = head + "".join("    " + ln + "\n" for ln in lines)
    kernel = tw.compile(from_source(src), target)
    ptx = kernel.source("ptx")
    assert link_cubin(ptx, target)[:4] == b"\x7fELF"
    return ptx


@pytest.mark.parametrize("space,spelt", [(None, "shared::cta"), ("shared::cta", "shared::cta"),
                                         ("shared::cluster", "shared::cluster"),
                                         ("global", "global")])
def test_fence_proxy_async_space(space, spelt):
    arg = "" if space is None else repr(space)
    assert f"fence.proxy.async.{spelt};" in ptx_of(f"T.ptx.fence.proxy_async({arg})")


def test_fence_proxy_async_unknown_space_is_refused_when_bound():
    with pytest.raises(tw.ScriptError, match="is 'shared'; expected one of 'shared::cta'"):
        ptx_of('T.ptx.fence.proxy_async("shared")')


def test_mbarrier_try_wait_is_a_parity_loop_in_both_spellings():
    """TIRx's blocking ``T.ptx.mbarrier.try_wait(bar, phase)`` and the older
    ``wait_parity`` are one instruction: a try_wait.parity that branches back until the
    phase of that parity completed."""
    lines = ('if tid == 0:', '    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)',
             'T.cuda.cta_sync()', 'T.ptx.mbarrier.arrive(T.address_of(bar[0]))')
    for spelling in ("try_wait", "wait_parity"):
        ptx = ptx_of(*lines, f"T.ptx.mbarrier.{spelling}(T.address_of(bar[0]), 0)")
        body = ptx.split("mbarrier.try_wait.parity.shared.b64", 1)[1]
        assert "mbarrier.try_wait.parity.shared.b64" in ptx and "@%p" in body and "bra" in body


def test_an_alias_keeps_its_spelling_in_the_ir():
    src = HEAD + "    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 1)\n" \
                 "    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 1)\n"
    text = from_source(src).script()
    assert "T.ptx.mbarrier.wait_parity(" in text and "T.ptx.mbarrier.try_wait(" in text


def test_remote_arrive_expect_tx_maps_the_address_into_the_cluster():
    ptx = ptx_of("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 16, remote=1, "
                 "pred=tid == 0)", head=CLUSTER_HEAD)
    assert "mapa.shared::cluster" in ptx
    assert "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [" in ptx


def test_a_remote_arrive_at_cta_scope_drops_the_cluster_release():
    """scope="cta": the arrive releases at CTA scope (no fence before it: what a consumer
    freeing a stage for a peer's multicast copy needs, as CUTLASS's ClusterBarrier::arrive);
    the default keeps the cluster-scope release. The simulator runs both alike."""
    ptx = ptx_of("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1, "
                 "scope='cta')", head=CLUSTER_HEAD)
    assert "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [" in ptx
    assert "release.cluster.shared::cluster" not in ptx
    with pytest.raises(tw.TilewiseError, match="scope"):
        ptx_of("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1, "
               "scope='gpu')", head=CLUSTER_HEAD)


@pytest.mark.parametrize("head,rank,message", [
    (HEAD, 1, "remote= 1 names a CTA of a cluster, but the kernel declares no cluster"),
    (CLUSTER_HEAD, 2, "remote= 2 is outside the cluster of 2 CTA(s) (2, 1, 1)")])
def test_a_constant_remote_rank_outside_the_cluster_is_refused_at_compile_time(head, rank,
                                                                               message):
    with pytest.raises(tw.CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ptx_of(f"T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 16, remote={rank})",
               head=head)


def test_local_arrive_expect_tx_is_the_cta_form():
    ptx = ptx_of("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 16)")
    assert "mbarrier.arrive.expect_tx.shared.b64" in ptx and "mapa" not in ptx


def test_remote_rank_must_be_an_integer():
    with pytest.raises(tw.ScriptError, match="is a CTA rank in the cluster and must be an "
                                             "integer"):
        ptx_of("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 16, remote=0.5)")


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a", "sm_103a", "sm_120a"])
def test_setmaxnreg_lowers_and_assembles(target):
    ptx = ptx_of("T.ptx.setmaxnreg(False, 56)", "T.ptx.setmaxnreg(True, 232)", target=target)
    assert "setmaxnreg.dec.sync.aligned.u32 \t56;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx


@pytest.mark.parametrize("n", [16, 100, 264])
def test_setmaxnreg_count_is_checked_when_bound(n):
    with pytest.raises(tw.ScriptError, match=f"is {n}; PTX allows 24..256 in steps of 8"):
        ptx_of(f"T.ptx.setmaxnreg(True, {n})")


@pytest.mark.parametrize("target", ["sm_90", "sm_100", "sm_89"])
def test_setmaxnreg_needs_an_arch_specific_target(target):
    with pytest.raises(tw.CompileError, match=f"T.ptx.setmaxnreg .* needs sm_90a, sm_100a, "
                                              f".*; target is {target}"):
        ptx_of("T.ptx.setmaxnreg(False, 56)", target=target)


def test_a_named_barrier_count_that_is_not_whole_warps_is_a_compile_error():
    """ptxas refuses it; tilewise says so at the call's line first (the simulator reports
    it as a hazard when it runs)."""
    from errcheck import check_error

    src = ("\n@T.prim_func\ndef k(A_ptr: T.handle):\n"
           "    A = T.match_buffer(A_ptr, (64,), \"float32\")\n    T.device_entry()\n"
           "    tid = T.thread_id([64])\n    T.ptx.bar.sync(1, 48)  # <-\n    A[tid] = 1.0\n")
    func = tw.from_source(src, filename="user_bar.py")
    with pytest.raises(tw.CompileError) as info:
        tw.compile(func, "sm_90a").source("ptx")
    check_error(info.value, "bar.sync 1, 48: the thread count of a named barrier must be a "
                "positive multiple of 32 (whole warps)", "count whole warps", src, "user_bar.py")
