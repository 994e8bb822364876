"""Seeds and mutations of the robustness fuzzer (tests/fuzz/).

A *seed* is a module of the project that defines kernels: an example, a test's kernel
module. :func:`load_seeds` keeps, of each, what defines its kernels (imports of tilewise,
numpy, math and dataclasses; assignments; classes; functions other than tests) and drops
the rest. A *mutant* (:func:`make_mutant`) is a seed with one to three mutations applied
inside the bodies of its ``@T.prim_func`` functions, plus a target and compile options:

delete / duplicate / swap statements, change a dtype, an integer (shapes, slice bounds,
thread counts, loop bounds, immediates), a slice, a keyword option (``dispatch=``,
``scope=``, ...), an operator or a name, swap two arguments of a call. Everything is drawn
from ``random.Random(f"{base}:{seed}:{index}")``, so a mutant is rebuilt from its three
numbers (``scripts/fuzz --replay``).
"""

from __future__ import annotations

import ast
import copy
import functools
import pathlib
import random
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED_GLOBS = ("examples/*.py", "tests/*/kernels*.py", "tests/sanitizer/planted.py",
              "tests/gpu/semantics_kernels.py", "tests/sim/test_*.py", "tests/dispatch/test_*.py",
              "tests/codegen/test_*.py", "tests/core/test_core_*.py")
# pytest: case lists at module level may carry marks (pytest.param(..., marks=...slow))
_KEEP_IMPORTS = ("tilewise", "numpy", "math", "dataclasses", "typing", "__future__",
                 "pytest")

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
          "uint32", "int64", "uint64", "bool", "float8_e4m3fn", "float8_e5m2", "float12",
          "handle", "int"]
TARGETS_GOOD = ["sm_80", "sm_90a", "sm_90a", "sm_100a", "sm_75", "sm_120a", "sm_103f", "sm_89"]
TARGETS_BAD = ["sm_70", "sm_91", 90, "SM_90A", "sm_101a", "", "compute_90"]
STRINGS = {
    "dispatch": ["ldgsts", "tma", "reg", "gmem_smem", "fallback", "tcgen05_ldst", "bulk",
                 "ldgst", "wgmma", ""],
    "scope": ["shared", "shared.dyn", "local", "global", "tmem", "register", "SHARED"],
}
LAUNCH = ("thread_id", "warp_id", "lane_id", "cta_id", "warpgroup_id")


@dataclass
class Seed:
    name: str
    tree: ast.Module | None  # None: a generated program (GENERATED)
    target: str
    kernels: tuple = ()  # the kernels the module defines at its top level (run by name)


def _is_kernel(fn: ast.AST) -> bool:
    return isinstance(fn, ast.FunctionDef) and any(
        isinstance(d, ast.Attribute) and d.attr == "prim_func" for d in fn.decorator_list)


def _keep(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return all(a.name.split(".")[0] in _KEEP_IMPORTS for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in _KEEP_IMPORTS
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.ClassDef)):
        return True
    if isinstance(node, ast.FunctionDef):
        return not node.name.startswith(("test_", "_check", "caught", "run"))
    return False


GENERATED = "tests/core/prog_fuzz.py"  # a seed of random programs, one per index
_HEAD = "import numpy as np\nfrom tilewise import T, Tx\n"


@functools.lru_cache(maxsize=1)
def _prog_fuzz():
    import importlib.util

    spec = importlib.util.spec_from_file_location("prog_fuzz", ROOT / GENERATED)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def generated_tree(index: int) -> ast.Module:
    """A random valid program of tests/core/prog_fuzz.py (loops, branches, while, break)."""
    src = _prog_fuzz().make_case(index % 997)[0]
    return ast.parse(_HEAD + src.replace("def ", "@T.prim_func\ndef ", 1)
                     if "@T.prim_func" not in src else _HEAD + src)


