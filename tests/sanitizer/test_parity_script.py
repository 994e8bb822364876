"""The CPU side of scripts/sanitizer-parity (its GPU side runs on the H200): the verdicts it
reads from compute-sanitizer's output, the simulator column, and a clear refusal when
compute-sanitizer is missing."""

import importlib.machinery
import pathlib
import types

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "sanitizer-parity"


@pytest.fixture(scope="module")
def parity():
    loader = importlib.machinery.SourceFileLoader("sanitizer_parity", str(SCRIPT))
    mod = types.ModuleType(loader.name)
    mod.__file__ = str(SCRIPT)
    loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("rc, text, verdict", [
    (99, "========= Invalid __global__ write of size 4 bytes\n"
         "========= ERROR SUMMARY: 1 error\n", "yes (1 error(s))"),
    (0, "========= ERROR SUMMARY: 0 errors\n", "no"),
    (99, "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n",
     "yes (1 error(s), 1 warning(s))"),
    (0, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", "no"),
    (None, "", "hang (killed)"),
    (1, "RuntimeError: CUDA error\n========= ERROR SUMMARY: 0 errors\n",
     "no (the program failed, exit 1)"),
])
def test_verdicts_read_from_the_tools_output(parity, rc, text, verdict):
    assert parity._verdict(rc, text) == verdict


def test_the_simulator_column(parity):
    from planted import PLANTED

    for case in PLANTED:
        v = parity.simulator_verdict(case)
        assert v.startswith("yes: ") if case.sim else v == "no", case.name


def test_missing_compute_sanitizer_is_a_clear_refusal(parity, monkeypatch, capsys):
    monkeypatch.setattr(parity, "_sanitizer", lambda: None)
    assert parity.main([]) == 2
    assert "compute-sanitizer not found" in capsys.readouterr().err
