"""``custom_op``: a tilewise kernel or kernel factory as a ``torch.library`` operator.

The op's signature is the kernel's (:class:`Signature`): every declared parameter of the
kernel, by name (a buffer's name for an array, ``X`` for ``X = T.match_buffer(X_ptr, ...)``;
a scalar parameter's name), is an input of the op, except the buffers named in ``outputs=``,
which the op allocates and returns. A factory's kernel is not known before the op is called,
so the op's inputs are then the parameters of ``specialize`` (tensors, and Python numbers or
strings that only choose the kernel, such as ``eps``): ``specialize(*inputs)`` returns the
factory's arguments (a tuple or a dict; torch dtypes become tilewise names, symbolic sizes
become ints: torch specialises the graph on them), and the kernel's parameters take the
op's inputs of the same names.

One call of the op: the kernel for these inputs (one per factory argument set, cached),
its symbolic sizes bound from the input tensors' shapes and strides, the outputs allocated
from the output buffers' shapes (torch ``SymInt`` arithmetic under ``torch.compile``: the
fake implementation is this same code on fake tensors), then the launch: CUDA tensors on
torch's current stream through the kernel compiled for their device; CPU tensors in the
simulator (:mod:`.simulate`), which writes the tensors' memory in place.
"""

from __future__ import annotations

import inspect
import itertools

from ..errors import LaunchError, TilewiseError
from . import shapes
from .kernels import func_of as _func_of
from .kernels import is_kernel as _is_kernel
from .kernels import kernel_params, result

_TYPES = {"int": "int", "uint": "int", "float": "float", "bool": "bool"}
_ANNOTATIONS = {int: "int", float: "float", bool: "bool", str: "str",
                "int": "int", "float": "float", "bool": "bool", "str": "str"}


def torch_dtype(name):
    """The torch dtype of a tilewise dtype (``"bfloat16"`` -> ``torch.bfloat16``)."""
    import torch

    from ..ir.dtype import dtype

    name = dtype(name).name
    special = {"float8_e4m3": "float8_e4m3fn", "bool": "bool"}
    return getattr(torch, special.get(name, name))


def dtype_name(torch_dtype_) -> str:
    """The tilewise name of a torch dtype (``torch.float16`` -> ``"float16"``)."""
    from ..ir.dtype import dtype

    return dtype(str(torch_dtype_).replace("torch.", "")).name


class Param:
    """One input of the op: its name, its schema type, its default (or ``inspect._empty``)."""

    def __init__(self, name, kind, default=inspect.Parameter.empty):
        self.name, self.kind, self.default = name, kind, default

    def schema(self, alias: str | None) -> str:
        kind = f"Tensor({alias}!)" if alias else self.kind
        if self.default is inspect.Parameter.empty:
            return f"{kind} {self.name}"
        value = self.default
        text = f'"{value}"' if isinstance(value, str) else repr(value)
        return f"{kind} {self.name}={text}"


