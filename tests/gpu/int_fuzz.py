"""Random integer expression kernels and an independent Python evaluator of them (int32
wrap-around, floor division and modulo as docs/ir.md defines), shared by the simulator
test and the GPU test."""

import random

import numpy as np

from tilewise.ir import (BinOp, BufferLoad, BufferStore, IntImm, PrimFunc, Select,
                         ThreadBinding, UnaryOp, Var, cmp, dtype, seq)
from tilewise.ir.stmt import Buffer

N = 128
INT32 = dtype.DTYPES["int32"]
HANDLE = dtype.DTYPES["handle"]


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def _leaf(rng, loads):
    return rng.choice(loads) if rng.random() < 0.7 else IntImm(rng.randint(-9, 9))


def random_expr(rng: random.Random, loads, depth: int = 4):
    if depth == 0:
        return _leaf(rng, loads)
    kind = rng.random()
    x = random_expr(rng, loads, depth - 1)
    if kind < 0.55:
        op = rng.choice(["+", "-", "*", "&", "|", "^", "min", "max"])
        return BinOp(op, x, random_expr(rng, loads, depth - 1))
    if kind < 0.75:
        op = rng.choice(["//", "%", "<<", ">>"])
        k = rng.randint(2, 9) if op in ("//", "%") else rng.randint(0, 7)
        return BinOp(op, x, IntImm(k))
    if kind < 0.85:
        return UnaryOp(rng.choice(["-", "~"]), x)
    c = cmp(rng.choice(["<", "<=", ">", ">=", "==", "!="]), x, random_expr(rng, loads, 1))
    return Select(c, random_expr(rng, loads, depth - 1), random_expr(rng, loads, depth - 1))


def evaluate(e, env):
    """Reference semantics, element by element, on Python ints."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, BufferLoad):
        return env[e.buffer.name]
    if isinstance(e, UnaryOp):
        v = evaluate(e.a, env)
        return wrap(-v) if e.op == "-" else wrap(~v)
    if isinstance(e, Select):
        return evaluate(e.true_value if evaluate(e.cond, env) else e.false_value, env)
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b,
           "|": lambda: a | b, "^": lambda: a ^ b, "min": lambda: min(a, b),
           "max": lambda: max(a, b), "//": lambda: a // b, "%": lambda: a % b,
           "<<": lambda: a << b, ">>": lambda: a >> b, "<": lambda: a < b,
           "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
           "==": lambda: a == b, "!=": lambda: a != b}
    v = ops[e.op]()
    return v if isinstance(v, bool) else wrap(v)


def make_case(seed: int):
    """(kernel, inputs, expected) for one random expression over three int32 inputs."""
    rng = random.Random(seed)
    handles = [Var(n, HANDLE) for n in ("A_ptr", "B_ptr", "C_ptr", "O_ptr")]
    bufs = [Buffer(n, (N,), INT32, data=h) for n, h in zip("ABCO", handles)]
    tid = Var("tid", INT32)
    loads = [BufferLoad(b, (tid,)) for b in bufs[:3]]
    e = random_expr(rng, loads)
    body = seq(BufferStore(bufs[3], (tid,), e))
    func = PrimFunc(f"fuzz{seed}", tuple(handles), tuple(zip(handles, bufs)),
                    (ThreadBinding(tid, "thread_id", (N,)),), body)
    nrng = np.random.default_rng(seed)
    ins = [nrng.integers(-(2**20), 2**20, N, dtype=np.int32) for _ in range(3)]
    want = np.array([evaluate(e, {"A": int(x), "B": int(y), "C": int(z)})
                     for x, y, z in zip(*ins)], dtype=np.int64).astype(np.int32)
    return func, ins + [np.full(N, 12345, np.int32)], want
