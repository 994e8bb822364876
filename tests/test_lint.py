"""The code base stays lint-clean (ruff, rules in pyproject.toml): unused imports, undefined
names, bare excepts, over-long lines and likely bugs fail the suite, not a review."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests",
                          "examples", "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert "No module named ruff" not in out.stderr, "install the test extras: pip install -e .[test]"
    assert out.returncode == 0, out.stdout + out.stderr
