"""Random kernels with loops, branches, while loops, break/continue and loop-carried int32
and float32 locals — written as tilewise *source* (so the parser's binding rules are
exercised too) — and an independent evaluator of the same programs on Python ints and
numpy float32 scalars, one thread at a time, following docs/ir.md's arithmetic rules.

A program is a tree of tuples; :func:`source` prints it as a kernel and :func:`evaluate`
runs it for one thread. Every name a program reads is assigned on every path before (the
generator tracks definite assignment), so every program is valid."""

from __future__ import annotations

import random

import numpy as np

N = 64
INTS = ["a", "b", "c", "d"]
FLOATS = ["x", "y", "z"]
F32 = np.float32


# ---------------------------------------------------------------- generation
class Gen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.loop_vars: list[str] = []
        self.depth = 0
        self.loops = 0

    def int_expr(self, depth=2):
        r = self.rng.random()
        if depth == 0 or r < 0.3:
            return self.int_leaf()
        if r < 0.75:
            op = self.rng.choice(["+", "-", "*", "&", "|", "^", "min", "max"])
            return self.runtime(("bin", op, self.int_expr(depth - 1), self.int_expr(depth - 1)))
        if r < 0.9:
            op = self.rng.choice(["//", "%"])
            # a divisor read at run time may be zero (defined: x // 0 == -1, x % 0 == x);
            # one that is 0 at compile time is an error, so divisors are loads
            d = self.rng.choice([("load", "A"), ("load", "B"), ("cvt", ("load", "X"))])
            return self.runtime(("bin", op, self.int_expr(depth - 1), d))
        op = self.rng.choice(["<<", ">>"])
        return self.runtime(("bin", op, self.int_expr(depth - 1),
                             ("lit", self.rng.randint(0, 40))))

    def runtime(self, e):
        """An operation on compile-time values is Python arithmetic while parsing
        (unbounded ints, float64), and names bound to literals are compile-time: keep a
        load in every operation so that it is a run-time one, as the evaluator assumes."""
        if not _has_load(e):
            is_float = e[2][0] == "tofloat" or (e[2][0] == "name" and e[2][1] in FLOATS) or (
                e[2][0] == "lit" and isinstance(e[2][1], float))
            return (e[0], e[1], ("load", "X" if is_float else "A"), e[3])
        return e

    def int_leaf(self):
        r = self.rng.random()
        if r < 0.5:
            return ("name", self.rng.choice(INTS))
        if r < 0.65 and self.loop_vars:
            return ("name", self.rng.choice(self.loop_vars))
        if r < 0.8:
            return ("cvt", self.float_leaf())
        return ("lit", self.rng.randint(-9, 9))

    def float_expr(self, depth=2):
        r = self.rng.random()
        if depth == 0 or r < 0.35:
            return self.float_leaf()
        op = self.rng.choice(["+", "-", "*", "min", "max"])
        return self.runtime(("bin", op, self.float_expr(depth - 1), self.float_expr(depth - 1)))

    def float_leaf(self):
        r = self.rng.random()
        if r < 0.6:
            return ("name", self.rng.choice(FLOATS))
        if r < 0.8:
            return ("tofloat", ("name", self.rng.choice(INTS)))
        return ("lit", self.rng.choice([0.5, -1.25, 2.0, 0.0, 3.5]))

    def cond(self):
        if self.rng.random() < 0.6:
            op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
            return ("cmp", op, self.int_expr(1), self.int_expr(0))
        return ("cmp", self.rng.choice(["<", ">"]), self.float_expr(1), self.float_expr(0))

    def assign(self):
        if self.rng.random() < 0.6:
            return ("set", self.rng.choice(INTS), self.int_expr())
        return ("set", self.rng.choice(FLOATS), self.float_expr())

    def block(self, n):
        return [self.stmt() for _ in range(n)]

    def stmt(self):
        r = self.rng.random()
        if self.depth >= 3 or r < 0.45:
            return self.assign()
        self.depth += 1
        try:
            if r < 0.65:
                return ("if", self.cond(), self.block(self.rng.randint(1, 3)),
                        self.block(self.rng.randint(0, 2)))
            if r < 0.8 and self.loops < 3:
                return self.for_loop()
            if self.loops < 3:
                return self.while_loop()
            return self.assign()
        finally:
            self.depth -= 1

    def jump(self):
        """An optional `if cond: break/continue` inside a loop body."""
        if self.rng.random() < 0.4:
            return [("if", self.cond(), [(self.rng.choice(["break", "continue"]),)], [])]
        return []

    def for_loop(self):
        self.loops += 1
        var = f"i{self.loops}"
        count = ("lit", self.rng.randint(0, 4)) if self.rng.random() < 0.5 else (
            "bin", "&", ("name", self.rng.choice(INTS)), ("lit", 3))
        self.loop_vars.append(var)
        body = self.block(self.rng.randint(1, 3))
        body[self.rng.randint(0, len(body)):0] = self.jump()
        self.loop_vars.pop()
        return ("for", var, count, body)

    def while_loop(self):
        self.loops += 1
        k = f"k{self.loops}"
        bound = self.rng.randint(0, 4)
        body = self.block(self.rng.randint(1, 2))
        body = [("inc", k)] + body  # the counter moves first, so `continue` cannot spin
        body[self.rng.randint(1, len(body)):1] = self.jump()
        return ("while", k, bound, body)


