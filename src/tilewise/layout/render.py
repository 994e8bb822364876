"""Pictures of layouts: which thread / register, lane / column or address holds each
element of the logical tile.

A cell's label joins one short part per axis with ``:``: ``T5:r2`` is thread 5 of the
warpgroup (``tid_in_wg``), register element 2; ``L3:C1`` is tensor-memory lane 3, column
1; a plain number is a memory offset. Replicated elements get a trailing ``*`` (the
label shows the first holder). Tiles of more than two dimensions are drawn with the last
dimension as columns and the others folded into rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
import numpy as np

from tilewise.layout.axes import check_shape
from tilewise.layout.layout import TileLayout

# Short label prefix per axis; ``m`` is "r" (register) in a view that has threads.
PREFIX = {
    "laneid": "t",
    "warpid": "w",
    "wid_in_wg": "w",
    "tid_in_wg": "T",
    "tx": "T",
    "wgid": "g",
    "bx": "bx",
    "by": "by",
    "bz": "bz",
    "cbx": "cbx",
    "cby": "cby",
    "cbz": "cbz",
    "TLane": "L",
    "TCol": "C",
}
MAX_ROWS, HEAD_ROWS, TAIL_ROWS = 16, 8, 4
MAX_COLS, HEAD_COLS, TAIL_COLS = 16, 8, 4
# The SVG picture folds larger tiles the same way: at most 128 rows and 64 columns are
# drawn (about 8 000 cells, ~1.5 MB), whatever the layout's size.
SVG_MAX_ROWS, SVG_HEAD_ROWS, SVG_TAIL_ROWS = 128, 64, 32
SVG_MAX_COLS, SVG_HEAD_COLS, SVG_TAIL_COLS = 64, 32, 16
CELL_W, CELL_H, MARGIN = 44, 18, 40


def escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities (what xml.sax.saxutils.escape does, without
    importing it: it pulls in urllib and http, 25 ms of every tilewise start)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

def _grid(layout: TileLayout, shape: Sequence[int] | None) -> tuple[int, int]:
    dims = layout.picture_shape if shape is None else check_shape(shape, layout.size())
    if len(dims) == 0:
        return 1, 1
    return math.prod(dims[:-1]), dims[-1]


def _labeller(layout: TileLayout):
    """A function from the places of some elements to their labels."""
    names = [a.name for a in layout.axes()]
    has_exec = any(a.is_execution for a in layout.axes())
    star = "*" if math.prod(it.extent for it in layout.replica) > 1 else ""

    def part(name: str, value: int) -> str:
        if name == "m":
            return f"r{value}" if has_exec else str(value)
        return f"{PREFIX.get(name, name)}{value}"

    def labels(places: dict[str, np.ndarray], n: int) -> list[str]:
        return [":".join(part(k, int(places[k][i])) for k in names) + star for i in range(n)]

    return labels


def _labels(
    layout: TileLayout, rows: Sequence[int], cols: Sequence[int], ncols: int
) -> list[list[str]]:
    lin = np.array([r * ncols + c for r in rows for c in cols], dtype=np.int64)
    flat = _labeller(layout)(layout.apply_np(lin), len(lin))
    return [flat[i * len(cols) : (i + 1) * len(cols)] for i in range(len(rows))]


def _visible(n: int, limit: int, head: int, tail: int) -> list[int | None]:
    """Indices to draw, ``None`` marking the fold."""
    if n <= limit:
        return list(range(n))
    return [*range(head), None, *range(n - tail, n)]


def render_ascii(layout: TileLayout, shape: Sequence[int] | None = None) -> str:
    """A text grid, one cell per logical element; large tiles show their first and last
    rows / columns around a ``⋮`` / ``…`` fold."""
    nrows, ncols = _grid(layout, shape)
    rows = _visible(nrows, MAX_ROWS, HEAD_ROWS, TAIL_ROWS)
    cols = _visible(ncols, MAX_COLS, HEAD_COLS, TAIL_COLS)
    real_r = [r for r in rows if r is not None]
    real_c = [c for c in cols if c is not None]
    table = dict(zip(real_r, _labels(layout, real_r, real_c, ncols)))
    width = max(len(x) for row in table.values() for x in [*row, str(ncols - 1)])
    rw = len(str(nrows - 1))

    def line(head: str, cells: list[str]) -> str:
        return (head.rjust(rw) + "  " + " ".join(c.rjust(width) for c in cells)).rstrip()

    dims = layout.picture_shape if shape is None else tuple(shape)
    out = [f"{layout!r}  shape {tuple(dims)}"]
    out.append(line("", ["…" if c is None else str(c) for c in cols]))
    for r in rows:
        if r is None:
            out.append(line("⋮", ["⋮"] * len(cols)))
            continue
        cells = iter(table[r])
        out.append(line(str(r), ["…" if c is None else next(cells) for c in cols]))
    return "\n".join(out) + "\n"


# What each label part means, for the legend under a picture: (noun, axis spelled out).
MEANING = {
    "laneid": ("lane", "laneid: lane in the warp"),
    "warpid": ("warp", "warpid: warp in the CTA"),
    "wid_in_wg": ("warp", "wid_in_wg: warp in its warpgroup"),
    "tid_in_wg": ("thread", "tid_in_wg: thread in its warpgroup"),
    "tx": ("thread", "tx: thread in the CTA"),
    "wgid": ("warpgroup", "wgid: warpgroup in the CTA"),
    "TLane": ("lane", "TLane: tensor-memory lane"),
    "TCol": ("column", "TCol: tensor-memory column"),
    "bx": ("CTA x", "bx"), "by": ("CTA y", "by"), "bz": ("CTA z", "bz"),
    "cbx": ("cluster CTA x", "cbx"), "cby": ("cluster CTA y", "cby"),
    "cbz": ("cluster CTA z", "cbz"),
}
REGISTER = ("register", "m: index in the thread's local array")


def legend(layout: TileLayout, shape: Sequence[int] | None = None) -> str:
    """What the labels of :func:`render_ascii`'s picture mean (an example label read out,
    each part's axis), the ``*`` of a replicated element, and how a tile of more than two
    dimensions is folded."""
    names = [a.name for a in layout.axes()]
    has_exec = any(a.is_execution for a in layout.axes())
    lines = []
    if has_exec or any(n != "m" for n in names):
        parts = [REGISTER if n == "m" else MEANING.get(n, (n, n)) for n in names]
        prefixes = ["r" if n == "m" else PREFIX.get(n, n) for n in names]
        values = [0, 1, 4, 2, 3, 5, 6, 7][:len(names)]
        label = ":".join(f"{p}{v}" for p, v in zip(prefixes, values))
        read = ", ".join(f"{noun} {v}" for (noun, _), v in zip(parts, values))
        lines.append(f"{label} = {read}")
        lines += [f"  {p} = {axis}" for p, (_, axis) in zip(prefixes, parts)]
    else:
        lines.append("a number = the element's memory offset, in elements"
                     + (" (after the swizzle)" if layout.swizzling else ""))
    if math.prod(it.extent for it in layout.replica) > 1:
        lines.append("* = replicated: other threads hold the element too (the R[...] part); "
                     "the label names the first of them")
    dims = layout.picture_shape if shape is None else tuple(shape)
    if len(dims) > 2:
        lines.append(f"the {tuple(dims)} tile is drawn as ({math.prod(dims[:-1])}, "
                     f"{dims[-1]}): rows fold every dimension but the last (--shape R,C "
                     "views it as R x C)")
    return "legend: " + "\n        ".join(lines) + "\n"


def _colour_keys(
    layout: TileLayout, places: dict[str, np.ndarray]
) -> tuple[np.ndarray, str, list[str]]:
    """Per element, the index of the thing that gives it its colour, what that thing is,
    and each thing's legend text."""
    exec_axes = [a.name for a in layout.axes() if a.is_execution]
    if exec_axes:
        names, what = exec_axes, "thread"
    elif "TLane" in places:
        names, what = ["TLane"], "tensor-memory lane"
    else:  # memory only: groups of 8 consecutive offsets
        n = len(next(iter(places.values()))) if places else 0
        m = places.get("m", np.zeros(n, np.int64))
        uniq, inverse = np.unique(m // 8, return_inverse=True)
        return (
            inverse.reshape(-1),
            "memory offset // 8",
            [f"m {8 * int(g)}..{8 * int(g) + 7}" for g in uniq],
        )
    stacked = np.stack([places[a] for a in names], axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    texts = [":".join(f"{PREFIX.get(a, a)}{int(v)}" for a, v in zip(names, row)) for row in uniq]
    return inverse.reshape(-1), what, texts


def _fill(k: int) -> str:
    return f"hsl({(k * 137.508) % 360:.1f}, 65%, 72%)"


def render_svg(layout: TileLayout, shape: Sequence[int] | None = None) -> str:
    """An SVG picture: one ``<rect class="cell">`` per element, coloured by thread (or by
    TMEM lane, or by groups of 8 memory offsets), with a legend of colours. A tile of more
    than SVG_MAX_ROWS rows or SVG_MAX_COLS columns shows its first and last ones around a
    ``⋮`` / ``…`` fold, as the ASCII view does, so time and size stay bounded."""
    nrows, ncols = _grid(layout, shape)
    rows = _visible(nrows, SVG_MAX_ROWS, SVG_HEAD_ROWS, SVG_TAIL_ROWS)
    cols = _visible(ncols, SVG_MAX_COLS, SVG_HEAD_COLS, SVG_TAIL_COLS)
    real_r = [r for r in rows if r is not None]
    real_c = [c for c in cols if c is not None]
    lin = np.array([r * ncols + c for r in real_r for c in real_c], dtype=np.int64)
    places = layout.apply_np(lin)
    labels = _labeller(layout)(places, len(lin))
    keys, what, texts = _colour_keys(layout, places)
    legend = _legend(keys, texts)
    width = 2 * MARGIN + len(cols) * CELL_W
    height = 2 * MARGIN + len(rows) * CELL_H + CELL_H * (len(legend) + 2)
    dims = layout.picture_shape if shape is None else tuple(shape)
    title = escape(f"{layout!r}  shape {tuple(dims)}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="9">',
        f"<title>{title}</title>",
        f'<text x="{MARGIN}" y="{MARGIN - 12}">{title}</text>',
    ]
    show_text = len(lin) <= 4096
    k = 0
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            x, y = MARGIN + j * CELL_W, MARGIN + i * CELL_H
            if r is None or c is None:
                mark = "⋮" if r is None else "…"
                parts.append(f'<text class="fold" x="{x + CELL_W // 2}" '
                             f'y="{y + CELL_H - 5}">{mark}</text>')
                continue
            parts.append(
                f'<rect class="cell" x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" '
                f'fill="{_fill(int(keys[k]))}" stroke="white"><title>({r}, {c}): '
                f"{escape(labels[k])}</title></rect>"
            )
            if show_text:
                parts.append(f'<text x="{x + 2}" y="{y + CELL_H - 5}">{escape(labels[k])}</text>')
            k += 1
    y0 = MARGIN + len(rows) * CELL_H + CELL_H
    parts.append(f'<text class="legend" x="{MARGIN}" y="{y0}">colour = {what}</text>')
    for j, (key, text) in enumerate(legend):
        y = y0 + (j + 1) * CELL_H
        parts.append(
            f'<rect class="legend" x="{MARGIN}" y="{y - 12}" width="14" '
            f'height="14" fill="{_fill(key)}"/>'
        )
        parts.append(f'<text class="legend" x="{MARGIN + 20}" y="{y}">{escape(text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


LEGEND_MAX = 16


def _legend(keys: np.ndarray, texts: list[str]) -> list[tuple[int, str]]:
    """Up to LEGEND_MAX colours in order of first appearance in the tile."""
    order = list(dict.fromkeys(keys.tolist()))
    items = [(k, texts[k]) for k in order[:LEGEND_MAX]]
    if len(order) > LEGEND_MAX:
        items.append((order[LEGEND_MAX], f"… {len(order) - LEGEND_MAX} more"))
    return items


def _repr_svg_(layout: TileLayout) -> str:
    return render_svg(layout)


# Jupyter draws a layout with this; installed here so that layout.py need not import its
# renderer (tilewise.layout imports both)
TileLayout._repr_svg_ = _repr_svg_
