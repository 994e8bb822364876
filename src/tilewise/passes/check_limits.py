"""Launch limits the compiler can check before any code exists, at the user's line: a
declared cluster on a target with clusters, of at most 16 CTAs; static shared memory within
48 KB, static plus dynamic shared memory within the target's maximum (227 KB on sm_90 and
sm_100), as the pipeline's :class:`~tilewise.passes.shared_plan.SharedPlan` lays them out (the
one layout the code generator and the simulator use too)."""

from __future__ import annotations

from ..errors import CompileError
from ..ir.stmt import PrimFunc
from ..target import STATIC_SHARED_BYTES
from .shared_plan import SharedPlan


MAX_CLUSTER = 16  # CTAs per cluster with the non-portable opt-in (8 portable)


def _check_cluster(func: PrimFunc, target) -> None:
    """A declared cluster (``T.cta_id_in_cluster``) needs sm_90+ and at most 16 CTAs (the
    portable 8 is checked with the compile options, which may opt in to 16)."""
    cluster = func.launch_config.cluster
    if cluster == (1, 1, 1):
        return
    decl = next(b for b in func.launch if b.kind == "cta_id_in_cluster")
    problem = target.cluster_problem("T.cta_id_in_cluster declares a cluster")
    if problem:
        raise CompileError(problem, decl.span, hint="compile for sm_90a or newer")
    n = cluster[0] * cluster[1] * cluster[2]
    if n > MAX_CLUSTER:
        raise CompileError(f"a cluster of {cluster} has {n} CTAs; a cluster has at most "
                           f"{MAX_CLUSTER}", decl.span, hint="declare a smaller cluster")


def check_limits(func: PrimFunc, target, plan: SharedPlan) -> PrimFunc:
    _check_cluster(func, target)
    static, dynamic = plan.static_bytes, plan.dynamic_request
    if static > STATIC_SHARED_BYTES:
        decl = next(s.decl for s in plan.slots
                    if not s.dynamic and s.offset + s.nbytes > STATIC_SHARED_BYTES)
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
