"""tilewise.autotune without a GPU: the key, the disk cache (a second process reuses the
winner without timing), parallel compilation in worker processes, the TILEWISE_AUTOTUNE
knob, the simulator's heuristic configuration, failing candidates, the progress line.
The GPU timing path is tests/gpu/test_autotune_gpu.py."""

import functools
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilewise
import tilewise as tw
from tilewise import compile_pool
from tilewise.errors import CompileError, TilewiseError
from tilewise.knobs import override

sys.path.insert(0, os.path.dirname(__file__))
import tune_kernels as K  # noqa: E402

at_mod = importlib.import_module("tilewise.autotune")  # tilewise.autotune is the function
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")


class FakeTimer:
    """Seconds by the kernel's threads: 256 threads is the fastest."""

    def __init__(self):
        self.calls = []

    def __call__(self, kernel, args):
        threads = kernel.launch_config.block
        self.calls.append(threads)
        return {64: 3e-6, 128: 2e-6, 256: 1e-6}.get(threads, 5e-6)


CONFIGS = [{"threads": 128}, {"threads": 256}, {"threads": 64}]


@pytest.fixture
def cache(tmp_path):
    with override(cache_dir=str(tmp_path), cache_enabled=True, autotune=True):
        yield tmp_path


def _arrays(n=256):
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    return a, np.full(n, np.nan, np.float32)


def _tuned(timer=None, configs=CONFIGS, n=256, **kw):
    return tilewise.autotune(functools.partial(K.make_scale, n), configs=configs,
                             timer=timer, target="sm_90a", device="test-device", **kw)


def test_the_default_key_is_shapes_dtypes_and_scalars():
    a = np.zeros((4, 3), np.float16)
    assert at_mod.default_key(a, 7) == (((4, 3), "float16"), ("int", 7))
    assert at_mod.default_key(a) != at_mod.default_key(np.zeros((4, 4), np.float16))


def test_the_fastest_candidate_wins_and_the_report_lists_all(cache):
    timer = FakeTimer()
    k = _tuned(timer)
    a, b = _arrays()
    assert k.select(a, b) == {"threads": 256}
    assert sorted(timer.calls) == [64, 128, 256]
    report = k.report()
    assert "* threads=256" in report and "1.00 us" in report and "tuned in" in report
    assert k.compiled(a, b).launch_config.block == 256
    k.select(a, b)  # the same key again: nothing timed
    assert len(timer.calls) == 3


def test_a_near_tie_keeps_the_first_heuristic_config(cache):
    """Another config wins only when it beats the first by more than KEEP_FIRST_WITHIN: a
    near tie is the timer's noise, and the heuristic stays."""
    gap = at_mod.KEEP_FIRST_WITHIN

    def timer_for(t256):
        return lambda kernel, args: {128: 1e-6, 256: t256}.get(kernel.launch_config.block,
                                                                 5e-6)

    a, b = _arrays()
    configs = [{"threads": 128}, {"threads": 256}]
    near = _tuned(timer_for(1e-6 / (1 + gap / 2)), configs=configs)
    assert near.select(a, b) == {"threads": 128}
    far = _tuned(timer_for(1e-6 / (1 + 2 * gap)), configs=configs, n=512)
    assert far.select(*_arrays(512)) == {"threads": 256}


class SamplingTimer:
    """A timer with CudaTimer's prepare / sample steps: a clock that speeds up as it is
    used (each sample 10 % faster than the one before), by threads as FakeTimer; 64
    threads fail to launch."""

    reps = 4

    def __init__(self):
        self.order, self.n = [], 0

    def prepare(self, kernel, args):
        if kernel.launch_config.block == 64:
            raise TilewiseError("no launch at 64 threads")

    def sample(self, kernel, args):
        threads = kernel.launch_config.block
        self.order.append(threads)
        self.n += 1
        return {128: 1.0e-6, 256: 0.9e-6}[threads] * 0.9 ** self.n


