"""benchmarks/timing.py: several implementations of one problem are timed interleaved
(sample r of each, in a rotating order, before sample r + 1 of any), so a clock that
drifts during the run falls on all of them alike. A fake torch whose clock is the only
thing that advances stands in for the GPU."""

import importlib.util
import pathlib
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _timing():
    spec = importlib.util.spec_from_file_location("timing", ROOT / "benchmarks" / "timing.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Clock:
    """A fake torch.cuda: events read a clock that the kernels advance."""

    def __init__(self):
        self.now = 0.0
        clock = self

        class Event:
            def __init__(self, enable_timing):
                assert enable_timing

            def record(self):
                self.at = clock.now

            def synchronize(self):
                pass

            def elapsed_time(self, end):  # milliseconds, as torch's
                return end.at - self.at

        self.cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None)


def test_samples_are_interleaved_in_a_rotating_order():
    timing = _timing()
    torch = _Clock()
    calls = []

    def kernel(name, ms):
        def run():
            calls.append(name)
            torch.now += ms
        return run

    got = timing.timed_all(torch, {"a": kernel("a", 1.0), "b": kernel("b", 2.0),
                                   "c": kernel("c", 4.0)}, reps=1, samples=3, warmup=1)
    assert got == {"a": 1e-3, "b": 2e-3, "c": 4e-3}
    assert calls[:3] == ["a", "b", "c"]  # the warm-ups, one each
    assert calls[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_a_slowing_clock_falls_on_every_implementation_alike():
    """Each call takes longer than the last (a chip heating up). Timed one after another,
    the first of two identical kernels would read faster; interleaved, both read the same."""
    timing = _timing()
    torch = _Clock()
    state = {"ms": 1.0}

    def run():
        torch.now += state["ms"]
        state["ms"] *= 1.01

    got = timing.timed_all(torch, {"first": run, "second": run}, reps=2, samples=6, warmup=0)
    assert abs(got["first"] / got["second"] - 1) < 0.015
    state["ms"] = 1.0
    one = timing.timed(torch, run, reps=2, samples=6, warmup=0)
    two = timing.timed(torch, run, reps=2, samples=6, warmup=0)
    assert two / one > 1.1  # one after another, the second reads slower


def test_the_tuners_timer_heats_each_candidate_before_its_samples(monkeypatch):
    """tilewise.runtime.timer.CudaTimer.prepare: the warm-up launches, then more, back to
    back, until heat_s seconds have passed since it began (so the samples run at the
    clock a tensor-bound kernel settles at); heat_s=0 leaves the warm-ups alone. A fake
    driver and clock: each launch takes 1 ms."""
    from tilewise.runtime import device
    from tilewise.runtime import timer as T

    clock = {"now": 0.0}
    syncs = []

    class Driver:
        class CUresult:
            CUDA_SUCCESS = 0

        @staticmethod
        def CUstream(raw):
            return raw

        @staticmethod
        def cuMemAlloc(n):
            return (0, 1234)

        @staticmethod
        def cuEventCreate(flags):
            return (0, object())

        @staticmethod
        def cuStreamSynchronize(s):
            syncs.append(clock["now"])
            return (0,)

    monkeypatch.setattr(device, "_driver", lambda: Driver)
    monkeypatch.setattr(device, "make_current", lambda ordinal=0: None)
    monkeypatch.setattr(T, "time", types.SimpleNamespace(perf_counter=lambda: clock["now"]))
    launches = []

    def kernel(*args, stream):
        launches.append(stream)
        clock["now"] += 1e-3

    hot, cold = T.CudaTimer(warmup=3, heat_s=0.05), T.CudaTimer(warmup=3, heat_s=0.0)
    hot.prepare(kernel, (), stream=7)
    assert launches == [7] * 51  # 3 warm-ups, then batches of 4 until 50 ms had passed
    assert syncs[-1] >= 0.05 and len(syncs) == 1 + 12  # after the warm-ups, each batch
    launches.clear()
    cold.prepare(kernel, (), stream=7)
    assert len(launches) == 3
    assert T.CudaTimer().heat_s == T.HEAT_S > 0
    hot._flush = cold._flush = None  # nothing of the fake driver's to free later
