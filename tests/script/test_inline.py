"""@T.inline device helpers and @T.meta_class objects: parsed into each call site, with
Python's names, run-time arguments and results, tuples, buffers and recursion; run in the
simulator against Python's own answer; errors at the helper's line and the call site."""

import importlib.util

import numpy as np
import pytest

import tilewise as tw
from errcheck import marked_line
from tilewise import T
from tilewise.ir.expr import Call
from tilewise.ir.visitor import walk


@T.inline
def twice_and_next(x):
    y = x * 2
    return y, y + 1


@T.inline
def put(buf, i, v):
    buf[i] = v


@T.inline
def count_down(buf, i, n):
    if n > 0:  # compile-time: the recursion ends
        count_down(buf, i, n - 1)
    buf[i, n] = n


def run(kernel, *arrays):
    tw.simulate(kernel, *arrays)
    return arrays


def test_run_time_arguments_tuples_and_buffers():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64,), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        a, b = twice_and_next(tid)
        for j in range(3):
            a = a + j
        put(A, tid, a)
        put(A, tid + 32, b)

    (A,) = run(k, np.full(64, -1, np.int32))
    t = np.arange(32)
    np.testing.assert_array_equal(A, np.concatenate([2 * t + 3, 2 * t + 1]))
    assert "twice_and_next" not in k.script()  # inlined: no call is left


def test_a_parameter_is_the_helpers_own_name():
    """Assigning a parameter inside the helper (even in a loop) never changes the caller's
    variable, as in Python."""

    @T.inline
    def bump(x, n):
        for _ in range(n):
            x = x + 1
        return x

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 2), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        v = tid * 10
        w = bump(v, 3)
        A[tid, 0] = v
        A[tid, 1] = w

    (A,) = run(k, np.full((32, 2), -1, np.int32))
    np.testing.assert_array_equal(A[:, 0], np.arange(32) * 10)
    np.testing.assert_array_equal(A[:, 1], np.arange(32) * 10 + 3)


def test_a_helper_defined_before_a_loop_reads_what_the_loop_assigns():
    """Python's closures see the enclosing function's names at the call, wherever they are
    assigned: a helper defined before the tile loop reads the loop's origin (and a helper
    passed to another helper, called there, too)."""

    @T.inline
    def each(f, n):
        for i in range(n):
            f(i)

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 8), "int32")
        T.device_entry()
        tid = T.thread_id([32])

        @T.inline
        def put(i):
            A[tid, origin + i] = origin * 10 + i  # origin: assigned in the loop below

        for t in range(2):
            origin = 4 * t
            each(put, 4)

    (A,) = run(k, np.full((32, 8), -1, np.int32))
    want = np.array([0, 1, 2, 3, 40, 41, 42, 43])
    np.testing.assert_array_equal(A, np.tile(want, (32, 1)))


def test_recursion_ended_by_a_compile_time_condition():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 4), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        count_down(A, tid, 3)

    (A,) = run(k, np.full((32, 4), -1, np.int32))
    np.testing.assert_array_equal(A, np.tile(np.arange(4), (32, 1)))


def test_a_helper_defined_in_the_kernel_reads_its_names_late():
    """TIRx's nested helper: defined inside a device loop, it reads the loop variable (and
    the kernel's buffer) where it is called; helpers call helpers."""

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 8), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        for x in range(4):

            @T.inline
            def add(c):
                A[tid, x * 2 + c] = x + c + tid

            @T.inline
            def both():
                add(0)
                add(1)

            both()

    (A,) = run(k, np.full((32, 8), -1, np.int32))
    x = np.arange(8) // 2
    np.testing.assert_array_equal(A, x[None, :] + np.arange(8)[None, :] % 2
                                  + np.arange(32)[:, None])


def test_keywords_defaults_and_star_arguments():
    @T.inline
    def store_sum(buf, i, *parts, scale=1):
        s = 0
        for p in parts:  # a compile-time tuple: unrolled
            s = s + p
        buf[i] = s * scale

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32,), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        store_sum(A, tid, tid, 1, 2, scale=3)

    (A,) = run(k, np.full(32, -1, np.int32))
    np.testing.assert_array_equal(A, (np.arange(32) + 3) * 3)


