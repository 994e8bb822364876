"""The simulator's column of the sanitizer-parity table (docs/simulator.md): each planted
bug of planted.py is reported with its message at its ``# BUG`` line, naming the CTA, warp,
lane and address (the arrays a GPU run allocates fresh are ``outputs=`` of the simulation)."""

import pathlib
import sys

import numpy as np
import pytest

import tilewise as tw

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from planted import PLANTED  # noqa: E402

FILE = str(pathlib.Path(__file__).parent / "planted.py")


def host_args(case):
    out = []
    for (n, dtype, fill), shape in zip(case.args, case.shapes):
        a = np.arange(n) if fill == "arange" else np.zeros(n)
        out.append(a.astype(dtype).reshape(shape))
    return out


def bug_line(case) -> int:
    name = case.kernel.name
    lines = pathlib.Path(FILE).read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"def {name}("))
    return next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("# BUG")) + 1


@pytest.mark.parametrize("case", [c for c in PLANTED if c.sim], ids=lambda c: c.name)
def test_the_simulator_reports_the_planted_bug(case):
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(case.kernel, *host_args(case), target=case.target, outputs=case.outputs)
    err = info.value
    text = str(err)
    for part in case.sim:
        assert part in text, text
    assert err.span.file == FILE and err.span.line == bug_line(case), text
    for where in ("CTA (", "warp ", "lane ", "address " if "bar.sync" not in text else ""):
        assert where in text, text  # a barrier has no address


def test_the_simulator_misses_no_planted_bug():
    # the one it could not see, a read of a fresh allocation, it sees with outputs=
    assert all(case.sim for case in PLANTED)


def test_non_strict_mode_records_every_planted_bug():
    for case in PLANTED:
        if case.sim and not case.hangs:
            report = tw.simulate(case.kernel, *host_args(case), target=case.target,
                                 strict=False, outputs=case.outputs)
            assert report.hazards and case.sim[0] in str(report.hazards[0]), case.name