def _has_load(e) -> bool:
    if e[0] == "load":
        return True
    return any(_has_load(x) for x in e[1:] if isinstance(x, tuple))


def make_program(seed: int):
    g = Gen(seed)
    init = [("set", "a", ("load", "A")), ("set", "b", ("load", "B")), ("set", "c", ("lit", 0)),
            ("set", "d", ("lit", 1)), ("set", "x", ("load", "X")), ("set", "y", ("lit", 0.0)),
            ("set", "z", ("load", "Y"))]
    return init + g.block(g.rng.randint(3, 7))


# ---------------------------------------------------------------- printing as a kernel
def _e(e) -> str:
    kind = e[0]
    if kind == "lit":
        return repr(e[1]) if e[1] >= 0 else f"({e[1]!r})"
    if kind == "name":
        return e[1]
    if kind == "load":
        return f"{e[1]}[tid]"
    if kind == "cvt":
        return f"T.cast({_e(e[1])}, \"int32\")"
    if kind == "tofloat":
        return f"T.cast({_e(e[1])}, \"float32\")"
    if kind == "cmp":
        return f"({_e(e[2])} {e[1]} {_e(e[3])})"
    _, op, a, b = e
    if op in ("min", "max"):
        return f"T.{op}({_e(a)}, {_e(b)})"
    return f"({_e(a)} {op} {_e(b)})"


def _s(s, depth, out):
    pad = "    " * depth
    kind = s[0]
    if kind == "set":
        out.append(f"{pad}{s[1]} = {_e(s[2])}")
    elif kind in ("break", "continue"):
        out.append(f"{pad}{kind}")
    elif kind == "inc":
        out.append(f"{pad}{s[1]} = {s[1]} + 1")
    elif kind == "if":
        out.append(f"{pad}if {_e(s[1])}:")
        _block(s[2], depth + 1, out)
        if s[3]:
            out.append(f"{pad}else:")
            _block(s[3], depth + 1, out)
    elif kind == "for":
        out.append(f"{pad}for {s[1]} in range({_e(s[2])}):")
        _block(s[3], depth + 1, out)
    elif kind == "while":
        out.append(f"{pad}{s[1]} = 0")
        out.append(f"{pad}while {s[1]} < {s[2]}:")
        _block(s[3], depth + 1, out)


def _block(stmts, depth, out):
    if not stmts:
        out.append("    " * depth + "pass")
    for s in stmts:
        _s(s, depth, out)


