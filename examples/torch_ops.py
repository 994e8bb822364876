"""tilewise kernels inside a PyTorch model: RMSNorm, GEMM and softmax as torch custom ops
with autograd, and a small model built from them that ``torch.compile(fullgraph=True)``
traces without a graph break and CUDA graphs capture.

    import torch_ops
    ops = torch_ops.register()            # torch.ops.tilewise.{rmsnorm, gemm, softmax, ...}
    model = torch_ops.TinyModel(ops, hidden=256, out=512).cuda()
    y = torch.compile(model, fullgraph=True)(x)
    y.sum().backward()

Forward ops come from the examples' factories (``make_rmsnorm``, ``make_gemm``,
``make_softmax``); their gradients are tilewise kernels too: ``make_softmax_backward``,
``make_rmsnorm_backward_fused`` (dX and dW's partial sums from one read of X and dY; the
shapes it does not take, few rows or rows too long for its registers:
``make_rmsnorm_backward`` + ``make_rmsnorm_weight_partial``)
then ``make_rmsnorm_weight_sum``, and two GEMMs for
``C = A @ B`` (``dA = dC @ B^T``, ``dB = A^T @ dC``; the transposes are torch copies).
Any M, N and K: where K or N is not a multiple of 8 (TMA's 16-byte rows; in ``dB`` the K
is the forward's M), the op takes ``make_gemm``'s padded kernel of those sizes. On CPU
tensors every op runs in tilewise's simulator, so all of this is checked without a GPU
(slowly: small shapes).

Attention plugs in the same way once ``examples/attention.py`` lands: ``attention_op``
registers ``make_attention`` (``k(Q, K, V, O)``, the contract of ARCHITECTURE.md) as a
forward op; its gradient is registered with ``op.register_autograd`` exactly as
``_softmax_autograd`` does here, with ``make_attention_backward`` in place of the softmax
backward kernel.
"""

import math
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tilewise.torch as twt  # noqa: E402
from gemm_hopper import make_gemm  # noqa: E402
from rmsnorm import make_rmsnorm  # noqa: E402
from rmsnorm_backward import (fused_plan, make_rmsnorm_backward,  # noqa: E402
                              make_rmsnorm_backward_fused, make_rmsnorm_weight_partial,
                              make_rmsnorm_weight_sum)
from softmax import make_softmax  # noqa: E402
from softmax_backward import make_softmax_backward  # noqa: E402

_REGISTERED: dict = {}


def _rows(X):
    return X.shape[0], X.shape[1], X.dtype


def _fused_args(X, W, dY, eps: float = 1e-6) -> dict:
    return {"rows": X.shape[0], "cols": X.shape[1], "dtype": X.dtype, "eps": eps,
            "num_sms": _sms(X)}


def _sms(X):
    """The SMs a persistent kernel plans for: the GPU's; 2 on CPU tensors (the simulator)."""
    return None if X.device.type == "cuda" else 2


def _weight_sum_args(P, dtype: str):
    return P.shape[0], P.shape[1], dtype


def register(namespace: str = "tilewise") -> types.SimpleNamespace:
    """Register the ops under ``namespace`` (once per namespace) and return them."""
    if namespace in _REGISTERED:
        return _REGISTERED[namespace]
    ns = types.SimpleNamespace()
    ns.softmax = twt.custom_op(f"{namespace}::softmax", make_softmax, outputs=("Y",),
                               specialize=lambda X: _rows(X))
    ns.softmax_backward = twt.custom_op(
        f"{namespace}::softmax_backward", make_softmax_backward, outputs=("dX",),
        specialize=lambda Y, dY: _rows(Y))

    def rmsnorm_args(X, W, eps: float = 1e-6):
        return (*_rows(X), eps)

    def rmsnorm_backward_args(X, W, dY, eps: float = 1e-6):
        return (*_rows(X), eps)

    ns.rmsnorm = twt.custom_op(f"{namespace}::rmsnorm", make_rmsnorm, outputs=("Y",),
                               specialize=rmsnorm_args)
    ns.rmsnorm_backward = twt.custom_op(
        f"{namespace}::rmsnorm_backward", make_rmsnorm_backward, outputs=("dX", "Rstd"),
        specialize=rmsnorm_backward_args)
    # dW: float32 partial sums over the rows (P, which torch allocates) -- from the fused
    # backward's CTAs where the row fits its registers, else from slices of the rows --
    # then their sum in order. On CPU tensors (the simulator) the fused grid is planned for
    # 2 SMs.
    ns.rmsnorm_backward_fused = twt.custom_op(
        f"{namespace}::rmsnorm_backward_fused", make_rmsnorm_backward_fused,
        outputs=("dX", "P"), specialize=_fused_args)
    ns.rmsnorm_weight_partial = twt.custom_op(
        f"{namespace}::rmsnorm_weight_partial", make_rmsnorm_weight_partial, outputs=("P",),
        specialize=lambda X, dY, Rstd: _rows(X))
    ns.rmsnorm_weight_sum = twt.custom_op(
        f"{namespace}::rmsnorm_weight_sum", make_rmsnorm_weight_sum, outputs=("dW",),
        specialize=_weight_sum_args)
    # one symbolic kernel per dtype: M, N and K stay symbolic under torch.compile. On CPU
    # tensors (the simulator) the persistent grid is 8 CTAs instead of one per SM.
    ns.gemm = twt.custom_op(f"{namespace}::gemm", make_gemm, outputs=("C",),
                            specialize=_gemm_args)
    _softmax_autograd(ns)
    _rmsnorm_autograd(ns)
    _gemm_autograd(ns)
    _REGISTERED[namespace] = ns
    return ns


