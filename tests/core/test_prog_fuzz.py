"""Differential fuzz of whole programs: random kernels with loops, branches, while loops,
break/continue and loop-carried int32/float32 locals, written as source, must give what an
independent evaluator gives — in the simulator always, on the GPU when one is present."""

import numpy as np
import pytest

import prog_fuzz
from tilewise import from_source
from tilewise.sim import simulate

SIM_SEEDS = range(40)
GPU_SEEDS = range(40)


def _check(seed, run):
    src, args, (o, p) = prog_fuzz.make_case(seed)
    func = from_source(src, filename=f"fuzz{seed}.py")
    run(func, args)
    assert np.array_equal(args[4], o), f"ints differ for seed {seed}:\n{src}"
    assert np.array_equal(args[5], p, equal_nan=True), f"floats differ for seed {seed}:\n{src}"


@pytest.mark.parametrize("seed", SIM_SEEDS)
def test_random_program_in_the_simulator(seed):
    _check(seed, lambda f, a: simulate(f, *a, target="sm_90a"))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", GPU_SEEDS)
def test_random_program_on_the_gpu(seed):
    from tilewise.runner import _run_gpu
    from tilewise.runtime import device_target

    _check(seed, lambda f, a: _run_gpu(f, a, str(device_target())))


def test_the_generator_covers_the_constructs():
    text = "".join(prog_fuzz.make_case(s)[0] for s in SIM_SEEDS)
    for construct in ("while ", "break", "continue", "for ", "if ", "else:", "T.cast(",
                      "<<", "//", "T.min("):
        assert construct in text, construct