def load_seeds(root: pathlib.Path = ROOT) -> list[Seed]:
    """Every module matching SEED_GLOBS that defines a kernel, reduced to its definitions,
    and the generated programs of tests/core/prog_fuzz.py."""
    seeds = [Seed(GENERATED, None, "sm_90a")]
    for pattern in SEED_GLOBS:
        for path in sorted(root.glob(pattern)):
            seed = _seed_of(path, root)
            if seed is not None:
                seeds.append(seed)
    return seeds


def load_seed(name: str, root: pathlib.Path = ROOT) -> Seed:
    """The seed :func:`load_seeds` holds under ``name``, loading only its module (a worker
    loads the seeds it is handed, not all of them: ~2 s per worker start)."""
    if name == GENERATED:
        return Seed(GENERATED, None, "sm_90a")
    seed = _seed_of(root / name, root)
    if seed is None:
        raise KeyError(f"{name} defines no kernel at its top level: not a fuzz seed")
    return seed


def _opted_out(tree: ast.Module) -> bool:
    """``FUZZ_SEED = False`` at a module's top level: it is no seed (the reason beside
    it), though it defines kernels."""
    return any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "FUZZ_SEED"
                                                 for t in n.targets)
               and isinstance(n.value, ast.Constant) and n.value.value is False
               for n in tree.body)


def _seed_of(path: pathlib.Path, root: pathlib.Path) -> Seed | None:
    tree = ast.parse(path.read_text())
    if _opted_out(tree):
        return None
    body = [n for n in tree.body if _keep(n)]
    kept = ast.Module(body=body, type_ignores=[])
    if not any(_is_kernel(n) for n in ast.walk(kept)):
        return None
    target = "sm_90a"
    for n in body:
        if (isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "TARGET"
                                              for t in n.targets)
                and isinstance(n.value, ast.Constant)):
            target = n.value.value
    name = str(path.relative_to(root))
    kernels = _reachable(kept, name, path)
    # kernels made only by factories the tests call are out of reach
    return Seed(name, kept, target, kernels) if kernels else None


def _reachable(tree: ast.Module, name: str, path: pathlib.Path) -> tuple:
    """Names of the kernels the unmutated module binds at its top level."""
    from harness import exec_module
    from tilewise.ir import PrimFunc

    ns = exec_module(ast.unparse(tree), f"<seed {name}>", str(path))
    return tuple(sorted({v.name for v in ns.values() if isinstance(v, PrimFunc)}))


# ---------------------------------------------------------------- mutations
def kernels_of(tree: ast.Module) -> list[ast.FunctionDef]:
    return [fn for fn in ast.walk(tree) if _is_kernel(fn)]