class Spec:
    """What :func:`custom_op` knows of an op: its inputs, outputs, mutated inputs and how to
    find the kernel for a call."""

    def __init__(self, name, source, outputs, mutates, specialize, target):
        self.name, self.outputs, self.mutates = name, tuple(outputs), tuple(mutates)
        self.specialize, self.target = specialize, target
        self.kernels: dict = {}  # factory arguments -> PrimFunc / Kernel
        self._by_raw: dict = {}  # specialize's result, as it returned it -> the same kernel
        self._plans: dict = {}  # id(kernel) -> (kernel, _Plan): what a call reads of it
        self.source = source
        self.fixed = _is_kernel(source)
        if self.fixed:
            if specialize is not None:
                raise TilewiseError(f"custom_op {name!r}: specialize= chooses a factory's "
                                    "arguments, but a kernel was given",
                                    hint="drop specialize=, or pass the factory itself")
            self.params = self._kernel_inputs(_func_of(source))
        elif callable(source):
            if specialize is None:
                raise TilewiseError(f"custom_op {name!r}: a kernel factory needs specialize=, "
                                    "a function of the op's inputs returning the factory's "
                                    "arguments",
                                    hint="e.g. specialize=lambda X: (X.shape[0], X.shape[1], "
                                    "X.dtype)")
            self.params = _specialize_inputs(name, specialize)
        else:
            raise TilewiseError(f"custom_op {name!r} takes a @T.prim_func kernel, a compiled "
                                f"kernel or a factory, not {type(source).__name__}")
        names = [p.name for p in self.params]
        for m in self.mutates:
            if m not in names:
                raise TilewiseError(f"custom_op {name!r}: mutates_args names {m!r}, which is "
                                    f"not an input (inputs: {', '.join(names)})")

    def _kernel_inputs(self, func) -> list[Param]:
        params = kernel_params(func)
        names = [n for n, _, _ in params]
        for o in self.outputs:
            if o not in names:
                raise TilewiseError(f"custom_op {self.name!r}: outputs names {o!r}, which is "
                                    f"not a parameter of {func.name} ({', '.join(names)})")
        out = []
        for n, p, buf in params:
            if n in self.outputs:
                if buf is None:
                    raise TilewiseError(f"custom_op {self.name!r}: output {n!r} is a scalar "
                                        "parameter; outputs are buffers the op allocates")
                continue
            out.append(Param(n, "Tensor" if buf is not None else _TYPES[p.dtype.kind]))
        return out

    def schema(self) -> str:
        alias = (chr(ord("a") + i) for i in itertools.count())
        ins = ", ".join(p.schema(next(alias) if p.name in self.mutates else None)
                        for p in self.params)
        outs = {0: "()", 1: "Tensor"}.get(len(self.outputs),
                                          "(" + ", ".join(["Tensor"] * len(self.outputs)) + ")")
        return f"({ins}) -> {outs}"

    def bind(self, args, kwargs) -> dict:
        """The op's inputs by name, defaults filled."""
        values = dict(zip((p.name for p in self.params), args))
        values.update(kwargs)
        for p in self.params:
            if p.name not in values:
                values[p.name] = p.default
        return values

    def kernel(self, values):
        """The kernel (PrimFunc or compiled Kernel) for a call with these inputs."""
        if self.fixed:
            return self.source
        raw = self.specialize(*(values[p.name] for p in self.params))
        try:  # the repeated call's fast path: specialize's result as it is (ints, names,
            # torch dtypes); a SymInt is not hashable and takes the path below
            return self._by_raw[_raw_key(raw)]
        except (KeyError, TypeError):
            pass
        k = self._kernel_for(_concrete(raw))
        try:
            self._by_raw[_raw_key(raw)] = k
        except TypeError:
            pass
        return k

    def _kernel_for(self, args):
        key = _key(args)
        k = self.kernels.get(key)
        if k is None:
            k = self.source(**args) if isinstance(args, dict) else (
                self.source(*args) if isinstance(args, tuple) else self.source(args))
            if not _is_kernel(k):
                raise TilewiseError(f"custom_op {self.name!r}: the factory returned a "
                                    f"{type(k).__name__}, not a kernel",
                                    hint="return the @T.prim_func function from the factory")
            self._check_factory_kernel(_func_of(k))
            self.kernels[key] = k
        return k

    def _check_factory_kernel(self, func):
        have = {p.name for p in self.params}
        names = [n for n, _, _ in kernel_params(func)]
        for o in self.outputs:
            if o not in names:
                raise TilewiseError(f"custom_op {self.name!r}: outputs names {o!r}, which is "
                                    f"not a parameter of {func.name} ({', '.join(names)})")
        missing = [n for n in names if n not in have and n not in self.outputs]
        if missing:
            raise TilewiseError(f"custom_op {self.name!r}: the kernel {func.name} takes "
                                f"{', '.join(missing)}, which the op's inputs "
                                f"({', '.join(sorted(have))}) do not name",
                                hint="name specialize's parameters after the kernel's buffers")

    def plan(self, k) -> _Plan:
        """What a call reads of kernel ``k`` (its function, parameters, output shapes), made
        once per kernel."""
        got = self._plans.get(id(k))
        if got is None:
            got = self._plans[id(k)] = (k, _Plan(self, _func_of(k)))
        return got[1]

    def outputs_for(self, func, values, device) -> dict:
        """The output tensors of a call (empty; fake tensors under torch.compile)."""
        return _Plan(self, func).outputs(self, values, device)

    def check_inputs(self, func, values):
        """Dtype and rank of each input tensor against its buffer (what the fake
        implementation can say before any launch), as LaunchErrors naming the input."""
        import torch

        for n, _, buf in kernel_params(func):
            if buf is None or n in self.outputs:
                continue
            t = values[n]
            what = f"{self.name}: input {n!r} ({buf.dtype}, {len(buf.shape)}-D)"
            if not isinstance(t, torch.Tensor):
                raise LaunchError(f"{what} got a {type(t).__name__}", hint="pass a tensor")
            if t.dtype != torch_dtype(buf.dtype.name):
                raise LaunchError(f"{what} got a {t.dtype} tensor",
                                  hint=f"pass {buf.dtype} (convert with .to())")
            if t.dim() != len(buf.shape):
                raise LaunchError(f"{what} got a tensor of shape {tuple(t.shape)}",
                                  hint=f"pass a {len(buf.shape)}-D tensor")