def source(prog, name="fuzz") -> str:
    out = [
        "@T.prim_func",
        f"def {name}(A_ptr: T.handle, B_ptr: T.handle, X_ptr: T.handle, Y_ptr: T.handle, "
        "O_ptr: T.handle, P_ptr: T.handle):",
        f"    A = T.match_buffer(A_ptr, ({N},), \"int32\")",
        f"    B = T.match_buffer(B_ptr, ({N},), \"int32\")",
        f"    X = T.match_buffer(X_ptr, ({N},), \"float32\")",
        f"    Y = T.match_buffer(Y_ptr, ({N},), \"float32\")",
        f"    O = T.match_buffer(O_ptr, ({N}, {len(INTS)}), \"int32\")",
        f"    P = T.match_buffer(P_ptr, ({N}, {len(FLOATS)}), \"float32\")",
        "    T.device_entry()",
        f"    tid = T.thread_id([{N}])",
    ]
    _block(prog, 1, out)
    out += [f"    O[tid, {k}] = {n}" for k, n in enumerate(INTS)]
    out += [f"    P[tid, {k}] = {n}" for k, n in enumerate(FLOATS)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- the independent evaluator
def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def _int_op(op, a, b):
    if op == "//":
        return -1 if b == 0 else wrap(a // b)
    if op == "%":
        return a if b == 0 else a % b
    if op in ("<<", ">>"):
        c = b % 2**32
        if c >= 32:
            return 0 if op == "<<" or a >= 0 else -1
        return wrap(a << c) if op == "<<" else a >> c
    return wrap({"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
                 "min": min(a, b), "max": max(a, b)}[op])


def _float_op(op, a, b):
    with np.errstate(all="ignore"):
        if op == "min":
            return F32(np.fmin(a, b))
        if op == "max":
            return F32(np.fmax(a, b))
        return F32({"+": a + b, "-": a - b, "*": a * b}[op])


def _to_int(v) -> int:
    """float32 -> int32: truncate toward zero, saturate, NaN -> 0 (cvt.rzi.sat)."""
    v = float(v)
    if v != v:
        return 0
    if v >= 2**31:
        return 2**31 - 1
    if v <= -(2**31):
        return -(2**31)
    return int(v)


class _Jump(Exception):
    def __init__(self, kind):
        self.kind = kind


def _ev(e, env):
    kind = e[0]
    if kind == "lit":
        return F32(e[1]) if isinstance(e[1], float) else e[1]
    if kind == "name":
        return env[e[1]]
    if kind == "load":
        return env["@" + e[1]]
    if kind == "cvt":
        return _to_int(_ev(e[1], env))
    if kind == "tofloat":
        return F32(_ev(e[1], env))
    if kind == "cmp":
        a, b = _ev(e[2], env), _ev(e[3], env)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                "!=": a != b}[e[1]]
    _, op, a, b = e
    va, vb = _ev(a, env), _ev(b, env)
    if isinstance(va, np.float32) or isinstance(vb, np.float32):
        return _float_op(op, F32(va), F32(vb))
    return _int_op(op, va, vb)


def _run(stmts, env):
    for s in stmts:
        kind = s[0]
        if kind == "set":
            v = _ev(s[2], env)
            env[s[1]] = F32(v) if s[1] in FLOATS else v
        elif kind in ("break", "continue"):
            raise _Jump(kind)
        elif kind == "inc":
            env[s[1]] = env[s[1]] + 1
        elif kind == "if":
            _run(s[2] if _ev(s[1], env) else s[3], env)
        elif kind == "for":
            for i in range(max(_ev(s[2], env), 0)):
                env[s[1]] = i
                if _loop_body(s[3], env):
                    break
        elif kind == "while":
            env[s[1]] = 0
            while env[s[1]] < s[2]:
                if _loop_body(s[3], env):
                    break


def _loop_body(body, env) -> bool:
    """Run one iteration; True when it broke out."""
    try:
        _run(body, env)
    except _Jump as j:
        return j.kind == "break"
    return False


def evaluate(prog, ins):
    """(O, P) for inputs (A, B, X, Y), thread by thread."""
    a, b, x, y = ins
    o = np.zeros((N, len(INTS)), np.int32)
    p = np.zeros((N, len(FLOATS)), np.float32)
    for t in range(N):
        env = {"@A": int(a[t]), "@B": int(b[t]), "@X": F32(x[t]), "@Y": F32(y[t]), "tid": t}
        _run(prog, env)
        o[t] = [env[n] for n in INTS]
        p[t] = [env[n] for n in FLOATS]
    return o, p


def make_case(seed: int):
    """(kernel source, arguments, expected outputs) of one random program."""
    prog = make_program(seed)
    rng = np.random.default_rng(seed)
    ins = [rng.integers(-50, 50, N).astype(np.int32), rng.integers(-2**31, 2**31, N,
                                                                     dtype=np.int64).astype(np.int32),
           (rng.standard_normal(N) * 10).astype(np.float32),
           (rng.standard_normal(N) * 3).astype(np.float32)]
    o, p = evaluate(prog, ins)
    args = ins + [np.full((N, len(INTS)), 77, np.int32),
                  np.full((N, len(FLOATS)), np.nan, np.float32)]
    return source(prog, f"fuzz{seed}"), args, (o, p)
