"""Kernel factories for the copy_async -> tcgen05_ldst tests.

Every factory closes over its parameters and returns a real ``@T.prim_func``. Lines
marked ``# STORE`` / ``# LOAD`` / ``# COPY`` are looked up by the error tests (the error
must name the user's line).
"""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx
from tilewise.layout import S, TCol, TileLayout, TLane, tcgen05_warpgroup_atom, tid_in_wg
from tilewise.layout import tmem_datapath
from tilewise.layout.ops import split_into

ROWS = {"D": 128, "F": 64}


def n_alloc(cols32: int) -> int:
    """tcgen05.alloc column count (a power of two >= 32) covering ``cols32`` columns."""
    n = 32
    while n < cols32:
        n *= 2
    return n


def tmem_layout(dp: str, cols: int) -> TileLayout:
    """Datapath ``dp`` over ``cols`` element columns (any width for D)."""
    if dp == "D" and cols & (cols - 1):
        return TileLayout(S[(128, cols) : (1 @ TLane, 1 @ TCol)])
    return tmem_datapath(dp, cols)


def row_major_regs(width: int, rows: int = 128) -> TileLayout:
    """The .32x32b warpgroup fragment: row r in thread r, column j in register element j."""
    return TileLayout(S[(rows, width) : (1 @ tid_in_wg, 1)])


def blocks(atom: TileLayout, rows: int, block: int, k: int) -> TileLayout:
    """``k`` copies of a one-slab atom side by side, block ``j``'s registers after block
    ``j-1``'s (what a larger ``.num`` of that shape would be)."""
    row_iters, col_iters = split_into(atom.canonicalize().shard, (rows, block))
    per = atom.storage().span("m")
    shard = [(it.extent, it.stride, it.axis) for it in row_iters]
    shard += [(k, per, "m")] + [(it.extent, it.stride, it.axis) for it in col_iters]
    return TileLayout.from_iters(shard)


def regs_elems(layout: TileLayout) -> int:
    return layout.storage().span("m")


# ---- the round trip: registers -> tmem -> registers ------------------------------------------
def roundtrip(reg_layout: TileLayout, width: int, dtype: str, dp: str = "D", *,
              tmem_cols: int | None = None, tmem_col0: int = 0, reg_width: int | None = None,
              reg_col0: int = 0, tmem_lay: TileLayout | None = None, scope: str = "wg",
              tmem_row0: int = 0, tmem_rows: int | None = None):
    """A warpgroup copies an ``M x width`` tile of ``A`` into registers (``Tx.wg.copy``),
    stores it to tensor memory columns ``tmem_col0..`` and loads it back into other registers,
    then writes ``B``. ``reg_width`` > ``width``: the register view is wider and the copies
    use its columns ``reg_col0..``. ``tmem_rows`` / ``tmem_row0``: a taller tensor-memory
    buffer (128 lanes, datapath D) whose rows ``tmem_row0..`` the copies use."""
    rows = ROWS[dp]
    bits = {"float16": 16, "bfloat16": 16, "uint16": 16, "uint8": 8, "int8": 8,
            "float8_e4m3": 8}.get(dtype, 32)
    e = 32 // bits
    tcols = tmem_cols or (tmem_col0 + width)
    rwidth = reg_width or width
    trows = tmem_rows or rows
    tlay = tmem_lay or tmem_layout(dp if trows == rows else "D", tcols)
    nalloc = n_alloc((tcols + e - 1) // e)
    nreg = regs_elems(reg_layout)
    t0, t1, r0, r1 = tmem_col0, tmem_col0 + width, reg_col0, reg_col0 + width
    q0, q1 = tmem_row0, tmem_row0 + rows

    @T.prim_func
    def tcgen05_roundtrip(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (rows, rwidth), dtype)
        B = T.match_buffer(B_ptr, (rows, rwidth), dtype)
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        tmem_addr = T.alloc_shared([1], "uint32")
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=nalloc, cta_group=1)
        T.tvm_storage_sync("shared")
        tmem = T.decl_buffer((trows, tcols), dtype, scope="tmem", allocated_addr=tmem_addr[0],
                             layout=tlay)
        A_reg = T.alloc_local((nreg,), dtype)
        B_reg = T.alloc_local((nreg,), dtype)
        A_local = A_reg.view(rows, rwidth, layout=reg_layout)
        B_local = B_reg.view(rows, rwidth, layout=reg_layout)
        Tx.wg.copy(A_local[:, :], A[:, :])
        Tx.wg.copy(B_local[:, :], B[:, :])
        Tx.wg.copy_async(tmem[q0:q1, t0:t1], A_local[:, r0:r1])  # STORE
        T.ptx.tcgen05.wait.st()
        T.cuda.cta_sync()
        Tx.wg.copy_async(B_local[:, r0:r1], tmem[q0:q1, t0:t1])  # LOAD
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(B[:, :], B_local[:, :])
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit(cta_group=1)
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=nalloc, cta_group=1)

    return tcgen05_roundtrip