class _Sites:
    """The mutable places inside one kernel's body."""

    def __init__(self, fn: ast.FunctionDef):
        self.blocks: list[list] = []  # statement lists
        self.loop_blocks: list[list] = []  # the bodies of loops (break/continue fit there)
        self.ints: list[ast.Constant] = []
        self.strings: list[ast.Constant] = []
        self.slices: list[ast.Slice] = []
        self.calls: list[ast.Call] = []
        self.ops: list[ast.AST] = []
        self.names: list[ast.Name] = []
        self._collect(fn)

    def _collect(self, fn: ast.FunctionDef) -> None:
        self.blocks.append(fn.body)
        for node in (n for stmt in fn.body for n in ast.walk(stmt)):
            for field in ("body", "orelse"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    self.blocks.append(block)
                    if isinstance(node, (ast.For, ast.While)) and field == "body":
                        self.loop_blocks.append(block)
            if isinstance(node, ast.Constant):
                if isinstance(node.value, int) and not isinstance(node.value, bool):
                    self.ints.append(node)
                elif isinstance(node.value, str):
                    self.strings.append(node)
            elif isinstance(node, ast.Slice):
                self.slices.append(node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, (ast.BinOp, ast.Compare)):
                self.ops.append(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.names.append(node)


def _new_int(rng: random.Random, v: int) -> int:
    return rng.choice([0, 1, -1, v + 1, v - 1, v * 2, v // 2, v * 1000, 3, 7, 31, 33, 1024,
                       1 << 20, v + 32, -v])


def m_delete(s, rng):
    blocks = [b for b in s.blocks if len(b) > 1]
    if not blocks:
        return None
    b = rng.choice(blocks)
    i = rng.randrange(len(b))
    del b[i]
    return f"delete statement {i}"


def m_duplicate(s, rng):
    b = rng.choice(s.blocks)
    i = rng.randrange(len(b))
    b.insert(i + 1, copy.deepcopy(b[i]))
    return f"duplicate statement {i}"


def m_swap_statements(s, rng):
    blocks = [b for b in s.blocks if len(b) > 1]
    if not blocks:
        return None
    b = rng.choice(blocks)
    i = rng.randrange(len(b) - 1)
    b[i], b[i + 1] = b[i + 1], b[i]
    return f"swap statements {i} and {i + 1}"


def m_dtype(s, rng):
    known = [c for c in s.strings if c.value in DTYPES]
    if not known:
        return None
    c = rng.choice(known)
    old, c.value = c.value, rng.choice(DTYPES)
    return f"dtype {old} -> {c.value}"


def m_int(s, rng):
    if not s.ints:
        return None
    c = rng.choice(s.ints)
    old, c.value = c.value, _new_int(rng, c.value)
    return f"int {old} -> {c.value}"


def m_slice(s, rng):
    if not s.slices:
        return None
    sl = rng.choice(s.slices)
    which = rng.choice(["lower", "upper", "swap"])
    if which == "swap":
        sl.lower, sl.upper = sl.upper, sl.lower
    else:
        setattr(sl, which, rng.choice([None, ast.Constant(rng.choice([0, 1, 8, 100, 4096, -1]))]))
    return f"slice {which}"


def m_threads(s, rng):
    launch = [c for c in s.calls if isinstance(c.func, ast.Attribute) and c.func.attr in LAUNCH
              and c.args and isinstance(c.args[0], ast.List) and c.args[0].elts]
    if not launch:
        return None
    c = rng.choice(launch)
    elts = c.args[0].elts
    i = rng.randrange(len(elts))
    elts[i] = ast.Constant(rng.choice([1, 2, 32, 64, 96, 100, 256, 1024, 2048, 0]))
    return f"{c.func.attr} extent {i} -> {elts[i].value}"


def _pick(rng, items):
    return rng.choice(items) if items else None


def m_keyword(s, rng):
    c = _pick(rng, [c for c in s.calls if c.keywords])
    if c is None:
        return None
    kw = rng.choice(c.keywords)
    r = rng.random()
    if r < 0.3:
        c.keywords.remove(kw)
        return f"drop keyword {kw.arg}"
    if r < 0.45:
        c.keywords.append(ast.keyword("bogus_option", ast.Constant(1)))
        return "add keyword bogus_option"
    choices = STRINGS.get(kw.arg, ["", "x", 0, None, True, 1 << 40])
    kw.value = ast.Constant(rng.choice(choices))
    return f"keyword {kw.arg}={kw.value.value!r}"


def m_swap_args(s, rng):
    c = _pick(rng, [c for c in s.calls if len(c.args) > 1])
    if c is None:
        return None
    i, j = rng.sample(range(len(c.args)), 2)
    c.args[i], c.args[j] = c.args[j], c.args[i]
    return f"swap arguments {i} and {j}"


_BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div, ast.BitAnd, ast.LShift,
           ast.RShift, ast.BitXor, ast.Pow]
_CMPOPS = [ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq]


def m_operator(s, rng):
    if not s.ops:
        return None
    node = rng.choice(s.ops)
    if isinstance(node, ast.BinOp):
        node.op = rng.choice(_BINOPS)()
        return f"operator -> {type(node.op).__name__}"
    node.ops = [rng.choice(_CMPOPS)() for _ in node.ops]
    return f"comparison -> {type(node.ops[0]).__name__}"


def m_name(s, rng):
    if len(s.names) < 2:
        return None
    a, b = rng.sample(s.names, 2)
    old, a.id = a.id, b.id
    return f"name {old} -> {b.id}"


_INSERTS = ["T.cuda.cta_sync()", "T.ptx.cp_async.commit_group()",
            "T.ptx.cp_async.wait_group(0)", "T.ptx.fence.proxy_async()", "break", "continue",
            "T.ptx.cp_async.bulk.commit_group()", "T.ptx.cp_async.bulk.wait_group(0)"]


def m_insert(s, rng):
    stmt = rng.choice(_INSERTS)
    blocks = s.loop_blocks if stmt in ("break", "continue") else s.blocks
    if not blocks:
        return None
    b = rng.choice(blocks)
    b.insert(rng.randrange(len(b) + 1), ast.parse(stmt).body[0])
    return f"insert {stmt}"


def m_wrap_if(s, rng):
    b = rng.choice(s.blocks)
    i = rng.randrange(len(b))
    cond = rng.choice(["tid < 64", "tid == 0", "tid % 32 < 16", "tid > 1000"])
    b[i] = ast.If(ast.parse(cond, mode="eval").body, [b[i]], [])
    return f"wrap statement {i} in if {cond}"


def m_arity(s, rng):
    c = _pick(rng, [c for c in s.calls if c.args])
    if c is None:
        return None
    if rng.random() < 0.5:
        c.args.pop()
        return "drop the last argument"
    c.args.append(copy.deepcopy(rng.choice(c.args)))
    return "add an argument"


def m_constant_kind(s, rng):
    if not s.ints:
        return None
    c = rng.choice(s.ints)
    c.value = rng.choice([0.5, "4", None, True, (2, 2), 1e300])
    return f"constant -> {c.value!r}"


def m_hoist(s, rng):
    if not s.ops:
        return None
    node = rng.choice([o for o in s.ops if isinstance(o, ast.BinOp)] or [None])
    if node is None:
        return None
    node.op, node.right = ast.Add(), ast.Constant(0)
    return "operand + 0"


MUTATIONS = [m_delete, m_duplicate, m_swap_statements, m_dtype, m_int, m_int, m_slice,
             m_threads, m_keyword, m_swap_args, m_operator, m_name, m_insert, m_wrap_if,
             m_arity, m_constant_kind, m_hoist]


def _options(rng: random.Random) -> dict:
    r = rng.random()
    if r < 0.8:
        return {}
    pick = rng.choice(["maxnreg", "minctasm", "cluster_dim", "ftz", "maxntid", "bogus"])
    value = {"maxnreg": rng.choice([16, 64, 255, 256, 0, -1, "64"]),
             "minctasm": rng.choice([1, 2, 0, 100]),
             "cluster_dim": rng.choice([1, 2, (2, 1, 1), (3,), 0, (1, 1, 1, 1), 16]),
             "ftz": rng.choice([True, False, 1, "yes"]),
             "maxntid": rng.choice([128, 32, (64, 2), 0, 2048]),
             "bogus": 1}[pick]
    return {pick: value}


def make_mutant(seed: Seed, index: int, base: int):
    """``(source, kernel name, mutations, target, compile options)`` of mutant ``index`` of
    ``seed``: one to three mutations of one of its kernels."""
    rng = random.Random(f"{base}:{seed.name}:{index}")
    tree = generated_tree(index) if seed.tree is None else copy.deepcopy(seed.tree)
    fns = kernels_of(tree)
    fn = rng.choice([f for f in fns if f.name in seed.kernels] or fns)
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        what = rng.choice(MUTATIONS)(_Sites(fn), rng)
        if what is not None:
            done.append(what)
    r = rng.random()
    target = seed.target if r < 0.7 else rng.choice(TARGETS_GOOD if r < 0.93 else TARGETS_BAD)
    return (ast.unparse(ast.fix_missing_locations(tree)), fn.name, done, target,
            _options(rng))
