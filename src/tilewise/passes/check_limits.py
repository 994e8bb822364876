"""Launch limits the compiler can check before any code exists, at the user's line: a
declared cluster on a target with clusters, of at most 16 CTAs; static shared memory within
48 KB, static plus dynamic shared memory within the target's maximum (227 KB on sm_90 and
sm_100). Buffers are laid out as the code generator lays them out
(each at ``max(16, align)``); views take no room of their own."""

from __future__ import annotations

from ..errors import CompileError
from ..ir.stmt import DeclBuffer, PrimFunc
from ..ir.visitor import walk
from ..target import DYN_SHARED_PAD, STATIC_SHARED_BYTES


def shared_layout(func: PrimFunc) -> tuple[int, int, list]:
    """``(static bytes, dynamic bytes, [(DeclBuffer, static total after it)])``; the
    dynamic bytes include the run-time alignment pad of the dynamic window."""
    static = dynamic = 0
    steps = []

    def look(n):
        nonlocal static, dynamic
        if not isinstance(n, DeclBuffer) or n.buffer.view_of is not None:
            return
        b = n.buffer
        if b.scope not in ("shared", "shared.dyn"):
            return
        align = max(16, b.align)
        size = b.size * b.dtype.bytes
        if b.scope == "shared":
            static = -(-static // align) * align + size
            steps.append((n, static))
        else:
            dynamic = -(-dynamic // align) * align + size
    walk(func.body, look)
    if dynamic:  # the code generator rounds the 16-aligned dynamic base up to 1024 bytes
        dynamic += DYN_SHARED_PAD
    return static, dynamic, steps


MAX_CLUSTER = 16  # CTAs per cluster with the non-portable opt-in (8 portable)


def _check_cluster(func: PrimFunc, target) -> None:
    """A declared cluster (``T.cta_id_in_cluster``) needs sm_90+ and at most 16 CTAs (the
    portable 8 is checked with the compile options, which may opt in to 16)."""
    cluster = func.launch_config.cluster
    if cluster == (1, 1, 1):
        return
    decl = next(b for b in func.launch if b.kind == "cta_id_in_cluster")
    if not target.has("cluster"):
        raise CompileError(f"T.cta_id_in_cluster declares a cluster; thread-block clusters "
                           f"need sm_90 or newer, target is {target}", decl.span,
                           hint="compile for sm_90a or newer")
    n = cluster[0] * cluster[1] * cluster[2]
    if n > MAX_CLUSTER:
        raise CompileError(f"a cluster of {cluster} has {n} CTAs; a cluster has at most "
                           f"{MAX_CLUSTER}", decl.span, hint="declare a smaller cluster")


def check_limits(func: PrimFunc, target) -> PrimFunc:
    _check_cluster(func, target)
    static, dynamic, steps = shared_layout(func)
    if static > STATIC_SHARED_BYTES:
        decl = next(d for d, total in steps if total > STATIC_SHARED_BYTES)
        raise CompileError(f"static shared memory reaches {static} bytes with buffer "
                           f"{decl.buffer.name!r}; a CTA may declare at most "
                           f"{STATIC_SHARED_BYTES} bytes statically", decl.span,
                           hint="allocate large tiles with scope=\"shared.dyn\" (dynamic shared "
                           f"memory, up to {target.max_shared_bytes} bytes on {target})")
    if static + dynamic > target.max_shared_bytes:
        raise CompileError(f"{func.name} needs {static + dynamic} bytes of shared memory per CTA "
                           f"({static} static + {dynamic} dynamic); {target} allows "
                           f"{target.max_shared_bytes}", func.span,
                           hint="use smaller tiles or fewer stages")
    return func