def atom_roundtrip(shape: str, num: int, dtype: str, dp: str = "D", **kw):
    """Round trip whose register layout is the ``shape.x<num>`` warpgroup atom."""
    bits = 16 if dtype in ("float16", "bfloat16", "uint16") else 32
    lay = tcgen05_warpgroup_atom(shape, num, bits, dp)
    return roundtrip(lay, lay.size() // ROWS[dp], dtype, dp, **kw)


def roundtrip_blocks(reg_layout: TileLayout, width: int, blocks: int, dtype: str):
    """Column blocks of ``width`` stored to and loaded from tensor memory in a loop: the
    tensor-memory column start ``j * width`` is a run-time value."""
    e = 32 // (16 if dtype in ("float16", "bfloat16") else 32)
    total = width * blocks
    nalloc = n_alloc(total // e)
    nreg = regs_elems(reg_layout)
    tlay = TileLayout(S[(128, total) : (1 @ TLane, 1 @ TCol)])

    @T.prim_func
    def tcgen05_blocks(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (128, total), dtype)
        B = T.match_buffer(B_ptr, (128, total), dtype)
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        tmem_addr = T.alloc_shared([1], "uint32")
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=nalloc, cta_group=1)
        T.tvm_storage_sync("shared")
        tmem = T.decl_buffer((128, total), dtype, scope="tmem", allocated_addr=tmem_addr[0],
                             layout=tlay)
        R = T.alloc_local((nreg,), dtype)
        V = R.view(128, width, layout=reg_layout)
        for j in range(blocks):
            Tx.wg.copy(V[:, :], A[:, j * width:j * width + width])
            Tx.wg.copy_async(tmem[:, j * width:j * width + width], V[:, :])  # STORE
            T.ptx.tcgen05.wait.st()
        T.cuda.cta_sync()
        for j in range(blocks):
            Tx.wg.copy_async(V[:, :], tmem[:, j * width:j * width + width])  # LOAD
            T.ptx.tcgen05.wait.ld()
            Tx.wg.copy(B[:, j * width:j * width + width], V[:, :])
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=nalloc, cta_group=1)

    return tcgen05_blocks