def test_the_candidates_samples_are_interleaved_against_drift(cache):
    """With a timer that samples one launch at a time, the tuner warms every candidate and
    then takes sample r of each before sample r + 1 of any, so that a clock speeding up
    during tuning falls on all of them (one after the other, the first in line, the
    heuristic, would take all its samples on the slowest clock). A candidate that fails
    to launch is dropped with its reason."""
    timer = SamplingTimer()
    k = _tuned(timer, configs=[{"threads": 128}, {"threads": 256}, {"threads": 64}])
    a, b = _arrays()
    assert k.select(a, b) == {"threads": 256}
    assert timer.order == [128, 256] * SamplingTimer.reps
    assert "no launch at 64 threads" in k.report()


def test_a_second_process_reuses_the_winner_from_disk(cache):
    k = _tuned(FakeTimer())
    a, b = _arrays()
    assert k.select(a, b) == {"threads": 256}
    script = textwrap.dedent(f"""
        import functools, sys, time
        sys.path.insert(0, {HERE!r})
        import numpy as np
        import tilewise, tune_kernels as K
        def timer(kernel, args):
            raise AssertionError("the second process timed a candidate")
        a = np.zeros(256, np.float32); b = np.zeros(256, np.float32)
        t = time.perf_counter()
        k = tilewise.autotune(functools.partial(K.make_scale, 256), configs={CONFIGS!r},
                              timer=timer, target="sm_90a", device="test-device")
        c = k.select(a, b)
        kernel = k.compiled(a, b)
        print(c["threads"], kernel.launch_config.block, len(kernel.cubin) > 0,
              f"{{time.perf_counter() - t:.3f}}")
    """)
    env = dict(os.environ, TILEWISE_CACHE_DIR=str(cache), PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    threads, block, has_cubin, secs = out.stdout.split()
    assert (threads, block, has_cubin) == ("256", "256", "True")
    assert float(secs) < 2.0  # a lookup and an unpickle; no lowering, no LLVM, no timing


def test_candidates_compile_in_worker_processes(cache, monkeypatch):
    """The factory is rebuilt from its module's file in the workers: compile_one in this
    process is never called."""
    def here(*a, **k):
        raise AssertionError("compiled in the parent process")

    monkeypatch.setattr(compile_pool, "compile_one", here)
    built = compile_pool.compile_all(functools.partial(K.make_scale, 128), CONFIGS, "sm_90a")
    assert [b.reason for b in built] == [None, None, None]
    import pickle

    blocks = [pickle.loads(b.blob).launch_config.block for b in built]
    assert blocks == [128, 256, 64] and all(pickle.loads(b.blob).cubin for b in built)


def test_a_factory_without_a_recipe_compiles_here(cache):
    factory = lambda threads: K.make_scale(128, threads=threads)  # noqa: E731
    assert compile_pool.Recipe.of(factory) is None
    built = compile_pool.compile_all(factory, [{"threads": 32}, {"threads": 64}], "sm_90a")
    assert [b.reason for b in built] == [None, None]


def test_a_failing_candidate_is_dropped_with_its_reason(cache):
    configs = [{"threads": 128}, {"threads": 256, "smem": 300 * 1024}, {"threads": 64}]
    k = _tuned(FakeTimer(), configs)
    a, b = _arrays()
    assert k.select(a, b) == {"threads": 128}  # 256 would win, but it cannot compile
    report = k.report()
    assert "failed:" in report and "shared memory" in report


def test_every_candidate_failing_is_an_error_naming_each(cache):
    configs = [{"threads": 128, "smem": 300 * 1024}, {"threads": 64, "smem": 300 * 1024}]
    k = _tuned(FakeTimer(), configs)
    with pytest.raises(CompileError, match="every config of make_scale failed") as e:
        k.select(*_arrays())
    assert str(e.value).count("shared memory") == 2


def test_the_knob_skips_tuning(cache):
    timer = FakeTimer()
    k = _tuned(timer)
    with override(autotune=False):
        assert k.select(*_arrays()) == {"threads": 128}
        assert k.compiled(*_arrays()).launch_config.block == 128
    assert timer.calls == []
    _tuned(FakeTimer()).select(*_arrays())  # tuned: 256 threads win, kept on disk
    with override(autotune=False):  # ... and still not used with the knob off
        assert _tuned(timer).compiled(*_arrays()).launch_config.block == 128


def test_without_a_gpu_or_a_timer_the_heuristic_config_runs(cache):
    from tilewise.runtime import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    assert _tuned(None).select(*_arrays()) == {"threads": 128}


def test_simulate_and_compile_take_the_heuristic_config(cache):
    configs = [{"scale": 3.0}, {"scale": 5.0}]
    timer = FakeTimer()
    k = _tuned(timer, configs)
    a, b = _arrays()
    tw.simulate(k, a, b)
    assert np.array_equal(b, a * np.float32(3.0))
    assert tw.compile(k, "sm_90a").func is k.heuristic()
    assert k.name == "scale_kernel" and "scale_kernel" in k.script()
    assert timer.calls == []


def test_the_decorator_form(cache):
    timer = FakeTimer()
    deco = tilewise.autotune(configs=lambda n: [{"threads": 64}, {"threads": 256}],
                             timer=timer, target="sm_90a", device="test-device")
    make = deco(K.make_scale)
    k = make(256)
    assert k.select(*_arrays()) == {"threads": 256}


def test_a_progress_line_when_tuning_is_slow(cache, monkeypatch, capsys):
    monkeypatch.setattr(at_mod, "PROGRESS_AFTER", 0.0)
    _tuned(FakeTimer()).select(*_arrays())
    err = capsys.readouterr().err
    assert "tilewise.autotune: tuning make_scale (3 configs)" in err
    assert "threads=256 in 1.0 us" in err


def test_arrays_written_in_place_are_restored_between_candidates(cache):
    seen = []

    def timer(kernel, args):
        seen.append(args[0].copy())
        args[0][:] = -1  # an in-place kernel would leave this behind
        return 1e-6

    a, b = _arrays()
    orig = a.copy()
    _tuned(timer, restore=(0,)).select(a, b)
    assert all(np.array_equal(s, orig) for s in seen) and np.array_equal(a, orig)


def test_configs_must_be_dicts():
    with pytest.raises(TilewiseError, match="non-empty list of configs"):
        tilewise.autotune(K.make_scale, configs=[])
    with pytest.raises(TilewiseError, match="non-empty list of configs"):
        tilewise.autotune(K.make_scale, configs=[("threads", 1)])


def test_candidates_compile_once_per_factory_and_config(cache, monkeypatch):
    """A second key (other arrays) of the same factory times the candidates compiled for the
    first; precompile() compiles the candidates of many tuned kernels in one batch."""
    calls = []
    real = compile_pool.compile_many

    def counting(jobs, target):
        calls.append(len(jobs))
        return real(jobs, target)

    monkeypatch.setattr(compile_pool, "compile_many", counting)
    configs = [{"threads": 32, "scale": 4.0}, {"threads": 256, "scale": 4.0}]
    k = _tuned(FakeTimer(), configs, n=96)
    other = _tuned(FakeTimer(), configs + [{"threads": 64, "scale": 4.0}], n=96)
    tilewise.autotune.precompile(k, other)
    assert calls == [3]  # two candidates shared, one more: a single batch of three
    k.select(*_arrays(96))
    k.select(np.zeros(96, np.float32), np.zeros(96, np.float32), 1)  # another key
    assert calls == [3] and len(k.results) == 2


def test_wrap_launches_candidates_that_need_more_than_the_users_arguments(cache):
    """wrap(config, kernel): what times and launches a candidate (a stream-K GEMM's
    workspace keeper); None from it leaves the kernel as it is."""
    class Keeper:
        def __init__(self, config, kernel):
            self.config, self.kernel = config, kernel

        @property
        def launch_config(self):  # what FakeTimer reads, seen through the wrapper
            return self.kernel.launch_config

    wrapped = []

    def wrap(config, kernel):
        if config["threads"] == 64:
            return None
        wrapped.append(config["threads"])
        return Keeper(config, kernel)

    timer = FakeTimer()
    k = _tuned(timer, wrap=wrap)
    a, b = _arrays()
    assert k.select(a, b) == {"threads": 256} and sorted(timer.calls) == [64, 128, 256]
    assert sorted(wrapped) == [128, 256]  # timed through the wrapper; 64 as it is
    run = k.compiled(a, b)
    assert isinstance(run, Keeper) and run.config == {"threads": 256}
