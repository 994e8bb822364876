"""Run one mutant through parse, compile (LLVM IR, PTX, cubin) and simulate, in this process,
and classify what happened.

Outcomes: ``ok`` (every stage passed), ``error`` (a TilewiseError: the clear refusal the
invariant allows), ``user`` (the mutant's own module code raised before tilewise was
involved: not ours to judge), and the findings: ``exception`` (any other exception from
tilewise's code), ``defect`` (a TilewiseError that calls itself an internal error, a code
generator defect or a simulator failure: either a real defect or a user mistake reported as
one). Hangs and aborts are seen by the driver (:mod:`driver`), which runs this in a child.
"""

from __future__ import annotations

import linecache
import pathlib
import traceback

import numpy as np

from mutate import ROOT, make_mutant

PACKAGE = str(pathlib.Path(__import__("tilewise").__file__).parent)
DEFECT_WORDS = ("internal error", "code generator defect", "simulator failure")
MAX_SIM_THREADS = 1 << 15  # simulate launches up to this many threads (and 64 CTAs)


def exec_module(source: str, filename: str, path: str | None = None) -> dict:
    """Run the mutant as a module whose source inspect can read (for @T.prim_func);
    ``path``, the seed's file, is its ``__file__`` (an example loads its siblings by it)."""
    import sys
    import types

    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    mod = types.ModuleType("fuzz_mutant")
    mod.__file__ = path or filename
    sys.modules["fuzz_mutant"] = mod  # dataclasses look their module up
    try:
        exec(compile(source, filename, "exec"), mod.__dict__)  # noqa: S102 - the mutant
    finally:
        sys.modules.pop("fuzz_mutant", None)
    return mod.__dict__


def _ours(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(PACKAGE):
            return True
        tb = tb.tb_next
    return False


def _simulate(tw, func, target, rng) -> str:
    from tilewise.ir.launch import LaunchConfig
    from tilewise.runner import random_inputs

    try:
        lc = LaunchConfig.of(func)
        ctas = int(np.prod(lc.grid)) if all(isinstance(g, int) for g in lc.grid) else 64
        if ctas > 64 or ctas * lc.block > MAX_SIM_THREADS:
            return "sim-skipped"
    except tw.TilewiseError:
        pass  # simulate reports it
    tw.simulate(func, *random_inputs(func, rng), target=target, **_sim_options(func, rng))
    return "simulated"


def _sim_options(func, rng) -> dict:
    """simulate()'s options drawn for a mutant: a check level, outputs=, strict_races=."""
    out = {}
    r = rng.random()
    if r < 0.15:
        out["checks"] = "races"
    elif r < 0.3:
        out["checks"] = "none"
    names = [b.name for b in func.param_buffers()]
    if names and rng.random() < 0.3:
        out["outputs"] = tuple(n for n in names if rng.random() < 0.5)
    if rng.random() < 0.2:
        out["strict_races"] = True
    return out


def _stages(tw, func, target, options, rng) -> list[str]:
    done = []
    k = tw.compile(func, target=target, **options)
    done.append("lowered")
    k.source("llvm")
    done.append("llvm")
    k.source("ptx")
    done.append("ptx")
    k.cubin  # noqa: B018 - nvJitLink assembles the PTX
    done.append("cubin")
    done.append(_simulate(tw, func, target, rng))
    return done


def run_mutant(seed, index: int, base: int) -> dict:
    """Build mutant ``index`` of ``seed`` and run it; a dict describing the outcome."""
    import tilewise as tw

    source, kernel, mutations, target, options = make_mutant(seed, index, base)
    out = {"seed": seed.name, "index": index, "base": base, "kernel": kernel,
           "mutations": mutations,
           "target": target, "options": repr(options), "stage": "parse", "status": "ok"}
    filename = f"<mutant {seed.name}#{index}>"
    rng = np.random.default_rng(index)
    try:
        ns = exec_module(source, filename, str(ROOT / seed.name))
        kernels = [v for v in ns.values() if isinstance(v, tw.ir.PrimFunc)]
        mutated = [k for k in kernels if k.name == kernel]
        if not mutated:  # a mutation removed or renamed it (a definition it depends on)
            out["status"], out["message"] = "gone", f"no kernel {kernel!r} in the mutant"
        for func in mutated[:1]:
            out["stage"] = "compile"
            out["stages"] = _stages(tw, func, target, options, rng)
    except tw.TilewiseError as e:
        text = str(e)
        out["status"] = "defect" if any(w in text for w in DEFECT_WORDS) else "error"
        out["kind"] = e.kind
        out["message"] = text.splitlines()[0][:300]
        if out["status"] == "defect":
            out["detail"] = text[:2000]
    except Exception as e:  # noqa: BLE001 - classifying every failure is the point
        out["status"] = "exception" if _ours(e) else "user"
        out["kind"] = type(e).__name__
        out["message"] = f"{type(e).__name__}: {e}"[:300]
        if out["status"] == "exception":
            out["detail"] = "".join(traceback.format_exception(e))[-4000:]
    finally:
        linecache.cache.pop(filename, None)
    return out


def mutant_source(seed, index: int, base: int) -> str:
    return make_mutant(seed, index, base)[0]
