"""The parser's limits: how deep a kernel may nest, how much it may unroll. (The analyses
of index expressions the parser and the dispatcher share -- affine forms, constant
differences, known multiples -- are :mod:`tilewise.ir.analysis`'s.)"""

from __future__ import annotations

from ..errors import ScriptError
from ..ir.analysis import affine, const_difference, known_multiple

__all__ = ["MAX_COMPREHENSION", "MAX_DEPTH", "MAX_UNROLL", "affine", "check_depth",
           "check_source_depth", "check_unroll", "const_difference", "known_multiple"]

#: How deeply a kernel's IR may nest (expressions in statements in blocks). The passes and
#: the code generator walk the IR recursively, about three Python frames a level; 160
#: levels compile and simulate even below 300 frames of the caller's own (measured), where
#: ~350 levels exhausted Python's default recursion limit.
MAX_DEPTH = 160


#: Iterations of a loop unrolled while parsing (``T.static_range``, a Python sequence) and
#: elements of a compile-time comprehension: more would make the kernel (and the time to
#: build and compile it) grow without bound.
MAX_UNROLL = 4096
MAX_COMPREHENSION = 1 << 16


def check_unroll(p, values, node, most: int = MAX_UNROLL, what: str = "a loop unrolled "
                 "while parsing (T.static_range or a Python sequence)") -> None:
    """A ScriptError when ``values`` has more than ``most`` items."""
    try:
        n = len(values)
    except TypeError:
        return
    except OverflowError:  # a range of more than 2^63 items
        n = 1 << 63
    if n > most:
        raise p.error(f"{what} has {n} iterations; tilewise unrolls at most {most}",
                      "use range(...) for a loop the GPU runs (not unrolled), or fewer "
                      "iterations", node)


def check_source_depth(fdef, error) -> None:
    """The same limit on the Python syntax tree, checked before the parser's recursive walks
    (``error(message, hint, node)`` makes the ScriptError at a node)."""
    import ast

    stack, best, where = [(fdef, 1)], 0, fdef
    while stack:
        node, d = stack.pop()
        if d > best and hasattr(node, "lineno"):
            best, where = d, node
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    if best > MAX_DEPTH + 40:
        raise error(f"the kernel nests {best} levels deep here (expressions inside "
                    f"statements); tilewise compiles at most {MAX_DEPTH}",
                    "split the expression into several assignments (partial sums), or nest "
                    "fewer blocks", where)


def check_depth(func) -> None:
    """A ScriptError at the deepest place when ``func`` nests more than MAX_DEPTH levels (a
    long generated expression: ``sum`` of hundreds of terms, a chain of ``+``)."""
    from ..ir.visitor import deepest

    depth, span = deepest(func.body)
    if depth > MAX_DEPTH:
        raise ScriptError(f"the kernel nests {depth} levels deep here (expressions inside "
                          f"statements); tilewise compiles at most {MAX_DEPTH}", span,
                          "split the expression into several assignments (partial sums), "
                          "or nest fewer blocks")
