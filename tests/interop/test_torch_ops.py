"""examples/torch_ops.py on the CPU (every kernel in the simulator): the ops' gradients
against torch's own, and the small model compiled with fullgraph=True against eager."""

import pytest

NS = "tw_cpu"


@pytest.fixture
def ops(torch_ops):
    return torch_ops.register(NS)


def _grads(torch, fn, inputs, seed=1):
    """The output of ``fn(*inputs)`` and the inputs' gradients for a random output
    gradient."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed)).to(out.dtype)
    (out.float() * g.float()).sum().backward()
    return out, [t.grad for t in leaves if t.requires_grad]


def test_softmax_gradient_matches_torch(torch, ops):
    x = torch.randn(4, 256) * 3
    y, (dx,) = _grads(torch, ops.softmax, [x])
    y_ref, (dx_ref,) = _grads(torch, lambda t: torch.softmax(t, -1), [x])
    torch.testing.assert_close(y, y_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dx, dx_ref, rtol=1e-4, atol=1e-6)


def test_rmsnorm_gradients_match_torch(torch, ops):
    import torch.nn.functional as F

    x, w = torch.randn(8, 256), 1 + 0.1 * torch.randn(256)
    y, (dx, dw) = _grads(torch, lambda a, b: ops.rmsnorm(a, b, 1e-5), [x, w])
    y_ref, (dx_ref, dw_ref) = _grads(torch, lambda a, b: F.rms_norm(a, (256,), b, 1e-5), [x, w])
    torch.testing.assert_close(y, y_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx, dx_ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, dw_ref, rtol=1e-4, atol=1e-5)


def test_gemm_gradients_are_two_gemms(torch, ops):
    a = torch.randn(16, 64).to(torch.bfloat16)
    b = torch.randn(64, 32).to(torch.bfloat16)
    c, (da, db) = _grads(torch, ops.gemm, [a, b])
    # torch's GEMM in float32, rounded to bf16 as the kernel's output (so dC is the same)
    c_ref, (da_ref, db_ref) = _grads(
        torch, lambda p, q: (p.float() @ q.float()).to(torch.bfloat16), [a, b])
    for mine, ref in ((c, c_ref), (da, da_ref), (db, db_ref)):
        scale = ref.float().abs().max()  # bf16 rounding, relative to the largest entry
        torch.testing.assert_close(mine.float() / scale, ref.float() / scale, rtol=0,
                                   atol=2 ** -7)


def test_opcheck_softmax_and_rmsnorm(torch, ops):
    for op, args in ((ops.softmax, (torch.randn(2, 128),)),
                     (ops.rmsnorm, (torch.randn(2, 128), torch.randn(128), 1e-6))):
        result = torch.library.opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, (op, result)


def test_the_model_compiles_without_graph_breaks_and_matches_eager(torch, torch_ops, ops):
    from torch._dynamo.testing import CompileCounterWithBackend

    model = torch_ops.TinyModel(ops, hidden=64, out=64)
    x = torch.randn(8, 64).to(torch.bfloat16)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, fullgraph=True, backend=counter)
    y, grads = _grads(torch, compiled, [x])
    assert counter.frame_count == 1 and counter.op_count >= 3
    y_eager = model(x)
    assert torch.equal(y, y_eager)
    y_ref = model.reference(x)
    torch.testing.assert_close(y.float(), y_ref.float(), rtol=2 ** -6, atol=2 ** -9)
    assert grads[0].shape == x.shape and torch.isfinite(grads[0].float()).all()


def test_gemm_of_sizes_tma_cannot_describe_and_its_gradients(torch, ops):
    """K = 60 and N = 37 are not multiples of 8, nor is M = 13 (the K of dB = A^T dC): each
    of the three GEMMs takes make_gemm's padded kernel, and matches torch."""
    import warnings

    import tilewise

    a = torch.randn(13, 60).to(torch.bfloat16)
    b = torch.randn(60, 37).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tilewise.TilewisePerformanceWarning)
        c, (da, db) = _grads(torch, ops.gemm, [a, b])
    c_ref, (da_ref, db_ref) = _grads(
        torch, lambda p, q: (p.float() @ q.float()).to(torch.bfloat16), [a, b])
    assert c.shape == (13, 37) and da.shape == a.shape and db.shape == b.shape
    for mine, ref in ((c, c_ref), (da, da_ref), (db, db_ref)):
        scale = ref.float().abs().max()
        torch.testing.assert_close(mine.float() / scale, ref.float() / scale, rtol=0,
                                   atol=2 ** -7)
