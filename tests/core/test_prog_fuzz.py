"""Differential fuzz of whole programs: random kernels with loops, branches, while loops,
break/continue and loop-carried int32/float32 locals, written as source, must give what an
independent evaluator gives — in the simulator always, on the GPU when one is present."""

import numpy as np
import pytest

import prog_fuzz
from executors import run
from tilewise import from_source

SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program(executor, seed):
    src, args, (o, p) = prog_fuzz.make_case(seed)
    func = from_source(src, filename=f"fuzz{seed}.py")
    run(executor, func, args)
    assert np.array_equal(args[4], o), f"ints differ for seed {seed}:\n{src}"
    assert np.array_equal(args[5], p, equal_nan=True), f"floats differ for seed {seed}:\n{src}"


def test_the_generator_covers_the_constructs():
    text = "".join(prog_fuzz.make_case(s)[0] for s in SEEDS)
    for construct in ("while ", "break", "continue", "for ", "if ", "else:", "T.cast(",
                      "<<", "//", "T.min("):
        assert construct in text, construct