def _softmax_autograd(ns):
    def setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, dY):
        (Y,) = ctx.saved_tensors
        return ns.softmax_backward(Y, dY.contiguous())

    ns.softmax.register_autograd(backward, setup_context=setup)


def _rmsnorm_autograd(ns):
    def setup(ctx, inputs, output):
        X, W, eps = inputs
        ctx.save_for_backward(X, W)
        ctx.eps = eps

    def backward(ctx, dY):
        X, W = ctx.saved_tensors
        dY = dY.contiguous()
        if fused_plan(X.shape[0], X.shape[1], twt.dtype_name(X.dtype), num_sms=_sms(X)):
            dX, P = ns.rmsnorm_backward_fused(X, W, dY, ctx.eps)
        else:
            dX, rstd = ns.rmsnorm_backward(X, W, dY, ctx.eps)
            P = ns.rmsnorm_weight_partial(X, dY, rstd)
        dW = ns.rmsnorm_weight_sum(P, twt.dtype_name(W.dtype))
        return dX, dW, None

    ns.rmsnorm.register_autograd(backward, setup_context=setup)


def _gemm_args(A, B) -> dict:
    """``make_gemm``'s arguments for ``A @ B``: the dtype, and the sizes only where K or N
    is not a multiple of 8 (a kernel of those sizes pads them; aligned sizes share one
    symbolic kernel)."""
    kw = {"dtype": A.dtype, "num_sms": None if A.device.type == "cuda" else 8}
    if A.shape[1] % 8 or B.shape[1] % 8:
        kw.update(M_=A.shape[0], N_=B.shape[1], K_=A.shape[1])
    return kw


def _gemm_autograd(ns):
    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, dC):
        A, B = ctx.saved_tensors
        dC = dC.contiguous()
        dA = ns.gemm(dC, B.t().contiguous()) if ctx.needs_input_grad[0] else None
        dB = ns.gemm(A.t().contiguous(), dC) if ctx.needs_input_grad[1] else None
        return dA, dB

    ns.gemm.register_autograd(backward, setup_context=setup)


def attention_op(make_attention, namespace: str = "tilewise"):
    """The forward attention op ``O = attention(Q, K, V, causal)`` from ``make_attention``
    (``examples/attention.py``'s factory, ``k(Q, K, V, O)`` as
    ``scaled_dot_product_attention``); register its gradient with ``register_autograd``
    once ``make_attention_backward`` exists (see the module docstring)."""

    def args(Q, K, V, causal: bool = False):
        b, h, sq, d = Q.shape
        return {"batch": b, "heads": h, "seq_q": sq, "seq_k": K.shape[2], "head_dim": d,
                "causal": causal, "dtype": Q.dtype, "kv_heads": K.shape[1]}

    return twt.custom_op(f"{namespace}::attention", make_attention, outputs=("O",),
                         specialize=args)


def tiny_model_class():
    import torch

    class TinyModel(torch.nn.Module):
        """``softmax(rmsnorm(x, w) @ P)``: the three ops in a row, with parameters."""

        def __init__(self, ops, hidden: int, out: int, dtype=torch.bfloat16, eps=1e-6):
            super().__init__()
            self.ops, self.eps = ops, eps
            g = torch.Generator().manual_seed(0)
            self.weight = torch.nn.Parameter(
                (1 + 0.1 * torch.randn(hidden, generator=g)).to(dtype))
            self.proj = torch.nn.Parameter(
                (torch.randn(hidden, out, generator=g) / math.sqrt(hidden)).to(dtype))

        def forward(self, x):
            h = self.ops.rmsnorm(x, self.weight, self.eps)
            return self.ops.softmax(self.ops.gemm(h, self.proj))

        def reference(self, x):
            """The same model in torch's own ops (float32 inside, as the kernels)."""
            import torch.nn.functional as F

            h = F.rms_norm(x.float(), (x.shape[-1],), self.weight.float(), self.eps)
            logits = (h.to(x.dtype).float() @ self.proj.float()).to(x.dtype)
            return torch.softmax(logits.float(), dim=-1).to(x.dtype)

    return TinyModel


def __getattr__(name):
    if name == "TinyModel":  # torch is imported only when the model is asked for
        return tiny_model_class()
    raise AttributeError(name)
