"""Buffer layouts that cannot describe memory, and kernels nested too deeply to compile:
each a ScriptError at the user's line (marked ``# <-``) saying what to change. Before, a
TLane layout on a shared buffer failed inside the simulator, a zero-stride or overlapping
one gave a wrong copy, and a 450-term expression a RecursionError."""

import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source

FILE = "layout_kernel.py"

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "float32")
    T.device_entry()
    tid = T.thread_id([128])
'''


def body(*lines: str) -> str:
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


def shared(layout: str, scope: str = "shared", shape: str = "(128,)") -> str:
    return body(f'Sm = T.alloc_buffer({shape}, "float32", scope="{scope}", '
                f"layout=TileLayout({layout}))  # <-", "Sm[tid % 4] = A[tid]")


NOT_MEMORY = "which has no meaning for a buffer in"
OVERLAP = "puts several elements at one place"
CASES = [
    ("tlane-on-shared", shared("S[(128,):(1@TLane,)]"),
     f"uses axis 'TLane', {NOT_MEMORY} shared memory", "T.decl_buffer"),
    ("tcol-on-shared", shared("S[(128,):(1@TCol,)]"),
     f"uses axis 'TCol', {NOT_MEMORY} shared memory", "scope=\"tmem\""),
    ("tlane-on-dynamic-shared", shared("S[(128,):(1@TLane,)]", "shared.dyn"),
     f"uses axis 'TLane', {NOT_MEMORY} shared.dyn memory", None),
    ("thread-axis-on-shared", shared("S[(128,):(1@laneid,)]"),
     f"uses axis 'laneid', {NOT_MEMORY} shared memory", None),
    ("cta-axis-on-shared", shared("S[(128,):(1@bx,)]"),
     f"uses axis 'bx', {NOT_MEMORY} shared memory", None),
    ("tlane-on-registers", shared("S[(128,):(1@TLane,)]", "local"),
     f"uses axis 'TLane', {NOT_MEMORY} registers", None),
    ("zero-stride", shared("S[(128,):(0,)]"),
     f"{OVERLAP} (elements 0 and 1 both at m=0)", "none of them 0"),
    ("overlapping-strides", shared("S[(2, 64):(1, 1)]"),
     f"{OVERLAP} (elements 1 and 64 both at m=1)", "strides that do not overlap"),
    ("overlapping-2d", shared("S[(16, 8):(4, 1)]", shape="(16, 8)"),
     f"{OVERLAP} (elements 4 and 8 both at m=4)", None),
    ("replicated-shared", shared("S[(128,)] + R[2:128]"),
     "replica on the memory axis m is not allowed", "R[2 : 4@warpid]"),
    ("zero-stride-registers", body('r = T.alloc_buffer((4,), "float32", scope="local", '
                                   "layout=TileLayout(S[(4,):(0,)]))  # <-", "r[0] = 1.0"),
     f"{OVERLAP} (elements 0 and 1 both at m=0)", None),
    ("thread-axis-on-global", '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "float32", layout=TileLayout(S[(128,):(1@laneid,)]))  # <-
    T.device_entry()
    tid = T.thread_id([128])
''', f"uses axis 'laneid', {NOT_MEMORY} global memory", None),
    ("overlapping-view", body('Sm = T.alloc_shared((128,), "float32")',
                              "V = Sm.view(64, layout=TileLayout(S[(64,):(0,)]))  # <-"),
     f"{OVERLAP} (elements 0 and 1 both at m=0)", None),
    ("expression-450-terms", body("A[tid] = " + " + ".join(["A[tid]"] * 450) + "  # <-"),
     "the kernel nests 453 levels deep here (expressions inside statements); tilewise "
     "compiles at most 160", "split the expression into several assignments"),
    ("expression-2000-terms", body("A[tid] = " + " + ".join(["A[tid]"] * 2000) + "  # <-"),
     "levels deep here (expressions inside statements); tilewise compiles at most 160",
     "partial sums"),
    ("compile-time-sum-of-300", body("A[tid] = sum([A[(tid + i) % 128] for i in range(300)])"
                                     "  # <-"),
     "the kernel nests", "split the expression"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_buffer_and_depth_errors(case):
    _, src, message, hint = case
    with pytest.raises(tw.TilewiseError) as info:
        from_source(src, filename=FILE)
    check_error(info.value, message, hint, src, FILE)


def test_the_deepest_kernel_allowed_compiles_and_simulates():
    import numpy as np

    k = from_source(body("A[tid] = " + " + ".join(["A[tid]"] * 150)), filename=FILE)
    a = np.ones(128, np.float32)
    tw.simulate(k, a)
    assert (a == 150).all() and "add.rn.f32" in tw.compile(k).ptx


def test_a_lambda_or_a_non_function_is_not_a_kernel():
    from tilewise import T

    with pytest.raises(tw.ScriptError, match="needs a `def` function, not a lambda") as info:
        T.prim_func(lambda A_ptr: None)
    assert info.value.span.file == __file__
    with pytest.raises(tw.ScriptError, match="decorates a Python function, not int 3"):
        T.prim_func(3)
    with pytest.raises(tw.ScriptError, match="decorates a Python function, not type"):
        T.prim_func(dict)


def test_a_symbolic_size_without_a_name_is_refused_at_its_line():
    """A size reached through a container (a dict of match_buffer options) has no name for
    the launch to bind it by: before, it was left out of the kernel's parameters, the
    simulator ran, and the compiled kernel failed with KeyError ''."""
    from tilewise import T

    LD = T.int32()
    pitch = {"strides": (LD, 1)}
    with pytest.raises(tw.ScriptError, match="a symbolic size in the shape of strides= has no "
                       "name: it came through a container") as info:
        @T.prim_func
        def k(A_ptr: T.handle):
            A = T.match_buffer(A_ptr, (128, 64), "float32", **pitch)  # noqa: F841
            T.device_entry()
    assert "write the size's name in the kernel" in str(info.value)
    assert info.value.span.file == __file__ and "**pitch" in str(info.value)
