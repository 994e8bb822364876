"""Row tilings: register layouts for kernels that keep rows in registers (softmax,
normalisations), with 16-byte vector accesses and enough bytes in flight, for every row
length.

A tiling puts ``rows`` rows in a CTA (``rows_per_thread`` of them in each thread's
registers), ``threads_per_row`` threads on each row, and gives every thread ``vectors``
vectors of ``vec`` consecutive elements of each of its rows; the vectors of a row's
threads are interleaved so that a warp's accesses are contiguous (coalesced)::

    element (rt * RB + rb, k * G * vec + g * vec + i)
        -> thread rb * G + g (tx), register (rt * K + k) * vec + i

A row of ``cols`` elements that is not a whole number of such tiles is a **partial
tile**: the tile is ``chunk = vectors * threads_per_row * vec`` columns wide, and the
copies clip it at the array's end (loads fill, stores skip; docs/dispatch.md "Partial
tiles"). A row longer than one tile in registers is walked in ``chunks`` tiles.

:meth:`RowTiling.plan` chooses the tiling:

1. ``vec``: the widest vector up to 16 bytes that divides the row (so that every row
   starts aligned to it): 8 halves for a row of 3000, 1 for a row of 50257.
2. ``threads_per_row`` G (a power of two up to 1024) and ``vectors`` K per thread: the
   fewest threads whose rows of ``vectors`` (64 bytes by default) vectors cover the row,
   then, if that pads the row by more than an eighth, the neighbouring G with the least
   padding (a row of 5120 halves: 128 threads of 5 vectors, no padding, rather than 256 of
   3). A row that needs more than ``MAX_ELEMS`` elements per thread at 1024 threads is
   chunked: ``chunks`` tiles of K vectors per thread, K chosen so the chunks are about
   equally full: 512 threads per row (up to 128 registers each) and ``max_elems``
   elements per thread by default. A kernel that can split a row over the CTAs of a
   cluster (``max_ctas`` > 1) gets that instead (``ctas``: CTA rank r holds columns
   ``[r * P, r * P + P)`` of the row, ``P = chunks * cols``): 8, 4 or 2 CTAs of 256 threads
   (16, a non-portable cluster, only as a tuner candidate: :func:`row_configs`),
   each walking its part in chunks, their partial results exchanged through distributed
   shared memory (``examples/softmax.py``, ``examples/rmsnorm.py``).
3. Rows per CTA: short rows put several rows in a thread (``rows_per_thread``, up to the
   vectors target) and several row groups in a CTA of about ``threads`` (256) threads,
   never many more rows than the array has.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewise.layout.axes import tx
from tilewise.layout.builder import R, S
from tilewise.layout.layout import TileLayout

#: Elements of a row per thread above which a row is chunked (at 1024 threads per row:
#: 64 registers per thread is the most a 1024-thread CTA may have).
MAX_ELEMS = 32
MAX_THREADS = 1024
CHUNK_THREADS = 512  # threads per row of a chunked row: up to 128 registers each
CLUSTER_SIZES = (2, 4, 8, 16)  # CTAs per row of a split row (16: a non-portable cluster)
PLAN_CTAS = 8  # the most a plan takes (the portable maximum); 16 is a tuner candidate only
SPLIT_THREADS = 256  # threads of each CTA of a split, chunked row
STAGE_BYTES = 96 * 1024  # a split row's part up to this size is kept in shared memory


@dataclass(frozen=True)
class RowTiling:
    rows: int  # rows per CTA (R = rows_per_thread * row groups)
    threads_per_row: int  # G
    vectors: int  # vectors per thread and row per chunk (K)
    vec: int  # elements per vector
    rows_per_thread: int = 1  # RT
    chunks: int = 1  # tiles per row (1: the row is held in registers)
    ctas: int = 1  # CTAs per row (a cluster; each walks ``chunks`` tiles of the row)

    @property
    def groups(self) -> int:
        """Row groups per CTA (RB): the rows are ``rows_per_thread`` x ``groups``."""
        return self.rows // self.rows_per_thread

    @property
    def threads(self) -> int:
        return self.groups * self.threads_per_row

    @property
    def cols(self) -> int:
        """Columns of one tile (the chunk width; with ``ctas`` > 1, of a CTA's part)."""
        return self.vectors * self.threads_per_row * self.vec

    @property
    def part_cols(self) -> int:
        """Columns of a CTA's part of the row: ``chunks`` tiles (the whole row without a
        cluster); CTA rank r holds ``[r * part_cols, (r + 1) * part_cols)``."""
        return self.chunks * self.cols

    def staged(self, elem_bytes: int) -> bool:
        """Whether a row kernel keeps a CTA's part of a row split over a cluster in shared
        memory (up to :data:`STAGE_BYTES`), so that its second pass reads the part from
        there instead of global memory again."""
        return self.ctas > 1 and self.part_cols * elem_bytes <= STAGE_BYTES

    @property
    def regs(self) -> int:
        """Registers (elements) per thread of a row tile."""
        return self.rows_per_thread * self.vectors * self.vec

    @classmethod
    def plan(cls, rows: int, cols: int, elem_bytes: int, threads: int | None = None,
             vectors: int | None = None, chunk: int | None = None,
             max_elems: int = MAX_ELEMS, ctas: int | None = None,
             max_ctas: int = 1, split_elems: int | None = None) -> RowTiling:
        """The tiling of ``rows x cols`` elements of ``elem_bytes`` bytes (see the module
        doc). ``threads``: threads per CTA (default 256; for a chunked row, threads per
        row, default 1024); ``vectors``: vectors per thread and row (default 64 bytes);
        ``chunk``: walk the row in chunks of about this many columns even if it would fit
        registers (for tests of the chunked kernels at small sizes); ``max_elems``: elements
        of a row per thread at 1024 threads per row (twice that below), beyond which the
        row is chunked (a kernel with more live tiles per element takes fewer); ``ctas``:
        split each row over this many CTAs of a cluster (``threads`` then counts the
        threads of each; with ``chunk`` each walks its part in chunks); ``max_ctas``: the
        most CTAs per row the kernel can take, used when the row does not fit one CTA (1:
        one CTA walks the row in chunks); ``split_elems``: ``max_elems`` for a CTA's part
        of a row split in one pass (default ``max_elems``)."""
        if rows < 1 or cols < 1:
            raise ValueError(f"a row tiling needs at least one row and column, got "
                             f"{rows} x {cols}")
        vec = cls.vector(cols, elem_bytes)
        n = cols // vec
        want = vectors or max(1, 64 // (vec * elem_bytes))
        split_elems = split_elems or max_elems
        c = ctas if ctas is not None and ctas > 1 else 1
        if chunk is not None:
            cv = -(-chunk // vec)
            g, k = _row_split(cv, want, vec, max_elems) or (MAX_THREADS, want)
            if threads or (c > 1 and g < 32):  # a cluster: whole warps
                g = threads or 32
                k = -(-cv // g)
            part = -(-n // c)
            return cls._fit(n, vec, c, cls(1, g, k, vec, 1, -(-part // (g * k)), c))
        if c > 1:
            return cls._split(n, vec, c, want, threads, split_elems, vectors)
        split = _row_split(n, want, vec, max_elems)
        if split is None:
            if ctas is None and max_ctas > 1:
                return cls._split_chunked(n, vec, want, max_ctas)
            return cls._chunked(n, vec, threads or CHUNK_THREADS,
                                vectors or max(1, max_elems // vec))
        g, k = split
        rt = max(1, min(want // k, _pow2_at_least(rows)))
        per_cta = threads or 256
        rb = 1
        while rb * 2 * g <= per_cta and rb * 2 * rt <= _pow2_at_least(rows):
            rb *= 2
        return cls(rt * rb, g, k, vec, rt)

    @staticmethod
    def vector(cols: int, elem_bytes: int) -> int:
        """Elements a vector of a row of ``cols`` takes (rule 1 of the module doc): the
        widest, up to 16 bytes, that divides the row."""
        vec = max(16 // elem_bytes, 1)
        while cols % vec:
            vec //= 2
        return vec

    @staticmethod
    def plan_rows(rows: int) -> int:
        """The row count a plan for ``rows`` rows may as well be made for: the plan only
        caps its rows per CTA by the array's (rounded up to a power of two), and no plan
        puts more than 256 rows in a CTA except for the narrowest rows; so kernels with a
        symbolic row count made for 256, 4096 and 65536 rows are one kernel."""
        return min(_pow2_at_least(rows), 256)

    @classmethod
    def _split(cls, n: int, vec: int, ctas: int, want: int, threads: int | None,
               max_elems: int, vectors: int | None = None) -> RowTiling:
        """A row of ``n`` vectors over ``ctas`` CTAs, each holding its part in registers
        (``threads`` per CTA if given), or, where a part does not fit them (or ``vectors``
        per thread are asked for and do not cover it), walking its part in chunks."""
        if ctas not in CLUSTER_SIZES:
            raise ValueError(f"ctas={ctas}: a row splits over one of {CLUSTER_SIZES} CTAs")
        part = -(-n // ctas)
        if threads:
            g = threads
        else:
            g = (_row_split(part, want, vec, max_elems) or (MAX_THREADS, 0))[0]
        g = max(g, 32)  # whole warps: the cluster barrier is warp-aligned
        k = -(-part // g)
        if k <= min(_cap(g, vec, max_elems), vectors or k):
            return cls._fit(n, vec, ctas, cls(1, g, k, vec, 1, 1, ctas))
        return cls._fit(n, vec, ctas, cls._chunked(part, vec, threads or CHUNK_THREADS,
                                                   vectors or max(1, max_elems // vec), ctas))

    @classmethod
    def _split_chunked(cls, n: int, vec: int, want: int, max_ctas: int) -> RowTiling:
        """The plan of a row too long for one CTA: split over the most CTAs (8, 4, 2) that
        still leave each more than one chunk of ``SPLIT_THREADS`` x ``want`` vectors, each
        walking its part in chunks (measured on the H200, benchmarks/RESULTS.md "Long rows
        split over a cluster": small CTAs, several to an SM, each part read once and kept in
        shared memory by the kernels; one-pass parts in registers and one CTA per row were
        slower at 256 rows of 128256-262144)."""
        tile = SPLIT_THREADS * want  # vectors of a chunk
        sizes = [c for c in CLUSTER_SIZES if c <= min(max_ctas, PLAN_CTAS)]
        first = next((i for i in range(len(sizes) - 1, -1, -1) if -(-n // sizes[i]) > tile), 0)
        for c in sizes[first::-1]:  # fewer CTAs where the parts' rounding leaves one empty
            try:
                return cls._fit(n, vec, c, cls._chunked(-(-n // c), vec, SPLIT_THREADS, want, c))
            except ValueError:
                continue
        return cls._chunked(n, vec, SPLIT_THREADS, want)

    @staticmethod
    def _fit(n: int, vec: int, ctas: int, t: RowTiling) -> RowTiling:
        """``t``, checked: at most 1024 threads, whole warps in a cluster, and every CTA of
        a split row some of it (a ValueError otherwise)."""
        if t.threads > MAX_THREADS or (ctas > 1 and t.threads % 32) \
                or (ctas - 1) * t.chunks * t.threads_per_row * t.vectors >= n:
            raise ValueError(f"a row of {n * vec} elements does not split over {ctas} CTAs "
                             f"of {t.threads} threads, {t.vectors * vec} elements each per "
                             "chunk, every CTA some")
        return t

    @classmethod
    def _chunked(cls, n: int, vec: int, g: int, kmax: int, ctas: int = 1) -> RowTiling:
        """``n`` vectors (a row, or a CTA's part of one split over ``ctas``) walked by ``g``
        threads in chunks of at most ``kmax`` vectors each, the chunks about equally full."""
        chunks = -(-n // (g * kmax))
        return cls(1, g, -(-n // (g * chunks)), vec, 1, chunks, ctas)

    def tile(self) -> TileLayout:
        """``(rows, cols)``: the CTA's rows (one chunk of each) in registers."""
        g, k, v, rt = self.threads_per_row, self.vectors, self.vec, self.rows_per_thread
        if rt == 1:
            return S[(self.rows, k, g, v):(g @ tx, v, 1 @ tx, 1)]
        return S[(rt, self.groups, k, g, v):(k * v, g @ tx, v, 1 @ tx, 1)]

    def per_row(self) -> TileLayout:
        """``(rows, 1)``: one value per row, held by each of the row's threads."""
        g, rt = self.threads_per_row, self.rows_per_thread
        if rt == 1:
            return S[(self.rows, 1):(g @ tx, 1)] + R[g:1 @ tx]
        return S[(rt, self.groups, 1):(1, g @ tx, 1)] + R[g:1 @ tx]

    def by_thread(self) -> TileLayout:
        """``(G, K * vec)``: a one-row tile's registers viewed by thread (row g: what thread g
        holds), so a reduction over ``axes=-1`` stays in each thread's registers."""
        g, k, v = self.threads_per_row, self.vectors, self.vec
        return S[(g, k, v):(1 @ tx, v, 1)]

    def per_thread(self) -> TileLayout:
        """``(G, 1)``: one value per thread of a row (a thread's partial result)."""
        return S[(self.threads_per_row, 1):(1 @ tx, 1)]

    def across_threads(self) -> TileLayout:
        """``(1, G)``: the same per-thread values as one row, to reduce across the threads."""
        return S[(1, self.threads_per_row):(1, 1 @ tx)]

    def columns(self) -> TileLayout:
        """``(cols,)``: a row vector (weights), each thread holding its columns, replicated
        over the CTA's row groups."""
        g = self.threads_per_row
        out = S[(self.vectors, g, self.vec):(self.vec, 1 @ tx, 1)]
        return out + R[self.groups:g @ tx] if self.groups > 1 else out


ROW_DTYPES = ("float16", "bfloat16", "float32")


def check_row_args(rows: int, cols: int, dtype: str, what: str = "row", **counts) -> None:
    """A row kernel factory's check of its arguments: a ``ConfigError`` at the line that
    called the factory (the factory calls this first) for a dtype other than
    :data:`ROW_DTYPES`, fewer than one row (``what``) or column, or a count (``threads=``,
    ``vectors=``, ``chunk=``, ...; None: not given) below one or, for ``threads``, above
    1024."""
    why = _row_args_problem(rows, cols, dtype, what, counts)
    if why is not None:
        from tilewise.errors import config_error

        raise config_error(why, depth=2)


def _row_args_problem(rows, cols, dtype, what, counts) -> str | None:
    if dtype not in ROW_DTYPES:
        return f"dtype {dtype!r}: the row kernels take {', '.join(ROW_DTYPES)}"
    if not (isinstance(rows, int) and isinstance(cols, int)) or rows < 1 or cols < 1:
        return f"{rows} x {cols}: a row kernel needs at least one {what} and one column"
    for name, v in counts.items():
        if v is not None and (not isinstance(v, int) or v < 1):
            return f"{name}={v!r}: a count, at least 1"
    if (counts.get("threads") or 0) > MAX_THREADS:
        return f"threads={counts['threads']}: at most {MAX_THREADS} a CTA"
    return None


def row_configs(rows: int, cols: int, elem_bytes: int, max_elems: int = MAX_ELEMS,
                max_ctas: int = 1, split_elems: int | None = None) -> list[dict]:
    """Candidate configurations (keyword arguments ``threads``, ``vectors``, ``chunk``,
    ``ctas`` of a row kernel's factory) for a tuner (:func:`tilewise.autotune`), the plan's
    own first: other CTA sizes and half or twice the vectors per thread, and for a row that
    takes 512 threads or more, the row in two chunks (``chunk=``: a second read from L2, but
    CTAs small enough to overlap) or, for a kernel that splits rows over a cluster
    (``max_ctas`` > 1), over 4 or 8 CTAs in one pass (few rows then still fill the GPU). For a
    row too long for one CTA: the split, chunked plan beside halved chunks, 512-thread CTAs,
    half the CTAs, one pass over 4 or 8 CTAs, and one CTA per row; where the plan's 8 parts
    take 4 chunks or more and the kernel takes 16 CTAs (``max_ctas`` 16), twice the CTAs
    with half the chunk and with the same chunk (a non-portable cluster, which the kernel's
    declaration asks for; a GPU that cannot launch it drops the candidate). Each distinct
    tiling once."""
    base = RowTiling.plan(rows, cols, elem_bytes, max_elems=max_elems, max_ctas=max_ctas,
                          split_elems=split_elems)
    out = [{}]
    if base.chunks > 1 and base.ctas > 1:
        tile = base.cols  # columns of a chunk
        out += [{"ctas": base.ctas, "chunk": tile // 2},
                {"ctas": base.ctas, "chunk": tile, "threads": 512},
                {"ctas": max(2, base.ctas // 2), "chunk": tile},
                {"ctas": 8}, {"ctas": 4, "threads": 512}, {"ctas": 1}]
        if max_ctas >= 16 and base.ctas == PLAN_CTAS and base.chunks >= 4:
            out += [{"ctas": 16, "chunk": c, "threads": SPLIT_THREADS} for c in (tile // 2, tile)]
    elif base.chunks > 1:
        out += [{"threads": 256}, {"threads": MAX_THREADS,
                                   "vectors": max(1, max_elems * 3 // 4 // base.vec)}]
    else:
        out += [{"threads": t} for t in (128, 512)]
        out += [{"vectors": k} for k in (base.vectors // 2, base.vectors * 2) if k >= 1]
        if base.threads_per_row >= 512:  # one CTA per SM: two chunks let more CTAs overlap
            out.append({"chunk": -(-cols // 2)})
            out += [c for c in ({"ctas": 8}, {"ctas": 4, "threads": 512}) if max_ctas >= 8]
    seen, unique = set(), []
    for c in out:
        try:
            key = RowTiling.plan(rows, cols, elem_bytes, c.get("threads"), c.get("vectors"),
                                 c.get("chunk"), max_elems, c.get("ctas"), max_ctas,
                                 split_elems)
        except ValueError:
            continue
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _cap(g: int, vec: int, max_elems: int) -> int:
    """Vectors per thread a row may take at ``g`` threads per row: ``max_elems`` elements
    in a CTA of 1024 threads (64 registers each), twice that in smaller ones."""
    return max(1, (max_elems if g >= MAX_THREADS else 2 * max_elems) // vec)


def _row_split(n: int, want: int, vec: int, max_elems: int) -> tuple[int, int] | None:
    """``(G, K)`` for a row of ``n`` vectors held in registers: the fewest threads (a power
    of two) with at most ``want`` vectors each, or a neighbour that pads the row less when
    that one pads it by more than an eighth; None when the row does not fit registers."""
    g = 1
    while g < MAX_THREADS and -(-n // g) > want:
        g *= 2
    k = -(-n // g)
    if k > _cap(g, vec, max_elems):
        return None
    pad = g * k - n
    if pad * 8 <= n:
        return g, k
    best = (pad, g, k)
    for cand in (g // 2, g * 2):
        kc = -(-n // max(cand, 1))
        if 1 <= cand <= MAX_THREADS and kc <= min(_cap(cand, vec, max_elems), 2 * want) \
                and cand * kc - n < best[0]:
            best = (cand * kc - n, cand, kc)
    return best[1], best[2]
