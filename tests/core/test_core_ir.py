"""What the language core builds: the IR of loop-carried and branch-merged names, compile-time
names that stay compile-time, SSA in the LLVM module, printing that parses back, and the
launch-time checks of scalars and sizes (simulator side; the GPU runtime's are in
tests/codegen/test_runtime_args.py)."""

import numpy as np
import pytest

import kernels_core as K
import tilewise as tw
from tilewise import T, from_source
from tilewise.ir import For, LetStmt, While, structural_equal, walk


def _nodes(func, cls):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def test_reduction_carries_its_accumulator_in_the_data_type():
    for dtype in ("float32", "float16"):
        f = K.make_row_sum(dtype)
        (s,) = [x for x in _nodes(f, LetStmt) if x.var.name == "s"]
        assert s.var.dtype.name == dtype  # typed by what the loop adds, not by 0.0
        assert f.body.stmts.index(s) < f.body.stmts.index(_nodes(f, For)[0])


def test_names_only_bound_to_compile_time_values_stay_compile_time():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64,), "int32")
        T.device_entry()
        tid = T.thread_id([64])
        off = 0
        for j in T.static_range(4):  # compile-time loop: `off` accumulates while parsing
            off = off + 8
        n = 4
        for i in range(2):  # a device loop that does not change `n`
            A[tid] = n + i
        S = T.alloc_shared((off + n,), "int32")  # still usable as a shape
        S[tid % 36] = off

    assert not any(x.var.name in ("off", "n") for x in _nodes(k, LetStmt))
    assert "S = T.alloc_buffer((36,)" in k.script()


def test_a_launch_alias_reassigned_in_a_loop_becomes_a_local():
    body = _nodes(K.strided_transpose, While)[0]
    text = K.strided_transpose.script()
    assert "c: T.int32 = tid" in text and "c = c + 32" in text
    assert body.cond is not None


def test_static_range_break_is_decided_while_parsing():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64,), "int32")
        T.device_entry()
        tid = T.thread_id([64])
        for j in T.static_range(10):
            if j == 3:
                break
            if j == 1:
                continue
            A[tid] = A[tid] + j

    text = k.script()
    assert "A[tid] = A[tid]\n" in text and "A[tid] = A[tid] + 2" in text
    assert "+ 1" not in text and "+ 3" not in text and "break" not in text


def test_special_float_constants_print_as_parseable_text():
    @T.prim_func
    def k(F_ptr: T.handle, H_ptr: T.handle):
        F = T.match_buffer(F_ptr, (4,), "float32")
        H = T.match_buffer(H_ptr, (4,), "float16")
        T.device_entry()
        tid = T.thread_id([4])
        F[tid] = T.max(F[tid], -float("inf"))
        H[tid] = T.min(H[tid], float("inf"))
        F[0] = float("nan")

    text = k.script()
    assert 'float("-inf")' in text and 'T.float16(float("inf"))' in text
    assert structural_equal(k, from_source(text))


@pytest.mark.parametrize("func", [K.scalars, K.axpy, K.strided_transpose, K.collatz,
                                  K.skip_and_stop, K.branch_assign, K.carried_pair],
                         ids=lambda f: f.name)
def test_core_kernels_print_and_parse_back_equal(func):
    assert structural_equal(func, from_source(func.script()))


def test_locals_are_ssa_values_with_phi_nodes_not_stack_slots():
    llvm = tw.compile(K.skip_and_stop, target="sm_90a").source("llvm")
    assert "phi" in llvm and "alloca" not in llvm


def test_scalar_parameters_are_passed_by_value_in_ptx():
    ptx = tw.compile(K.scalars, target="sm_90a").source("ptx")
    for decl in (".param .u32 scalars_param_2", ".param .f32 scalars_param_3",
                 ".param .u8 scalars_param_5", ".param .align 2 .b8 scalars_param_6[2]",
                 ".param .u64 scalars_param_8"):
        assert decl in ptx


def test_sizes_are_trailing_parameters_read_from_the_arrays():
    assert [p.name for p in K.axpy.params] == ["A_ptr", "B_ptr", "alpha", "M"]
    assert "M = T.int32()" in K.axpy.script()
    assert K.axpy.launch_config.grid[0] is not None


@pytest.mark.parametrize("bad,message", [
    (2**31, "does not fit (-2147483648..2147483647)"),
    (1.5, "got the float 1.5"),
    ("7", "got a str"),
    (np.array([1, 2]), "got a ndarray"),
])
def test_scalar_arguments_are_checked(bad, message):
    args = K.scalars_args(np.random.default_rng(0))
    args[2] = bad
    with pytest.raises(tw.LaunchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tw.simulate(K.scalars, *args)


def test_scalar_range_per_dtype():
    args = K.scalars_args(np.random.default_rng(0))
    args[4] = -1  # uint32
    with pytest.raises(tw.LaunchError, match="'off'.*does not fit"):
        tw.simulate(K.scalars, *args)
    args = K.scalars_args(np.random.default_rng(0))
    args[5] = 2  # bool
    with pytest.raises(tw.LaunchError, match="'flag' \\(bool\\) got 2"):
        tw.simulate(K.scalars, *args)
    args = K.scalars_args(np.random.default_rng(0))
    args[6] = 1e6  # float16
    with pytest.raises(tw.LaunchError, match="'h'.*overflows float16"):
        tw.simulate(K.scalars, *args)


def test_numpy_scalars_and_0d_arrays_are_accepted():
    args = K.scalars_args(np.random.default_rng(0))
    args[2], args[3] = np.int64(100), np.array(0.25, np.float32)
    tw.simulate(K.scalars, *args)
    assert (args[1][:100, 0] == np.float32(0.25) * args[0][:100]).all()


def test_sizes_must_agree_between_arrays():
    a = np.zeros(100, np.float32)
    with pytest.raises(tw.LaunchError, match="size M is 100 from A's dimension 0 but 99"):
        tw.simulate(K.axpy, a, np.zeros(99, np.float32), 1.0)
    with pytest.raises(tw.LaunchError, match="has 2 dimension"):
        tw.simulate(K.axpy, a.reshape(10, 10), a, 1.0)


def test_strides_of_a_view_are_read_and_checked():
    rng = np.random.default_rng(1)
    a, b = K.strided_args(rng, 5, 7, 16)
    tw.simulate(K.strided_transpose, a, b)
    assert (b == a.T).all()
    with pytest.raises(tw.LaunchError, match="size C is 7 from A's dimension 1 but 5"):
        tw.simulate(K.strided_transpose, a, np.zeros((5, 7), np.int32))


def test_values_that_leave_a_loop_body_by_continue_or_break_are_carried():
    """`d` changes only on the path that continues (or breaks) past its re-assignment:
    that path's value must reach the next iteration and the loop's exit."""
    for jump in ("continue", "break"):
        src = f'''
@T.prim_func
def k(A_ptr: T.handle, X_ptr: T.handle, O_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4,), "int32")
    X = T.match_buffer(X_ptr, (4,), "float32")
    O = T.match_buffer(O_ptr, (4,), "int32")
    T.device_entry()
    tid = T.thread_id([4])
    d = 1
    for i1 in range(1):
        for i2 in range(A[tid]):
            d = 5
        if X[tid] < 3.5:
            {jump}
        d = 1
    O[tid] = d
'''
        a = np.array([2, 0, 1, 2], np.int32)
        x = np.array([1, 1, 5, 5], np.float32)
        o = np.zeros(4, np.int32)
        tw.simulate(from_source(src), a, x, o)
        assert o.tolist() == [5, 1, 1, 1], jump