@T.meta_class
class Counter:
    """A meta-class object with run-time state: ``n`` is a run-time local assigned in place
    by its inline methods; ``limit`` is a compile-time field."""

    def __init__(self, limit):
        self.n = T.local_scalar("int32")
        self.limit = limit

    @T.inline
    def step(self, by):
        self.n = T.min(self.n + by, self.limit)

    def below(self, x):  # a plain method: Python that builds an expression
        return self.n < x


def test_meta_class_state_is_carried_through_loops():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32,), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        c = Counter(50)
        while c.below(tid + 5):
            c.step(7)
        A[tid] = c.n

    (A,) = run(k, np.full(32, -1, np.int32))
    t = np.arange(32)
    want = np.minimum(np.ceil((t + 5) / 7).astype(int) * 7, 50)
    np.testing.assert_array_equal(A, want)
    assert "c_n" in k.script()  # the field's local is named after the object and field


def test_meta_class_init_allocates_buffers_and_two_objects_stay_apart():
    @T.meta_class
    class Holder:
        def __init__(self, external):
            self.external = external
            self.buf = T.alloc_local((2,), "int32")

        @T.inline
        def fill(self, v):
            self.buf[0] = v
            self.buf[1] = v + 1

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 4), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        first = Holder(A)
        second = Holder(A)
        first.fill(tid)
        second.fill(tid * 100)
        A[tid, 0] = first.buf[0]
        A[tid, 1] = first.buf[1]
        A[tid, 2] = second.buf[0]
        second.external[tid, 3] = second.buf[1]

    (A,) = run(k, np.full((32, 4), -1, np.int32))
    t = np.arange(32)
    np.testing.assert_array_equal(A, np.stack([t, t + 1, 100 * t, 100 * t + 1], 1))


def test_meta_var_names_a_field_itself():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 2), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        c = Counter(1000)
        alias = T.meta_var(c.n)
        copy = c.n
        c.step(tid)
        A[tid, 0] = alias
        A[tid, 1] = copy

    (A,) = run(k, np.full((32, 2), -1, np.int32))
    np.testing.assert_array_equal(A[:, 0], np.arange(32))
    np.testing.assert_array_equal(A[:, 1], 0)


def test_the_generated_code_has_no_calls_of_helpers():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32,), "int32")
        T.device_entry()
        tid = T.thread_id([32])
        put(A, tid, tid)

    calls = []
    walk(k.body, lambda n: calls.append(n.op) if isinstance(n, Call) else None)
    assert not any("put" in c for c in calls)
    ptx = tw.compile(k, target="sm_90a").source("ptx")
    assert "call" not in ptx.split("{", 1)[1].replace("callseq", "")


# ------------------------------------------------------------------ errors
HELPERS = '''
@T.inline
def bad_index(buf, i):
    buf[i, 0] = 1.5  # <-
'''

KERNEL = '''
import tilewise as tw
from tilewise import T


@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32,), "float32")
    T.device_entry()
    tid = T.thread_id([32])
'''


def _kernel(*lines):
    return KERNEL + "".join("    " + ln + "\n" for ln in lines)


def load(src: str, path):
    """Import ``src`` written to ``path`` as a user's module (decorators run)."""
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def from_source(src: str, path=None):
    import tempfile
    from pathlib import Path

    if path is None:
        path = Path(tempfile.mkdtemp()) / "user_kernel.py"
    load(src, path)


def test_an_error_inside_a_helper_names_its_line_and_the_call_site(tmp_path):
    src = _kernel("bad_index(A, tid)  # call").replace("\n\n\n@T.prim_func", HELPERS
                                                          + "\n\n@T.prim_func")
    path = tmp_path / "k.py"
    with pytest.raises(tw.ScriptError) as info:
        from_source(src, path)
    text = str(info.value)
    assert info.value.span.line == marked_line(src)
    call_line = next(i for i, ln in enumerate(src.splitlines(), 1) if "# call" in ln)
    assert f"in the T.inline helper 'bad_index', called at {path}:{call_line}:" in text
    assert "tilewise/" not in text