class _Plan:
    """What a call of an op reads of its kernel's function, worked out once: the
    parameters' names in order, the inputs that bind its symbolic sizes, and each output's
    torch dtype and shape (a tuple where every extent is a number, else the expressions)."""

    def __init__(self, spec, func):
        params = kernel_params(func)
        self.names = [n for n, _, _ in params]
        self.sources = shapes.sources([(n, buf) for n, _, buf in params
                                       if buf is not None and n not in spec.outputs])
        self.outs = []  # (name, buffer, torch dtype, (shape, strides), static shape or None)
        for n, _, buf in params:
            if n in spec.outputs:
                exprs = (tuple(buf.shape), None if buf.strides is None else tuple(buf.strides))
                dims = tuple(_number(e) for e in exprs[0])
                static = dims if exprs[1] is None and None not in dims else None
                self.outs.append((n, buf, torch_dtype(buf.dtype.name), exprs, static))

    def outputs(self, spec, values, device) -> dict:
        import torch

        sizes = None
        outs = {}
        for n, buf, dtype, (shape, strides), static in self.outs:
            if static is not None:
                outs[n] = torch.empty(static, dtype=dtype, device=device)
                continue
            if sizes is None:
                sizes = shapes.bind(self.sources, values)
            dims = [shapes.evaluate(e, sizes, spec.name, buf) for e in shape]
            if strides is None:
                outs[n] = torch.empty(dims, dtype=dtype, device=device)
            else:
                steps = [shapes.evaluate(e, sizes, spec.name, buf) for e in strides]
                outs[n] = torch.empty_strided(dims, steps, dtype=dtype, device=device)
        return outs


def _number(e):
    """The value of a size expression that is a number (an int or an IntImm), else None."""
    from ..ir.expr import IntImm

    if isinstance(e, int):
        return e
    return e.value if isinstance(e, IntImm) else None


def _raw_key(raw):
    """A dict key for specialize's result as it returned it; a TypeError where it holds a
    symbolic size (torch.compile's SymInt: :func:`_concrete` makes it an int, on which
    torch guards) or is not hashable."""
    key = tuple(sorted(raw.items())) if isinstance(raw, dict) else raw
    _no_symbols(key if isinstance(key, (tuple, list)) else (key,))
    hash(key)
    return (type(raw).__name__, key)


