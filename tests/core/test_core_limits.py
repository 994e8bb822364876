"""Launch limits at compile time, at the user's line, and PTX-reserved names renamed in the
PTX only."""

import re

import pytest

import tilewise as tw
from tilewise import from_source

FILE = "limits.py"


def kernel(threads=128, lines=(), name="k"):
    body = "".join("    " + ln + "\n" for ln in lines)
    return (f"\n@T.prim_func\ndef {name}(A_ptr: T.handle):\n"
            "    A = T.match_buffer(A_ptr, (64,), \"int32\")\n"
            "    T.device_entry()\n"
            "    bx = T.cta_id([8])\n"
            f"    tid = T.thread_id([{threads}])  # THREADS\n" + body)


def _line(src, marker):
    return next(i for i, ln in enumerate(src.splitlines(), 1) if marker in ln)


def test_more_than_1024_threads_is_an_error_at_the_declaration():
    src = kernel(1056)
    with pytest.raises(tw.ScriptError, match="1056 threads per CTA; a CTA has at most 1024") as e:
        from_source(src, filename=FILE)
    assert e.value.span.line == _line(src, "# THREADS")


def test_static_shared_memory_over_48_kb_names_the_buffer():
    src = kernel(lines=('S0 = T.alloc_shared((8192,), "int32")',
                        'S1 = T.alloc_shared((8192,), "int32")  # BIG',
                        "S0[tid] = 1", "S1[tid] = 2", "A[tid % 64] = S0[tid] + S1[tid]"))
    with pytest.raises(tw.CompileError, match="static shared memory reaches 65536 bytes with "
                       "buffer 'S1'") as e:
        tw.compile(from_source(src, filename=FILE), target="sm_90a")
    assert e.value.span.line == _line(src, "# BIG")
    assert "shared.dyn" in e.value.hint


@pytest.mark.parametrize("target,kb,ok", [("sm_90a", 200, True), ("sm_90a", 230, False),
                                          ("sm_80", 160, True), ("sm_80", 170, False),
                                          ("sm_100a", 220, True)])
def test_dynamic_shared_memory_within_the_target_maximum(target, kb, ok):
    """The dynamic request includes the pad that rounds the 16-aligned dynamic window up to
    1024 bytes at run time (DYN_SHARED_PAD)."""
    from tilewise.target import DYN_SHARED_PAD

    src = kernel(lines=(f'D = T.alloc_buffer(({kb * 256},), "int32", scope="shared.dyn")',
                        "D[tid] = 1", "A[tid % 64] = D[tid]"))
    func = from_source(src, filename=FILE)
    want = kb * 1024 + DYN_SHARED_PAD
    if ok:
        assert tw.compile(func, target=target).dynamic_smem == want
    else:
        with pytest.raises(tw.CompileError, match=f"{want} dynamic\\); {target} allows"):
            tw.compile(func, target=target)


def test_options_that_contradict_the_launch():
    func = from_source(kernel(256), filename=FILE)
    with pytest.raises(tw.CompileError, match="maxntid=\\(128,\\) admits 128 threads but the "
                       "kernel declares 256"):
        tw.compile(func, target="sm_90a", maxntid=128)
    with pytest.raises(tw.CompileError, match="cluster_dim=\\(3,\\) does not divide the grid"):
        tw.compile(func, target="sm_90a", cluster_dim=3)
    with pytest.raises(tw.CompileError, match="has 16 CTAs; a cluster has at most 8") as e:
        tw.compile(func, target="sm_90a", cluster_dim=(8, 2))
    assert "nonportable_cluster=True" in e.value.hint
    tw.compile(func, target="sm_90a", cluster_dim=(8, 1), maxntid=256)


