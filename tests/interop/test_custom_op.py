"""tilewise.torch.custom_op on the CPU: schemas derived from the kernel, outputs allocated
from symbolic sizes, the simulator as the CPU implementation, fake tensors with symbolic
shapes, torch.compile(fullgraph=True) and torch.library.opcheck."""

import os
import subprocess
import sys

import kernels_interop as K
import pytest

import tilewise.torch as twt
from tilewise.errors import LaunchError, TilewiseError


def test_importing_tilewise_torch_imports_no_torch():
    code = ("import sys, tilewise.torch; assert 'torch' not in sys.modules, 'torch imported'; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.stdout.strip() == "ok", out.stderr


def test_a_kernel_becomes_an_op_whose_schema_is_its_signature(torch, opname):
    op = twt.custom_op(opname("vadd"), K.vadd, outputs=("C",))
    assert op._tilewise_spec.schema() == "(Tensor A, Tensor B) -> Tensor"
    a, b = torch.randn(300), torch.randn(300)
    assert torch.equal(op(a, b), a + b)


def test_mutated_inputs_and_scalars(torch, opname):
    op = twt.custom_op(opname("axpy"), K.axpy_inplace, mutates_args=("Y",))
    assert op._tilewise_spec.schema() == "(Tensor X, Tensor(a!) Y, float alpha) -> ()"
    x, y = torch.randn(200), torch.randn(200)
    want = y + 0.5 * x
    assert op(x, y, 0.5) is None
    torch.testing.assert_close(y, want)
    assert torch.library.opcheck(op, (x, y.clone(), 0.25))["test_schema"] == "SUCCESS"


def test_several_outputs_with_shapes_computed_from_sizes(torch, opname):
    op = twt.custom_op(opname("rows"), K.row_sums_and_copy, outputs=("S", "Z"))
    assert op._tilewise_spec.schema() == "(Tensor X) -> (Tensor, Tensor)"
    x = torch.randn(3, 8)
    s, z = op(x)
    torch.testing.assert_close(s, x.sum(1))
    assert torch.equal(z, x[:, :4])


def test_fake_tensors_carry_symbolic_sizes(torch, opname):
    from torch.fx.experimental.proxy_tensor import make_fx

    op = twt.custom_op(opname("rows"), K.row_sums_and_copy, outputs=("S", "Z"))
    gm = make_fx(lambda x: op(x), tracing_mode="symbolic")(torch.randn(3, 8))
    (node,) = [n for n in gm.graph.nodes if n.op == "call_function" and "rows" in str(n.target)]
    s, z = node.meta["val"]
    m, n = (p.meta["val"].shape for p in gm.graph.nodes if p.op == "placeholder").__next__()
    assert isinstance(z.shape[1], torch.SymInt) and isinstance(s.shape[0], torch.SymInt)
    assert str(s.shape[0]) == str(m) and str(z.shape[0]) == str(m)
    assert str(z.shape[1]) == f"(({n}//2))" or str(z.shape[1]) == f"({n}//2)"


def test_compiled_with_fullgraph_and_dynamic_sizes_compiles_once(torch, opname):
    from torch._dynamo.testing import CompileCounterWithBackend

    op = twt.custom_op(opname("vadd"), K.vadd, outputs=("C",))
    counter = CompileCounterWithBackend("aot_eager")
    f = torch.compile(lambda a, b: op(a, b) * 2, fullgraph=True, dynamic=True, backend=counter)
    for n in (300, 130):
        a, b = torch.randn(n), torch.randn(n)
        assert torch.equal(f(a, b), (a + b) * 2)
    assert counter.frame_count == 1


def test_opcheck_passes_for_a_kernel_and_a_factory(torch, opname):
    op = twt.custom_op(opname("vadd"), K.vadd, outputs=("C",))
    result = torch.library.opcheck(op, (torch.randn(100), torch.randn(100)))
    assert set(result.values()) == {"SUCCESS"}, result
    scale = twt.custom_op(opname("scale"), K.make_scale, outputs=("Y",),
                          specialize=lambda X: (X.shape[0], X.dtype))
    result = torch.library.opcheck(scale, (torch.randn(70),))
    assert set(result.values()) == {"SUCCESS"}, result


def test_a_factory_is_called_once_per_argument_set(torch, opname):
    calls = []

    def factory(n, dtype):
        calls.append((n, dtype))
        return K.make_scale(n, dtype)

    op = twt.custom_op(opname("scale"), factory, outputs=("Y",),
                       specialize=lambda X: (X.shape[0], X.dtype))
    for _ in range(2):
        x = torch.randn(70)
        assert torch.equal(op(x), 2 * x)
    op(torch.randn(40, dtype=torch.float64))
    assert calls == [(70, "float32"), (40, "float64")]
    assert twt.kernel_for(op, torch.randn(70)).name == "scale"


def test_repeated_calls_find_their_kernel_by_what_specialize_returned(torch, opname):
    """A call's kernel is looked up by specialize's result as it is (torch dtypes, a dict);
    a result that cannot be a key (a list) takes the general path; either way the factory
    runs once per argument set and each call gets its own outputs."""
    calls = []

    def factory(n, dtype):
        calls.append((n, dtype))
        return K.make_scale(n, dtype)

    by_dict = twt.custom_op(opname("scale_d"), factory, outputs=("Y",),
                            specialize=lambda X: {"n": X.shape[0], "dtype": X.dtype})
    by_list = twt.custom_op(opname("scale_l"), factory, outputs=("Y",),
                            specialize=lambda X: [X.shape[0], X.dtype])
    for op in (by_dict, by_list):
        x = torch.randn(70)
        ys = [op(x) for _ in range(3)]
        assert all(torch.equal(y, 2 * x) for y in ys)
        assert len({y.data_ptr() for y in ys}) == 3
        z = torch.randn(40, dtype=torch.float64)
        assert torch.equal(op(z), 2 * z)
    assert calls == [(70, "float32"), (40, "float64")] * 2


def test_dtype_names_both_ways(torch):
    assert twt.dtype_name(torch.bfloat16) == "bfloat16"
    assert twt.torch_dtype("float8_e4m3") is torch.float8_e4m3fn
    assert twt.torch_dtype("float16") is torch.float16


# -- mistakes ---------------------------------------------------------------------------
def _error(fn, cls=TilewiseError):
    with pytest.raises(cls) as info:
        fn()
    return str(info.value), info.value.hint or ""


def test_an_output_that_is_no_parameter_is_named(torch, opname):
    text, _ = _error(lambda: twt.custom_op(opname("x"), K.vadd, outputs=("D",)))
    assert "outputs names 'D', which is not a parameter of vadd (A, B, C)" in text


def test_a_factory_needs_specialize(torch, opname):
    text, hint = _error(lambda: twt.custom_op(opname("x"), K.make_scale, outputs=("Y",)))
    assert "a kernel factory needs specialize=" in text
    assert "specialize=lambda X" in hint


def test_mutates_args_must_name_an_input(torch, opname):
    text, _ = _error(lambda: twt.custom_op(opname("x"), K.vadd, outputs=("C",),
                                           mutates_args=("C",)))
    assert "mutates_args names 'C', which is not an input (inputs: A, B)" in text


def test_a_factory_kernel_whose_inputs_the_op_does_not_name(torch, opname):
    op = twt.custom_op(opname("x"), K.make_scale, outputs=("Y",),
                       specialize=lambda Z: (Z.shape[0], Z.dtype))
    text, hint = _error(lambda: op(torch.randn(8)))
    assert "the kernel scale takes X, which the op's inputs (Z) do not name" in text
    assert "name specialize's parameters after the kernel's buffers" in hint


def test_a_wrong_dtype_is_reported_when_tracing(torch, opname):
    op = twt.custom_op(opname("vadd"), K.vadd, outputs=("C",))
    f = torch.compile(lambda a, b: op(a, b), fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception) as info:
        f(torch.randn(8, dtype=torch.float64), torch.randn(8))
    assert "input 'A' (float32, 1-D) got a torch.float64 tensor" in str(info.value)


def test_a_wrong_shape_on_the_cpu_is_the_simulators_launch_error(torch, opname):
    op = twt.custom_op(opname("vadd"), K.vadd, outputs=("C",))
    text, _ = _error(lambda: op(torch.randn(8), torch.randn(9)), LaunchError)
    assert "size" in text and "8" in text and "9" in text
