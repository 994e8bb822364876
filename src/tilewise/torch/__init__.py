"""tilewise kernels as PyTorch operators: ``torch.compile``, CUDA graphs and autograd.

    import tilewise.torch as twt

    softmax = twt.custom_op("mylib::softmax", make_softmax, outputs=("Y",),
                            specialize=lambda X: (X.shape[0], X.shape[1], X.dtype))
    y = softmax(x)                                   # a torch.library custom op
    softmax.register_autograd(backward, setup_context=setup)

:func:`custom_op` registers a kernel (a ``@T.prim_func``, a compiled ``tw.Kernel``) or a
kernel *factory* as a ``torch.library`` custom operator. Its schema, its fake (meta)
implementation and its output allocation are derived from the kernel's signature: the
buffers named in ``outputs=`` are allocated by the op and returned, those in
``mutates_args=`` are written in place, every other parameter is an input. Symbolic sizes
(``M = T.int32()``) become torch symbolic shapes, so ``torch.compile`` traces the op once
for every size. The op launches on torch's current stream (so CUDA graphs capture it) and,
for CPU tensors, runs the same kernel in tilewise's simulator: one definition, testable on a
machine without a GPU. The returned object is torch's own ``CustomOpDef``
(``register_autograd``, ``register_fake``, ``torch.library.opcheck`` all apply).

Importing this module needs neither torch nor a GPU; :func:`custom_op` imports torch.
See docs/torch.md.
"""

from __future__ import annotations

from .op import custom_op, dtype_name, kernel_for, torch_dtype

__all__ = ["custom_op", "dtype_name", "kernel_for", "torch_dtype"]