def test_a_nonportable_cluster_allows_16():
    src = kernel(128).replace("T.cta_id([8])", "T.cta_id([32])")
    func = from_source(src, filename=FILE)
    k = tw.compile(func, target="sm_90a", cluster_dim=16, nonportable_cluster=True)
    assert ".reqnctapercluster 16" in k.source("ptx")
    with pytest.raises(tw.CompileError, match="at most 16"):
        tw.compile(func, target="sm_90a", cluster_dim=32, nonportable_cluster=True)


def test_a_declared_cluster_of_16_asks_for_the_nonportable_size_itself():
    """A kernel that declares a cluster of 9-16 CTAs has asked for the non-portable size:
    it compiles without the option (the runtime then opts in), and an explicit
    ``nonportable_cluster=False`` is refused with the cluster named."""
    src = kernel(128, lines=("rank = T.cta_id_in_cluster([16])", "A[rank] = tid")).replace(
        "T.cta_id([8])", "T.cta_id([32])")
    func = from_source(src, filename=FILE)
    k = tw.compile(func, target="sm_90a")
    assert k.options["nonportable_cluster"] is True
    assert k.options["cluster_dim"] == (16, 1, 1)
    assert ".reqnctapercluster 16, 1, 1" in k.source("ptx")
    with pytest.raises(tw.CompileError, match="has 16 CTAs; a cluster has at most 8") as e:
        tw.compile(func, target="sm_90a", nonportable_cluster=False)
    assert "nonportable_cluster=True" in e.value.hint
    eight = from_source(src.replace("[16]", "[8]"), filename=FILE)
    assert "nonportable_cluster" not in tw.compile(eight, target="sm_90a").options


def test_alignment_requests_are_honoured_or_refused():
    src = kernel(lines=('S = T.alloc_shared((256,), "int32", align=1024)',
                        'D = T.alloc_buffer((256,), "int32", scope="shared.dyn", align=256)',
                        "S[tid] = A[tid % 64]", "D[tid] = 2", "T.cuda.cta_sync()",
                        "if tid < 64:", "    A[tid] = S[127 - tid] + D[tid]"))
    func = from_source(src, filename=FILE)
    assert "align=1024" in func.script()
    ptx = tw.compile(func, target="sm_90a").source("ptx")
    assert ".align 1024" in ptx  # a static buffer: the declaration's alignment
    # dynamic buffers: the window's 16-aligned base rounded up to 1024 bytes at run time
    assert re.search(r"and.b32\s+%r\d+, %r\d+, 1008;", ptx), ptx
    tw.simulate(func, __import__("numpy").zeros(64, "int32"), grid=1)  # one CTA writes A
    for bad, line in (("3", 'S = T.alloc_shared((4,), "int32", align=3)  # BAD'),
                      ("2048", 'S = T.alloc_shared((4,), "int32", align=2048)  # BAD'),
                      ("2", 'S = T.alloc_shared((4,), "int32", align=2)  # BAD'),
                      ("64", 'S = T.alloc_local((4,), "int32", align=64)  # BAD')):
        src = kernel(lines=(line,))
        with pytest.raises(tw.ScriptError, match=f"align={bad} cannot be honoured") as e:
            from_source(src, filename=FILE)
        assert e.value.span.line == _line(src, "# BAD")


@pytest.mark.parametrize("name", ["_", "WARP_SZ"])
def test_ptx_reserved_names_are_renamed_in_the_ptx_only(name):
    src = kernel(name=name, lines=(f'{name}_b = T.alloc_shared((64,), "int32")',
                                   'WARP_SZ = T.alloc_shared((64,), "int32")',
                                   "WARP_SZ[tid % 64] = A[tid % 64]", "T.cuda.cta_sync()",
                                   "A[tid % 64] = WARP_SZ[63 - tid % 64]"))
    func = from_source(src, filename=FILE)
    k = tw.compile(func, target="sm_90a")
    assert func.name == name and "WARP_SZ = T.alloc_buffer" in func.script()
    assert k.name == f"tw_{name}" if name == "_" else k.name == "tw_WARP_SZ"
    assert len(k.cubin) > 0
