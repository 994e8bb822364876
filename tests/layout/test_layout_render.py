"""ASCII goldens for the seed layouts, SVG well-formedness, and the CLI."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tilewise.layout import (
    R,
    S,
    TCol,
    TileLayout,
    TLane,
    laneid,
    render_ascii,
    render_svg,
    tid_in_wg,
    warpid,
)
from tilewise.layout.cli import main

GOLDEN = Path(__file__).parent / "golden"
SEEDS = {
    "reg_tid_in_wg_128x8": TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)]),
    "tmem_128x8": TileLayout(S[(128, 8) : (1 @ TLane, 1 @ TCol)]),
    "smem_128x32": TileLayout(S[(128, 32)]),
}


@pytest.mark.parametrize("name", list(SEEDS))
def test_ascii_golden(name):
    want = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
    assert render_ascii(SEEDS[name]) == want


def test_ascii_small_tile_is_not_folded():
    text = render_ascii(TileLayout(S[(4, 2) : (1 @ laneid, 1)]))
    assert text.splitlines() == [
        "TileLayout(S[(4, 2) : (1@laneid, 1)])  shape (4, 2)",
        "       0     1",
        "0  t0:r0 t0:r1",
        "1  t1:r0 t1:r1",
        "2  t2:r0 t2:r1",
        "3  t3:r0 t3:r1",
    ]


def test_ascii_marks_replicas_and_reshapes():
    lay = TileLayout(S[(2, 2) : (1 @ laneid, 1)] + R[2 : 4 @ warpid])
    assert "t1:r1:w0*" in render_ascii(lay)
    assert "shape (1, 4)" in render_ascii(lay, shape=(1, 4))


def _cells(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [e for e in root.iter() if e.tag.endswith("rect") and e.get("class") == "cell"]


@pytest.mark.parametrize("name", list(SEEDS))
def test_svg_parses_with_one_cell_per_element(name):
    lay = SEEDS[name]
    cells = _cells(render_svg(lay))
    assert len(cells) == lay.size()
    assert lay._repr_svg_() == render_svg(lay)


def test_svg_colours_by_thread():
    lay = TileLayout(S[(4, 2) : (1 @ laneid, 1)])
    fills = [c.get("fill") for c in _cells(render_svg(lay))]
    assert fills[0] == fills[1] and fills[0] != fills[2]
    assert len(set(fills)) == 4
    svg = render_svg(lay, shape=(2, 4))
    assert len(_cells(svg)) == 8 and "colour = thread" in svg


def test_cli_prints_the_grid_and_writes_svg(tmp_path, capsys):
    out = tmp_path / "layout.svg"
    assert main(["S[(128, 8):(1@tid_in_wg, 1)]", "--svg", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(render_ascii(SEEDS["reg_tid_in_wg_128x8"]))
    assert len(_cells(out.read_text(encoding="utf-8"))) == 1024


def test_cli_shape_option(capsys):
    assert main(["S[(128, 8):(1@tid_in_wg, 1)]", "--shape", "64,16"]) == 0
    assert "shape (64, 16)" in capsys.readouterr().out


def test_cli_reports_layout_errors(capsys):
    assert main(["S[(128, 8):(1@tid_in_wgg, 1)]"]) == 2
    err = capsys.readouterr().err
    assert "layout error: unknown name 'tid_in_wgg'" in err
    assert "hint: did you mean 'tid_in_wg'" in err
    assert main(["S[(128, 8)]", "--shape", "12;8"]) == 2
    assert "--shape '12;8' is not a list of positive integers" in capsys.readouterr().err
    assert main(["S[(128, 8)]", "--shape", "64,8"]) == 2
    assert "has 512 elements but the layout has 1024" in capsys.readouterr().err


def test_cli_usage_error_returns_2(capsys):
    assert main([]) == 2
    assert "usage: tilewise layout" in capsys.readouterr().err


def test_svg_of_a_huge_layout_is_folded_in_bounded_time_and_size():
    import time

    from tilewise.layout.render import (SVG_HEAD_COLS, SVG_HEAD_ROWS, SVG_TAIL_COLS,
                                        SVG_TAIL_ROWS)

    t0 = time.process_time()  # CPU time: the bound holds however busy the machine is
    svg = render_svg(TileLayout(S[(4096, 4096)]))
    assert time.process_time() - t0 < 5 and len(svg) < 2_000_000
    cells = _cells(svg)
    assert len(cells) == (SVG_HEAD_ROWS + SVG_TAIL_ROWS) * (SVG_HEAD_COLS + SVG_TAIL_COLS)
    assert "(4095, 4095): 16777215" in svg and "(0, 0): 0" in svg
    assert svg.count('class="fold"') > 0 and "⋮" in svg and "…" in svg
    assert "shape (4096, 4096)" in svg


def test_svg_of_a_layout_with_a_trillion_elements():
    svg = render_svg(TileLayout(S[(1 << 20, 1 << 20) : (1 @ tid_in_wg, 1)]))
    assert "T1048575:r1048575" in svg and len(_cells(svg)) == 96 * 48
