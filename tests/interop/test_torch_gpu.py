"""GPU: tilewise ops inside torch programs. A small model (RMSNorm -> GEMM -> softmax, every
op a tilewise kernel, gradients too) compiled with fullgraph=True matches eager and torch's
own model, its gradients match torch's, CUDA graphs capture and replay it, opcheck passes
on CUDA tensors, ops launch on torch's current stream, and the launcher's fast path keeps
every check."""

import os
import subprocess
import sys

import pytest

import tilewise as tw
from tilewise.errors import LaunchError

pytestmark = pytest.mark.gpu
NS = "tw_gpu"
BF16 = dict(rtol=2 ** -6, atol=2 ** -8)


@pytest.fixture
def ops(torch_ops):
    return torch_ops.register(NS)


@pytest.fixture
def model(torch, torch_ops, ops):
    return torch_ops.TinyModel(ops, hidden=256, out=512).cuda()


def _x(torch, seed=0, rows=64, hidden=256):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(rows, hidden, device="cuda", generator=g).to(torch.bfloat16)


def _backward(torch, model, fn, x, seed=1):
    """Output and gradients (x, norm weight, projection) for a fixed random dY."""
    model.zero_grad()
    x = x.detach().clone().requires_grad_()
    y = fn(x)
    g = torch.randn(y.shape, device="cuda",
                    generator=torch.Generator(device="cuda").manual_seed(seed))
    (y.float() * g).sum().backward()
    return y.detach(), [t.grad.detach().clone() for t in (x, model.weight, model.proj)]


def test_the_model_compiles_with_fullgraph_and_matches_eager_and_torch(torch, model):
    x = _x(torch)
    compiled = torch.compile(model, fullgraph=True)
    y, grads = _backward(torch, model, compiled, x)
    y_eager, grads_eager = _backward(torch, model, model, x)
    torch.testing.assert_close(y, y_eager, rtol=0, atol=0)
    y_ref, grads_ref = _backward(torch, model, model.reference, x)
    torch.testing.assert_close(y.float(), y_ref.float(), **BF16)
    for mine, eager, ref in zip(grads, grads_eager, grads_ref):
        torch.testing.assert_close(mine, eager, **BF16)
        scale = ref.float().abs().max()
        torch.testing.assert_close(mine.float() / scale, ref.float() / scale, rtol=0,
                                   atol=2 ** -6)


def test_cuda_graphs_capture_and_replay_the_model(torch, model):
    x = _x(torch)
    static = x.clone()
    with torch.no_grad():
        model(static)  # load every kernel before capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(static)
        for seed in (3, 4):
            fresh = _x(torch, seed)
            static.copy_(fresh)
            graph.replay()
            torch.cuda.synchronize()
            torch.testing.assert_close(out, model(fresh), rtol=0, atol=0)


def test_reduce_overhead_mode_runs_the_model_under_cuda_graphs(torch, model):
    from torch._dynamo.utils import counters

    counters.clear()
    compiled = torch.compile(model, fullgraph=True, mode="reduce-overhead")
    with torch.no_grad():
        for seed in range(4):  # warm-up, record, then replays
            x = _x(torch, seed)
            y = compiled(x)
            torch.testing.assert_close(y, model(x), rtol=0, atol=0)
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


def test_opcheck_on_cuda(torch, ops):
    cases = [(ops.softmax, (torch.randn(8, 512, device="cuda").to(torch.bfloat16),)),
             (ops.rmsnorm, (torch.randn(8, 256, device="cuda").to(torch.bfloat16),
                            torch.randn(256, device="cuda").to(torch.bfloat16), 1e-6)),
             (ops.gemm, (torch.randn(64, 128, device="cuda").to(torch.bfloat16),
                         torch.randn(128, 64, device="cuda").to(torch.bfloat16)))]
    for op, args in cases:
        result = torch.library.opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, (op, result)


def test_an_op_launches_on_torchs_current_stream(torch, ops):
    x = torch.empty(64, 512, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # the fill below waits behind this on `side`
        x.copy_(torch.randn(64, 512, device="cuda").to(torch.bfloat16) * 3)
        y = ops.softmax(x)
    side.synchronize()
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=2 ** -7,
                               atol=2 ** -14)


def test_the_fast_path_takes_fresh_tensors_and_keeps_its_checks(torch, torch_ops):
    from vector_add import make_vector_add  # examples/ (on the path through torch_ops)

    from tilewise.runtime import device_target

    k = tw.compile(make_vector_add(4096), str(device_target()))
    for i in range(50):  # fresh allocations: new pointers, the same signature
        a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
        c = torch.full((4096,), float("nan"), device="cuda")
        k(a, b, c)
        torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    big = torch.zeros(4100, device="cuda")
    with pytest.raises(LaunchError, match="not 16-byte aligned"):
        k(big[1:4097], b, c)
    with pytest.raises(LaunchError, match="got an array of float16"):
        k(a.half(), b, c)
    with pytest.raises(LaunchError, match="got a CPU array"):
        k(a.cpu(), b, c)


def test_the_launch_benchmark_runs(torch):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "bench_launch.py"),
                          "200", "3"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=os.path.join(root, "src")))
    assert out.returncode == 0, out.stderr
    assert "tilewise / bare" in out.stdout and "bare cuLaunchKernel" in out.stdout


@pytest.mark.parametrize("rows,cols", [(4096, 4096), (65536, 64), (7, 3000), (300, 50257),
                                       (2048, 5120), (64, 128256)])
def test_the_row_ops_gradients_match_torch_on_every_path(torch, torch_ops, ops, rows, cols):
    """The rmsnorm op's backward on each of its paths (the fused kernel and the sum of its
    partial rows at 4096 x 4096 and 65536 x 64; dX, r and the two-kernel weight gradient at
    few rows, odd widths and rows walked in chunks), and the softmax op's (rows walked in
    chunks at 50257, a cluster split at 128256), against torch's autograd in float64."""
    import torch.nn.functional as F

    fused = torch_ops.fused_plan(rows, cols, "bfloat16") is not None
    assert fused == ((rows, cols) in ((4096, 4096), (65536, 64)))
    g = torch.Generator(device="cuda").manual_seed(rows + cols)
    x = torch.randn(rows, cols, device="cuda", generator=g).to(torch.bfloat16)
    w = (1 + 0.5 * torch.randn(cols, device="cuda", generator=g)).to(torch.bfloat16)
    dy = torch.randn(rows, cols, device="cuda", generator=g).to(torch.bfloat16)
    for op, ref, args in ((lambda a, b: ops.rmsnorm(a, b, 1e-6),
                           lambda a, b: F.rms_norm(a, (cols,), b, 1e-6), (x, w)),
                          (ops.softmax, lambda a: torch.softmax(a, -1), (x,))):
        mine = [a.clone().requires_grad_() for a in args]
        got = torch.autograd.grad(op(*mine), mine, dy)
        exact = [a.double().requires_grad_() for a in args]
        want = torch.autograd.grad(ref(*exact), exact, dy.double())
        for a, b in zip(got, want):
            assert float((a.double() - b).abs().max() / b.abs().max()) <= 2.0 ** -7