@pytest.mark.parametrize("lines, message, hint", [
    (["@T.inline", "def r(x):", "    if x > 0:", "        return 1", "    return 2",
      "A[tid] = r(tid)"], "`return` inside a run-time `if`", "return it once"),
    (["@T.inline", "def f(a, b):", "    return a + b", "A[tid] = f(tid)"],
     "f(): missing a required argument: 'b'", "see the definition of 'f'"),
    (["@T.inline", "def f(n):", "    f(n + 1)", "f(0)"], "nest more than 64 deep",
     "compile-time condition"),
    (["def g(x):", "    return x", "A[tid] = g(tid)"],
     "a function defined inside a kernel must be a @T.inline helper", "@T.inline"),
], ids=["return-in-branch", "missing-argument", "endless-recursion", "plain-nested-def"])
def test_helper_mistakes_are_clear(lines, message, hint):
    with pytest.raises(tw.ScriptError) as info:
        from_source(_kernel(*lines))
    assert message in str(info.value)
    assert hint in (info.value.hint or "")


def test_a_python_function_with_run_time_values_suggests_inline():
    with pytest.raises(tw.ScriptError) as info:
        from_source(_kernel("A[tid] = py(tid)").replace("@T.prim_func", "def py(x):\n"
                                                           "    return x\n\n\n@T.prim_func"))
    assert "cannot take run-time values" in str(info.value)
    assert "@T.inline" in info.value.hint


def test_a_helper_called_outside_a_kernel_says_where_it_runs():
    with pytest.raises(tw.ScriptError, match="can only be called inside a kernel"):
        put(None, 0, 0)
    with pytest.raises(tw.ScriptError, match="can only be used inside a @T.prim_func"):
        T.local_scalar("int32")


def test_a_compile_time_field_cannot_change_inside_a_run_time_loop():
    src = '''
from tilewise import T


@T.meta_class
class Box:
    def __init__(self):
        self.v = 0

    @T.inline
    def set(self, x):
        self.v = x  # <-
''' + _kernel("b = Box()", "for i in range(4):", "    b.set(i)")
    with pytest.raises(tw.ScriptError) as info:
        from_source(src)
    assert "does not hold a run-time local" in str(info.value)
    assert 'T.local_scalar("int32")' in info.value.hint
    assert info.value.span.line == marked_line(src)


def test_an_error_in_python_init_names_the_python_line(tmp_path):
    src = '''
from tilewise import T


@T.meta_class
class Bad:
    def __init__(self):
        self.buf = T.alloc_local((0,), "int32")  # <-
''' + _kernel("b = Bad()  # call")
    path = tmp_path / "bad.py"
    with pytest.raises(tw.ScriptError) as info:
        from_source(src, path)
    assert info.value.span.line == marked_line(src)
    assert info.value.span.file == str(path)
    assert "called at" in str(info.value)


def test_every_id_the_parser_keys_on_belongs_to_a_live_object(monkeypatch):
    """The parser keys locals, fields and adoptable helper results by id(); each such object
    is kept alive for the parse (Parser.pinned). A freed Var's id was soon another's, and the
    GEMM example parsed one way or the other from run to run (an inline helper's argument
    adopted as a finished helper's result, or copied): about one process in eight got
    another launch-cache key (tests/gpu/test_deploy_gpu.py failed that way)."""
    import importlib.util
    import pathlib

    from tilewise.ir.stmt import as_prim_func
    from tilewise.script.parser import Parser

    made = []
    init = Parser.__init__

    def recording(self, *a, **kw):
        init(self, *a, **kw)
        made.append(self)

    monkeypatch.setattr(Parser, "__init__", recording)
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gemm_ids", root / "examples" /
                                                  "gemm_hopper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    texts = {as_prim_func(mod.make_gemm(dtype="bfloat16", streamk=s)).script()
             for s in (False, True, False)}
    assert len(texts) == 2 and made
    for p in made:
        live = {id(o) for o in p.pinned} | {id(v) for v in p.params} | set(p.size_vars)
        keyed = set(p.mutable) | p.orphans | p.field_vars | set(p.meta_depth)
        assert keyed <= live, f"{len(keyed - live)} ids of objects the parser let go"