def _no_symbols(v):
    for x in v:
        t = type(x)
        if t is tuple or t is list:
            _no_symbols(x)
        elif t.__name__ in _SYMBOLIC:
            raise TypeError("a symbolic value")


_SYMBOLIC = frozenset(("SymInt", "SymFloat", "SymBool"))


def _specialize_inputs(name, specialize) -> list[Param]:
    try:
        sig = inspect.signature(specialize)
    except (TypeError, ValueError):
        raise TilewiseError(f"custom_op {name!r}: cannot read the parameters of "
                            "specialize=", hint="pass a def or a lambda") from None
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TilewiseError(f"custom_op {name!r}: specialize's parameter {p.name!r} is "
                                "*args, **kwargs or keyword-only; the op's inputs are its "
                                "plain parameters")
        ann = p.annotation
        kind = "Tensor" if ann is p.empty else _ANNOTATIONS.get(ann)
        if kind is None:
            kind = "Tensor" if "Tensor" in str(ann) else None
        if kind is None:
            raise TilewiseError(f"custom_op {name!r}: specialize's parameter {p.name!r} is "
                                f"annotated {ann!r}",
                                hint="annotate scalars as int, float, bool or str; tensors "
                                "need no annotation")
        out.append(Param(p.name, kind, p.default))
    return out


def _concrete(v):
    """Factory arguments as plain Python values: SymInts to ints (torch guards on them),
    torch dtypes to tilewise names, torch.Size to tuples."""
    import torch

    if isinstance(v, dict):
        return {k: _concrete(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return tuple(_concrete(x) for x in v)
    if isinstance(v, torch.SymInt):
        return int(v)
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    return v


def _key(args):
    try:
        key = tuple(sorted(args.items())) if isinstance(args, dict) else args
        hash(key)
        return key
    except TypeError:
        return repr(args)


def kernel_for(op, *args, **kwargs):
    """The kernel a tilewise custom op runs for these inputs (its factory called once per
    argument set): to inspect it (``.source("ptx")``) or to launch it directly."""
    spec = getattr(op, "_tilewise_spec", None)
    if spec is None:
        raise TilewiseError(f"{op!r} is not an op made by tilewise.torch.custom_op")
    return spec.kernel(spec.bind(args, kwargs))


def custom_op(name: str, kernel, *, outputs=(), mutates_args=(), specialize=None,
              target=None):
    """Register ``kernel`` as the torch custom op ``name`` (``"namespace::op"``).

    ``kernel``: a ``@T.prim_func`` (compiled for each CUDA device's target on first use), a
    compiled ``tw.Kernel`` (launched as compiled), or a factory returning one of these;
    ``outputs``: names of the kernel's buffers the op allocates and returns (one tensor,
    a tuple of several, or nothing); ``mutates_args``: names of inputs the kernel writes;
    ``specialize``: for a factory, ``specialize(*inputs) -> factory arguments``; its
    parameters are the op's inputs; ``target``: the simulator's target for CPU tensors
    (default: the compiled kernel's, else sm_90a).

    Returns torch's ``CustomOpDef``: call it like a function, register autograd with
    ``.register_autograd(backward, setup_context=...)``; ``torch.compile`` (fullgraph),
    CUDA graphs and ``torch.library.opcheck`` accept it."""
    import torch

    from .launch import run

    spec = Spec(name, kernel, outputs, mutates_args, specialize, target)

    def impl(*args, **kwargs):
        return run(spec, spec.bind(args, kwargs))

    def fake(*args, **kwargs):
        values = spec.bind(args, kwargs)
        k = spec.kernel(values)
        spec.check_inputs(_func_of(k), values)
        device = next(v.device for v in values.values() if isinstance(v, torch.Tensor))
        return result(spec.outputs, spec.outputs_for(_func_of(k), values, device))

    op = torch.library.custom_op(name, impl, mutates_args=spec.mutates, schema=spec.schema())
    op.register_fake(fake)
    op._tilewise_spec = spec
    return op