# ---- single copies, for the declines -----------------------------------------------------------
def one_copy(reg_layout, shape, dtype, tmem_lay, *, store: bool = True, scope: str = "wg",
             reg_region=None, tmem_region=None, active_rows: int = 128, nreg: int | None = None,
             tmem_shape=None, mbar: bool = False):
    """One copy_async between a ``shape`` register view and tensor memory; no alloc (so the
    kernel also lowers for targets without tcgen05 up to dispatch)."""
    rows, cols = shape
    tshape = tmem_shape or shape
    nreg = nreg or regs_elems(reg_layout)
    rr = reg_region or ((0, rows), (0, cols))
    tr = tmem_region or ((0, rows), (0, cols))
    (a0, a1), (b0, b1) = rr
    (c0, c1), (d0, d1) = tr

    if scope == "cta":
        @T.prim_func
        def one_cta(addr_ptr: T.handle):
            addr = T.match_buffer(addr_ptr, (1,), "uint32")
            T.device_entry()
            tid = T.thread_id([128])
            tmem = T.decl_buffer(tshape, dtype, scope="tmem", allocated_addr=addr[0],
                                 layout=tmem_lay)
            R = T.alloc_local((nreg,), dtype)
            V = R.view(rows, cols, layout=reg_layout)
            Tx.cta.copy_async(tmem[c0:c1, d0:d1], V[a0:a1, b0:b1])  # COPY
        return one_cta

    if mbar:
        @T.prim_func
        def one_mbar(addr_ptr: T.handle):
            addr = T.match_buffer(addr_ptr, (1,), "uint32")
            T.device_entry()
            tid = T.thread_id([128])
            bar = T.alloc_shared([1], "uint64")
            tmem = T.decl_buffer(tshape, dtype, scope="tmem", allocated_addr=addr[0],
                                 layout=tmem_lay)
            R = T.alloc_local((nreg,), dtype)
            V = R.view(rows, cols, layout=reg_layout)
            Tx.wg.copy_async(tmem[c0:c1, d0:d1], V[a0:a1, b0:b1], mbar=T.address_of(bar))  # COPY
        return one_mbar

    if store:
        @T.prim_func
        def one_store(addr_ptr: T.handle):
            addr = T.match_buffer(addr_ptr, (1,), "uint32")
            T.device_entry()
            tid = T.thread_id([128])
            tmem = T.decl_buffer(tshape, dtype, scope="tmem", allocated_addr=addr[0],
                                 layout=tmem_lay)
            R = T.alloc_local((nreg,), dtype)
            V = R.view(rows, cols, layout=reg_layout)
            if tid < active_rows:
                Tx.wg.copy_async(tmem[c0:c1, d0:d1], V[a0:a1, b0:b1])  # COPY
        return one_store

    @T.prim_func
    def one_load(addr_ptr: T.handle):
        addr = T.match_buffer(addr_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        tmem = T.decl_buffer(tshape, dtype, scope="tmem", allocated_addr=addr[0],
                             layout=tmem_lay)
        R = T.alloc_local((nreg,), dtype)
        V = R.view(rows, cols, layout=reg_layout)
        Tx.wg.copy_async(V[a0:a1, b0:b1], tmem[c0:c1, d0:d1])  # COPY
    return one_load


def forced_store():
    """The seed's store with the variant forced by name."""
    lay = row_major_regs(8)

    @T.prim_func
    def forced(addr_ptr: T.handle):
        addr = T.match_buffer(addr_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        tmem = T.decl_buffer((128, 8), "float16", scope="tmem", allocated_addr=addr[0],
                             layout=tmem_datapath("D", 8))
        R = T.alloc_local((8,), "float16")
        V = R.view(128, 8, layout=lay)
        Tx.wg.copy_async(tmem[:, :], V[:, :], dispatch="tcgen05_ldst")  # COPY
    return forced


def tmem_to_tmem():
    @T.prim_func
    def t2t(addr_ptr: T.handle):
        addr = T.match_buffer(addr_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        t0 = T.decl_buffer((128, 8), "float32", scope="tmem", allocated_addr=addr[0],
                           layout=tmem_datapath("D", 8))
        t1 = T.decl_buffer((128, 8), "float32", scope="tmem", allocated_addr=addr[0],
                           layout=tmem_datapath("D", 8))
        Tx.wg.copy_async(t1[:, :], t0[:, :])  # COPY
    return t2t


def inputs(rows: int, width: int, dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if dtype in ("float32", "float16"):
        a = rng.standard_normal((rows, width)).astype(dtype)
    elif dtype == "bfloat16":
        import ml_dtypes

        a = rng.standard_normal((rows, width)).astype(ml_dtypes.bfloat16)
    else:
        info = np.iinfo(np.dtype(dtype))
        a = rng.integers(info.min, info.max, (rows, width), endpoint=True).astype(dtype)
    b = np.zeros_like(a)
    return a, b
