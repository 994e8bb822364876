"""The first hour at the command line (issue 25): ``tilewise layout`` takes its options
anywhere, ``-h``, shapes written either way, draws tiles in their shape and explains its
labels; ``tilewise run`` says how it compared, reports the errors of a mismatch and takes
``--rtol/--atol/--perf``; ``--help`` is plain text; ``explain`` names values as the user
did. In-process (tilewise.cli.main) except where the process matters."""

import pathlib
import re

import pytest

from tilewise.cli import build_parser, main
from tilewise.layout.cli import parse_shape

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "examples" / "tutorial"


def test_layout_takes_options_before_the_expression_and_h(capsys):
    assert main(["layout", "--shape", "64,1", "wgmma_accumulator_rows()"]) == 0
    assert "shape (64, 1)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["layout", "-h"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "usage: tilewise layout" in out and "--shape" in out and "EXPR" in out


@pytest.mark.parametrize("text", ["64,1", "(64, 1)", "[64,1]", "64x1", "64 1", " ( 64 ,1 ) "])
def test_shapes_written_either_way(text):
    assert parse_shape(text) == (64, 1)


def test_a_bad_shape_is_one_message(capsys):
    assert main(["layout", "S[(64, 1)]", "--shape", "(64, one)"]) == 2
    err = capsys.readouterr().err
    assert "--shape '(64, one)' is not a list of positive integers" in err
    assert "Traceback" not in err


def test_tiles_are_drawn_in_their_own_shape(capsys):
    assert main(["layout", "swizzled_tile(64, 64)"]) == 0
    out = capsys.readouterr().out
    assert "shape (64, 64)" in out and re.search(r"^63 ", out, re.M)
    assert "legend: a number = the element's memory offset, in elements (after the swizzle)" \
        in out
    assert main(["layout", "wgmma_accumulator(16)"]) == 0
    assert "shape (64, 16)" in capsys.readouterr().out
    assert main(["layout", "swizzled_tile(64, 64, stages=2)"]) == 0
    assert "the (2, 64, 64) tile is drawn as (128, 64)" in capsys.readouterr().out


def test_the_legend_reads_a_label_out_and_explains_the_star(capsys):
    assert main(["layout", "wgmma_accumulator_rows()"]) == 0
    out = capsys.readouterr().out
    assert "legend: w0:r1:t4 = warp 0, register 1, lane 4" in out
    assert "w = wid_in_wg: warp in its warpgroup" in out and "t = laneid: lane in the warp" in out
    assert "* = replicated: other threads hold the element too" in out


def test_top_level_help_is_plain_text():
    text = build_parser().format_help()
    assert "``" not in text and not re.search(r":(func|class|data|mod):", text)
    for cmd in ("demo", "compile", "explain", "run", "layout", "doctor"):
        assert f"    {cmd} " in text
    assert "docs/tutorial.md" in text


def test_run_states_how_it_compared(capsys):
    assert main(["run", str(ROOT / "examples" / "ldgsts_copy.py"), "--sim"]) == 0
    assert "OK, matches the reference bit for bit" in capsys.readouterr().out
    assert main(["run", str(TUTORIAL / "03_softmax.py"), "--sim"]) == 0
    assert "OK, matches the reference within rtol=3.8147e-06, atol=9.31323e-10" in \
        capsys.readouterr().out
    assert main(["run", str(TUTORIAL / "03_softmax.py"), "--sim", "--rtol", "0.001",
                 "--atol", "1e-6"]) == 0
    assert "within rtol=0.001, atol=1e-06" in capsys.readouterr().out


def test_a_mismatch_reports_the_errors_and_a_looser_tolerance_passes(capsys):
    gemm = str(TUTORIAL / "04_gemm.py")
    assert main(["run", gemm, "--sim", "--rtol", "0", "--atol", "0"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"MISMATCH \(compared within rtol=0, atol=0\): argument 3 \(C\): \d+ of "
                     r"32768 elements differ; the worst at \(\d+, \d+\): got [-\d.e]+, want "
                     r"[-\d.e]+; max abs error [\d.e-]+, max rel error [\d.e-]+", out), out


@pytest.mark.parametrize("value,why", [("-1", "is not a tolerance"), ("abc", "not a number")])
def test_a_bad_tolerance_is_a_usage_error(value, why, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", str(TUTORIAL / "01_vector_add.py"), "--rtol", value])
    assert stop.value.code == 2
    assert why in capsys.readouterr().err


def test_run_perf_prints_the_counters(capsys):
    assert main(["run", str(TUTORIAL / "02_transpose.py"), "--perf"]) == 0
    out = capsys.readouterr().out
    assert "on simulator (--perf asked for)" in out
    assert re.search(r"02_transpose.py:\d+:\d+  ld tile \(4 B/lane\): 2048 requests, 2048 "
                     r"wavefronts \(ideal 2048\): conflict-free", out)
    assert "32-byte sectors per warp request" in out


def test_explain_uses_the_users_names(capsys):
    assert main(["explain", str(TUTORIAL / "04_gemm.py")]) == 0
    out = capsys.readouterr().out
    assert "C[bm * 64:bm * 64 + 64, bn * 128:bn * 128 + 128]" in out
    assert "cta_id" not in out
