"""One call of a tilewise custom op: outputs allocated, then the kernel on the inputs'
device: CUDA tensors launched on torch's current stream, CPU tensors in the simulator.

**CPU tensors run in the simulator.** ``tw.simulate`` executes the kernel's lowered program
on numpy arrays that share the tensors' memory (bfloat16 and the 8-bit floats by a view of
their bits), so it writes the outputs and mutated inputs in place, as the GPU does. This
is slow (the simulator models every thread) and meant for small sizes: tests of an op's
registration, fake implementation, autograd and ``torch.compile`` on a machine without a
GPU. The program is lowered once per kernel and target.
"""

from __future__ import annotations

from ..errors import LaunchError
from .kernels import func_of as _func_of
from .kernels import is_compiled as _is_compiled
from .kernels import is_tuned, result

_COMPILED: dict = {}  # (id(kernel), device ordinal) -> (kernel, Launcher)
_LOWERED: dict = {}  # (id(kernel), target) -> (kernel, Lowered)


def run(spec, values):
    import torch

    k = spec.kernel(values)
    plan = spec.plan(k)
    device = next((v.device for v in values.values() if isinstance(v, torch.Tensor)), None)
    if device is None:
        raise LaunchError(f"{spec.name}: no tensor among the inputs tells the device")
    outs = plan.outputs(spec, values, device)
    args = [outs[n] if n in outs else values[n] for n in plan.names]
    if device.type == "cuda":
        _launcher(k, device.index or 0)(args, None)
    elif device.type == "cpu":
        _simulate(spec, k, args)
    else:
        raise LaunchError(f"{spec.name}: tensors on {device.type} cannot run a tilewise "
                          "kernel", hint="pass CUDA tensors, or CPU tensors for the simulator")
    return result(spec.outputs, outs)


def _launcher(k, ordinal: int):
    entry = _COMPILED.get((id(k), ordinal))
    if entry is None:
        from ..runtime.launch import Launcher

        if is_tuned(k):  # it tunes (or finds its tuning) per arguments' key, then launches
            entry = _COMPILED[(id(k), ordinal)] = (k, lambda args, stream: k(*args,
                                                                              stream=stream))
            return entry[1]
        if _is_compiled(k):
            kernel = k
        else:
            from ..compiler import compile as tw_compile
            from ..runtime import device_target

            kernel = tw_compile(k, target=device_target(ordinal))
        entry = _COMPILED[(id(k), ordinal)] = (k, Launcher(kernel, ordinal))
    return entry[1]


def _simulate(spec, k, args):
    from ..sim import simulate

    if getattr(type(k), "__tilewise_simulate__", None) is not None:  # it adapts its arguments
        simulate(k, *[_numpy(a) for a in args], target=str(spec.target or "sm_90a"))
        return
    lowered = _lowered(spec, k)
    simulate(lowered, *[_numpy(a) for a in args])


def _lowered(spec, k):
    """The program the simulator runs: a compiled kernel's own (for its target), else the
    kernel lowered for ``target=`` (default sm_90a), once."""
    if getattr(k, "loaded", False):
        raise LaunchError(f"{spec.name}: a loaded kernel has no program for the simulator",
                          hint="run it on CUDA tensors, or register the @T.prim_func")
    if _is_compiled(k) and (spec.target is None or str(spec.target) == str(k.target)):
        return k.lowered
    target = str(spec.target or "sm_90a")
    entry = _LOWERED.get((id(k), target))
    if entry is None:
        from ..pipeline import lower

        entry = _LOWERED[(id(k), target)] = (k, lower(_func_of(k), target))
    return entry[1]


def _numpy(value):
    """A numpy view of a CPU tensor's memory (bit views for the types numpy lacks);
    scalars as they are."""
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    t = value.detach()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        import ml_dtypes

        kind = ml_dtypes.float8_e4m3fn if t.dtype == torch.float8_e4m3fn else (
            ml_dtypes.float8_e5m2)
        return t.view(torch.uint8).numpy().view(kind)
    return t.numpy()
