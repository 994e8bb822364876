"""Kernel options, checked before a single LLVM instruction is built.

LLVM aborts the whole Python process when it meets a malformed attribute, so every
option is checked here first and reported as a :class:`CompileError`. (An intrinsic the
target cannot select — LLVM's "Cannot select: intrinsic ..." — is ruled out earlier: the
pipeline's target check, :mod:`tilewise.passes.check_targets`.)
"""

from __future__ import annotations

from ..errors import CompileError, did_you_mean, looks_bool

#: Kernel options ``tw.compile`` accepts, with what each must be.
OPTIONS = {
    "maxntid": "threads per CTA upper bound, an int or a tuple of up to 3 ints",
    "minctasm": "minimum CTAs per SM, an int",
    "maxnreg": "maximum registers per thread, an int",
    "cluster_dim": "CTAs per cluster, an int or a tuple of up to 3 ints (sm_90+)",
    "nonportable_cluster": "allow clusters of up to 16 CTAs instead of 8 (bool, sm_90+)",
    "ftz": "flush float32 denormals to zero in libdevice math (bool, default False)",
    "programmatic": "launch with programmatic stream serialization (programmatic dependent "
                    "launch, sm_90+): the kernel may start before the one ahead of it on its "
                    "stream has completed, and waits for it with T.ptx.griddepcontrol.wait() "
                    "(bool, default False)",
}


def _dims(name: str, value, most: int) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(
        value, (tuple, list)) else None
    if (not dims or len(dims) > most
            or any(not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in dims)):
        raise CompileError(f"option {name}={value!r} is invalid: expected {OPTIONS[name]}")
    return dims


def _strict_bool(name: str, v) -> bool:
    """True, False, 0 or 1 (numpy bools included); a string ("false" is true to Python) or
    anything else is a CompileError."""
    if isinstance(v, bool) or type(v).__name__ == "bool_" or (
            isinstance(v, int) and v in (0, 1)):
        return bool(v)
    looks = looks_bool(v)
    if looks is not None:
        raise CompileError(f"option {name}={v!r} is a string; {name} takes True or False",
                           hint=f"pass {name}={looks} (a string is not a bool: to Python "
                           f"{v!r} is {bool(v)})")
    raise CompileError(f"option {name}={v!r} is invalid: expected {OPTIONS[name]}",
                       hint=f"pass {name}=True or {name}=False")


def check_options(options: dict, target) -> dict:
    """Validate ``tw.compile`` keyword options; returns them normalised (tuples of ints)."""
    out = {}
    for k, v in options.items():
        if k not in OPTIONS:
            raise CompileError(f"tw.compile has no option {k!r}", hint=did_you_mean(k, OPTIONS))
        if k in ("ftz", "nonportable_cluster", "programmatic"):
            out[k] = _strict_bool(k, v)
        else:
            out[k] = _dims(k, v, 3 if k in ("maxntid", "cluster_dim") else 1)
    problem = target.cluster_problem("cluster_dim asks for a cluster")
    if "cluster_dim" in out and problem:
        raise CompileError(problem, hint="drop cluster_dim or compile for sm_90a or newer")
    if out.get("programmatic") and not target.has("griddepcontrol"):
        raise CompileError(f"programmatic=True launches with programmatic dependent launch, "
                           f"which needs sm_90 or newer; target is {target}",
                           hint="drop programmatic=True or compile for sm_90a or newer")
    return out


def check_programmatic(options: dict, func) -> None:
    """A kernel compiled with ``programmatic=True`` may start while the kernel ahead of it on
    its stream still runs: it must wait for it (``T.ptx.griddepcontrol.wait()``) before it
    reads what that one wrote; one that never waits is refused."""
    if not options.get("programmatic"):
        return
    from ..ptx.table import uses

    if not uses(func.body, lambda row: row.name == "ptx.griddepcontrol.wait"):
        raise CompileError(f"{func.name} is compiled with programmatic=True but never calls "
                           "T.ptx.griddepcontrol.wait(): it could read the previous "
                           "kernel's output before that kernel has written it",
                           hint="call T.ptx.griddepcontrol.wait() before the first read of "
                                "the earlier kernel's results, or drop programmatic=True")


MAX_CLUSTER = 8  # CTAs per cluster, portable; 16 with the non-portable opt-in


def declared_cluster(options: dict, func) -> dict:
    """``options`` with ``cluster_dim`` taken from the kernel's ``T.cta_id_in_cluster``
    declaration, when it has one (the option, if also given, must agree; the pipeline has
    checked the target and the size). A declared cluster of more than 8 CTAs is the
    kernel's own request for the non-portable size: ``nonportable_cluster`` becomes True
    unless it was given as False (then :func:`check_launch` refuses the cluster)."""
    import math

    cluster = func.launch_config.cluster
    if cluster == (1, 1, 1):
        return options
    if math.prod(cluster) > MAX_CLUSTER and "nonportable_cluster" not in options:
        options = {**options, "nonportable_cluster": True}
    decl = next(b for b in func.launch if b.kind == "cta_id_in_cluster")
    given = options.get("cluster_dim")
    given = None if given is None else tuple(given) + (1,) * (3 - len(given))
    if given is not None and given != cluster:
        raise CompileError(f"cluster_dim={given} but the kernel declares clusters of "
                           f"{cluster} (T.cta_id_in_cluster)", decl.span,
                           hint="drop cluster_dim= (the declaration sets it)")
    return {**options, "cluster_dim": cluster}


def check_launch(options: dict, func) -> None:
    """Options against the kernel's launch: ``maxntid`` must admit the declared threads;
    a cluster has at most 8 CTAs (16 with ``nonportable_cluster=True``) and its dimensions
    divide the grid (a grid of symbolic sizes is checked at launch)."""
    import math

    cfg = func.launch_config
    if "maxntid" in options and math.prod(options["maxntid"]) < cfg.block:
        raise CompileError(f"maxntid={options['maxntid']} admits {math.prod(options['maxntid'])} "
                           f"threads but the kernel declares {cfg.block} per CTA", func.span,
                           hint="raise maxntid or declare fewer threads")
    dims = options.get("cluster_dim")
    if dims is None:
        return
    most = 16 if options.get("nonportable_cluster") else MAX_CLUSTER
    if math.prod(dims) > most:
        raise CompileError(f"cluster_dim={dims} has {math.prod(dims)} CTAs; a cluster has at "
                           f"most {most}", func.span,
                           hint="use a smaller cluster" + ("" if most == 16 else
                                                           ", or nonportable_cluster=True for "
                                                           "up to 16 on sm_90 (a kernel that "
                                                           "declares its cluster gets it "
                                                           "unless given False)"))
    for axis, (g, c) in enumerate(zip(cfg.grid, dims)):
        if isinstance(g, int) and g % c:
            raise CompileError(f"cluster_dim={dims} does not divide the grid {cfg.grid} "
                               f"(dimension {'xyz'[axis]}: {g} CTAs in clusters of {c})",
                               func.span, hint="make every grid dimension a multiple of the "
                               "cluster's")
