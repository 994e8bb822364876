"""The suite's own sampling (tests/sampling.py, tests/conftest.py): by default a fixed
quarter of each test's slow cases runs, at least one; --run-slow, TILEWISE_TESTS=all,
-m slow and naming a case run them."""

import pathlib

import pytest

from sampling import SLOW_SAMPLE, examples, slow_sample

pytest_plugins = ["pytester"]
HERE = pathlib.Path(__file__).parent


def test_a_quarter_of_each_tests_slow_cases_at_least_one():
    ids = [f"t.py::test_a[{i}]" for i in range(10)] + ["t.py::test_b[0]", "t.py::test_c"]
    keep = slow_sample(ids)
    assert len([k for k in keep if "test_a" in k]) == -(-10 // SLOW_SAMPLE) == 3
    assert "t.py::test_b[0]" in keep and "t.py::test_c" in keep
    assert slow_sample(list(reversed(ids))) == keep  # the order of collection is no matter


def test_a_group_is_sampled_as_one_test():
    """slow(group=...) pools single-case tests of one kind: a quarter of the pool runs."""
    ids = {f"t.py::test_{i}": "heavy" for i in range(8)}
    ids.update({"t.py::test_alone": None, "t.py::test_p[0]": None, "t.py::test_p[1]": None})
    keep = slow_sample(ids)
    assert len([k for k in keep if ids[k] == "heavy"]) == 8 // SLOW_SAMPLE
    assert "t.py::test_alone" in keep and len([k for k in keep if "test_p" in k]) == 1
    assert slow_sample(dict(reversed(ids.items()))) == keep


def test_a_new_case_moves_at_most_one_other():
    ids = [f"t.py::test_a[{i}]" for i in range(12)]
    before = slow_sample(ids)
    after = slow_sample(ids + ["t.py::test_a[new]"])
    assert len(before - after) <= 1


def test_hypothesis_examples_are_a_third_by_default(monkeypatch):
    import sampling

    monkeypatch.setattr(sampling, "RUN_SLOW", False)
    assert (examples(150), examples(12)) == (50, 10)
    monkeypatch.setattr(sampling, "RUN_SLOW", True)
    assert examples(150) == 150


@pytest.fixture
def suite_copy(pytester):
    """A small suite under this conftest: 8 slow cases and one that is not."""
    pytester.makeconftest((HERE / "conftest.py").read_text())
    pytester.makepyfile(sampling=(HERE / "sampling.py").read_text())
    pytester.makepyfile(test_cases="""
        import pytest

        @pytest.mark.parametrize("i", [0, *(pytest.param(i, marks=pytest.mark.slow)
                                          for i in range(1, 9))])
        def test_case(i, run_slow):
            assert run_slow in (True, False)
        """)
    return pytester


def test_the_hooks_sample_and_the_switches_run_all(suite_copy, monkeypatch):
    import sampling

    monkeypatch.setattr(sampling, "RUN_SLOW", sampling.RUN_SLOW)  # the inner runs set it
    monkeypatch.delenv("TILEWISE_TESTS", raising=False)
    suite_copy.runpytest_inprocess().assert_outcomes(passed=3, deselected=6)
    suite_copy.runpytest_inprocess("-m", "slow").assert_outcomes(passed=8, deselected=1)
    suite_copy.runpytest_inprocess("test_cases.py::test_case[5]").assert_outcomes(passed=1)
    monkeypatch.setenv("TILEWISE_TESTS", "all")  # what CI sets; --run-slow is its default
    suite_copy.runpytest_inprocess().assert_outcomes(passed=9)


def test_the_summary_names_the_unmarked_tests_that_used_much_cpu(suite_copy, monkeypatch):
    import sampling

    monkeypatch.setattr(sampling, "RUN_SLOW", sampling.RUN_SLOW)
    monkeypatch.setenv("TILEWISE_TESTS", "all")
    text = (HERE / "conftest.py").read_text()
    assert "LONG_CALL_CPU_S = 3.0" in text
    suite_copy.makeconftest(text.replace("LONG_CALL_CPU_S = 3.0", "LONG_CALL_CPU_S = -1.0"))
    result = suite_copy.runpytest_inprocess()
    result.stdout.fnmatch_lines(["*1 test(s) not marked slow used over*",
                                 "* s  test_cases.py::test_case[[]0[]]"])
