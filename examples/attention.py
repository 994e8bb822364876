"""Fused attention on Hopper in tilewise: ``O = softmax(Q Kᵀ · scale) V`` in one kernel, the
FlashAttention-3 way (H100 / H200, sm_90a).

``make_attention(batch, heads, seq_q, seq_k, head_dim, causal=False, dtype="bfloat16",
kv_heads=None, scale=None)`` returns a kernel launched as ``k(Q, K, V, O)`` with exactly
``torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal, scale=scale,
enable_gqa=kv_heads is not None)``'s contract: Q and O are (batch, heads, seq_q, head_dim),
K and V (batch, kv_heads, seq_k, head_dim), contiguous, float16 or bfloat16; head_dim a
multiple of 8 up to 256 (64, 128 and 256 measured and tuned; the tiles round it up to a
multiple of 16, ``tile_head_dim``, TMA reading the columns past it as zeros, and take the
128-byte swizzle where a row splits into 128-byte blocks, else 64 or 32:
``widest_swizzle``); any sequence lengths; ``heads`` a multiple of ``kv_heads`` (query
head ``h`` reads key/value head ``h // (heads // kv_heads)``); ``scale`` (positive)
defaults to ``1 / sqrt(head_dim)``; ``causal`` as torch defines it, *top-left* aligned:
query ``i`` sees keys ``j <= i`` (with seq_q > seq_k the last queries see every key; with
seq_q < seq_k no query sees the keys past seq_q). ``return_lse=True`` gives ``k(Q, K, V, O,
LSE)``, which also writes the log-sum-exp of each row, ``LSE[b, h, i] = log(sum_j exp(scale · q_i ·
k_j))`` over the keys row ``i`` sees (``torch.logsumexp`` of the scaled, masked scores),
float32 (batch, heads, seq_q): what the backward pass (``attention_backward.py``) needs.

The technique, from the outside in (FlashAttention-3, Shah et al. 2024, §3):

* **Persistent CTAs over (batch, head, q-block) work.** One CTA per SM takes one tile per
  round; a tile is 64 x C query rows (C consumers, below) of one (batch, head). Without
  ``causal`` the tiles go head by head, so the CTAs working at one time share that head's
  K and V in L2. Causal tiles differ in length (the last rows see the most keys), so they
  go longest first and are dealt in a *snake* (``tilewise.sched.Snake``: CTA ``c`` takes
  the ``c``-th tile of even rounds and the ``c``-th from the end of odd ones), and with few
  heads longest first across all heads rather than within each: a round-robin deal left a
  third of the SMs idle at the end of a long causal launch (seq 16384, 16 heads). Each
  role decodes the tile by the same ``@T.inline`` helper, ``work_item``.
* **Warp specialisation.** Warpgroups 0 .. C - 1 are the *consumers* (C = 2, or 3 at
  head_dim 64 where the rounds of tiles the SMs take cost less with 192-row tiles than
  with 128-row ones: ``default_consumers``, ``consumers=``), each owning 64 of the tile's query
  rows; warpgroup C is the *producer*. It gives its registers away (``setmaxnreg`` 24) and
  the consumers take them (240 with two, 160 with three: S, P and a 64 x head_dim float32
  O live at once), and one of its threads issues every TMA load: Q once per tile, K and V
  block by block through rings of ``stages`` shared buffers, each guarded by a *full*
  mbarrier (the producer announces the bytes, the copy engine completes them) and an
  *empty* one (every consumer arrives when it no longer reads it). K and V have rings of
  their own, since K block j is read one step before V block j. (nvJitLink ignores
  ``setmaxnreg``; tilewise assembles kernels that use it with a whole-program ``ptxas``:
  docs/codegen.md.)
* **Ping-pong between the consumers.** Named barriers order the tensor-core work of the
  consumers: in each step warpgroup ``c`` waits on barrier ``1 + c`` (``bar.sync``, 256
  threads) before issuing its GEMMs, then lets the next one go (``bar.arrive`` on barrier
  ``1 + (c + 1) % C``). So while one warpgroup runs its softmax on the CUDA cores the others
  run their GEMMs on the tensor cores. The issue code is one body unrolled for the C
  *slots* (``for slot in T.static_range(C): if cw == slot: ...``): every consumer runs the
  same program, each issuing in its own slot (which is also what lets the simulator run
  them as thread sets that wait on each other). Three consumers (192-row tiles) give each
  softmax two others' GEMMs to hide behind, which matters at head_dim 64, where a block's
  exponentials take as long on the SFUs as its GEMMs on the tensor cores.
* **Inside a warpgroup, the next S = Q Kⱼᵀ overlaps the softmax.** Step ``j`` issues
  ``S = Q Kⱼᵀ`` and then ``O += P Vⱼ₋₁`` (P of step j - 1), waits for the first
  (``wgmma.wait_group(1)``), runs the softmax of S while the second still runs, then waits
  for it (``wait_group(0)``), frees Vⱼ₋₁ and turns S into the next P. Block 0 (no P V to
  issue yet) and the steady state are two copies of one body (``for phase in
  T.static_range(2)``), so no run-time ``if`` sits between a ``wgmma.fence`` and its wgmmas
  (ptxas would serialise them).
* **P stays in registers.** The float32 accumulator of S, rounded to 16 bits in place
  (``Tx.wg.cast``: ``cvt.rn.bf16x2.f32``, no data moves), *is* the A operand of the next
  wgmma (``wgmma_a_fragment(BN)`` is ``wgmma_accumulator(BN)``): ``Tx.wg.gemm_async(O, P,
  V_smem)`` dispatches to ``wgmma.mma_async`` with A from registers (the ``wgmma_rs``
  variant), and P never touches shared memory.
* **Online softmax with exp2.** Per row the running maximum ``m`` (of the raw scores) and
  sum ``l``; with ``c = scale · log2(e)`` folded in, ``P = 2^(S c - m c)`` is one ``fma`` and
  one ``ex2.approx.ftz`` per score, and ``alpha = 2^((m_old - m) c)`` rescales ``l`` and
  ``O``. ``m`` moves only when a block's row maximum passes it by more than ``RESCALE_AT``
  (8, in the exponent), so P stays below 2^8 (exact in float32 and as precise in 16 bits),
  and the 64 x head_dim float32 O is rescaled (``head_dim / 2`` multiplies per thread, on
  the path between one block's P V and the next block's issue) only in warps where some
  row's maximum moved (``vote.sync.any``): after the first blocks, rarely. The row max is
  ``Tx.wg.max`` over the accumulator fragment (in-thread, then two shuffles) into
  ``wgmma_accumulator_rows()``, which broadcasts back over the rows in registers; ``l`` is
  kept as each lane's partial sums (S viewed as (64, 4, BN / 4), the middle axis the 4
  lanes of a row, summed over the last axis without a shuffle) and summed across the lanes
  once per tile.
* **Masks only where needed.** With ``causal``, the key blocks a tile's rows cannot see are
  neither loaded nor computed; only blocks crossing the diagonal, or the last one when
  ``seq_k`` is not a multiple of the block, get ``-inf`` per score (by its row and column,
  the fragment's formula). Rows past ``seq_q`` and keys past ``seq_k`` read as zeros (TMA).
* **Epilogue through shared memory and a TMA store.** ``O / l`` is cast to the output
  dtype, written to a swizzled shared tile (``stmatrix``), fenced for the async proxy and
  stored by TMA, which drops rows past ``seq_q``. With head_dim 256 the output tile lives in
  the Q tile (shared memory is short), so the next tile's Q load waits for that store.

* **Decoding: a few rows a head** (:class:`SplitKeys`, taken by default without a causal
  mask where a key/value head's query rows fit one tile): the query heads of a group become
  one tile's rows (a view of Q and O), and where the tiles are fewer than the SMs each
  tile's keys are cut into ranges (flash-decoding) whose float32 partial outputs a second
  kernel combines.

Correctness: float64 numpy in the simulator (``tests/attn/``, every hazard check on) and
torch SDPA on the GPU; ``benchmarks/bench_attention.py`` times it against SDPA's flash and
cuDNN backends and a Triton kernel.
"""

from __future__ import annotations

import math

from tilewise import T, Tx, config_error, runtime
from tilewise.runtime.scratch import Scratch
from tilewise.sched import Snake
from tilewise.layout import (R, S, laneid, swizzled_tile, wgmma_a_fragment, wgmma_accumulator,
                             wgmma_accumulator_rows, wid_in_wg, widest_swizzle)

#: Consumer warpgroups (64 query rows each) per tile. Three at head_dim 64 (192-row tiles;
#: H200, bf16: 1.04-1.14 x two without a causal mask at seq 1024-16384, and with one from
#: seq_q 12288 on: 1.14 x at 16384; equal at 4096-8192 and 0.75-0.89 x below, where a
#: 192-row tile crosses more diagonal blocks); two elsewhere. Without a causal mask the
#: tiles are all alike, so the choice also counts the rounds of tiles the SMs take: three
#: consumers only where ``rounds x 192 x`` :data:`ROW_COST_3` is below ``rounds x 128``
#: (8 x 12 heads of 1024 rows: 576 tiles of 192 rows are 5 rounds of 132 SMs with the
#: last a third full, 768 of 128 are 6 nearly full ones; 197 rows: two 192-row tiles a
#: head, most of the second padding).
ROW_COST_3 = 0.88  # a query row's time in a 192-row tile over its time in a 128-row one
#: (H200, bf16, head_dim 64, no mask: 0.855 at seq 1024 and 0.90 at 16384, from 3-consumer
#: against 2-consumer runs of 512 and 32 heads, their rounds counted out)


def default_consumers(head_dim: int, causal: bool, seq_q: int, heads: int | None = None,
                      sms: int = 132) -> int:
    """2 or 3 consumer warpgroups for a problem (``heads``: batch x heads, when known)."""
    if head_dim != 64 or (causal and seq_q < 12288):
        return 2
    if causal or heads is None:
        return 3
    rounds = {c: -(-heads * -(-seq_q // (64 * c)) // sms) for c in (2, 3)}
    return 3 if rounds[3] * 192 * ROW_COST_3 < rounds[2] * 128 else 2


# keys per block, by head_dim (registers, smem); head_dim 256 without a causal mask takes 80
# (two stages of 80-key K and V fit beside the Q tile; measured on the H200, 1.04-1.06 x the
# 64-key block at seq 4096 / 16384), with one 64 (80-key blocks cut the diagonal worse).
BLOCK_N = {64: 128, 128: 128, 256: 64}
BLOCK_N_FULL = {**BLOCK_N, 256: 80}
HEAD_DIMS = range(8, 257, 8)  # TMA's 16-byte rows; O's width is at most 256
SMEM_BYTES = 227 * 1024  # the H100 / H200 opt-in limit per CTA
H200_SMS = 132
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
NEG_INF = float("-inf")
#: A row's running maximum m moves only when a block's scores pass it by more than this
#: (in the exponent, log2 units): P = 2^(S c - m c) <= 2^8 then, and O is rescaled only in
#: warps where some row's m moved (rarely after the first blocks).
RESCALE_AT = 8.0


def tile_head_dim(head_dim: int) -> int:
    """The head_dim of the shared and register tiles: a multiple of 16 (wgmma's K step in
    S = Q Kᵀ). Past ``head_dim`` the TMA loads read zeros (adding nothing to S, making
    O's extra columns zero) and the stores drop those columns."""
    return -(-head_dim // 16) * 16


def default_block_n(head_dim: int, causal: bool) -> int:
    """Keys per block: the table for head_dim 64, 128 and 256; otherwise 128 up to
    head_dim 128, 96 up to 192 and 64 above (S and P shrink as O grows: at head_dim 192,
    S 48 + P 24 + O 96 registers a thread). Measured on the H200 (bf16, seq 4096 and
    16384, benchmarks/RESULTS.md): at head_dim 32, 80 and 96 the 128-key block is 5-17 %
    faster than 80 or 96 keys; at 192, 96 keys are 2-11 % faster than 64."""
    table = BLOCK_N if causal else BLOCK_N_FULL
    return table.get(head_dim, 128 if head_dim <= 128 else 96 if head_dim <= 192 else 64)


def plan(head_dim: int, block_n: int | None = None, stages: int | None = None,
         causal: bool = True, consumers: int = 2):
    """(block_n, stages, o_in_q, consumers): keys per block, K/V ring depth, whether the
    output tile reuses the Q tile's shared memory (when a separate one does not fit), and the
    consumer warpgroups."""
    bn = block_n or default_block_n(head_dim, causal)
    d = tile_head_dim(head_dim)
    q = 64 * consumers * d * 2
    kv = 2 * bn * d * 2  # one K and one V block
    o_in_q = q + q + 2 * kv > SMEM_BYTES - 1024
    free = SMEM_BYTES - 1024 - q - (0 if o_in_q else q)
    return bn, stages or min(4, free // kv), o_in_q, consumers


#: The sizes the kernel leaves symbolic (bound from the arrays at launch): one compiled
#: kernel serves every batch and sequence length of a (heads, head_dim, causal, dtype, ...).
BATCH, SEQ_Q, SEQ_K = T.int32(), T.int32(), T.int32()


def make_attention(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int,
                   causal: bool = False, dtype: str = "bfloat16", kv_heads: int | None = None,
                   scale: float | None = None, return_lse: bool = False, *,
                   block_n: int | None = None, stages: int | None = None,
                   consumers: int | None = None, num_sms: int | None = None,
                   splits: bool | None = None):
    """The attention kernel ``k(Q, K, V, O)`` (``k(Q, K, V, O, LSE)`` with ``return_lse``);
    see the module docstring. ``block_n`` (keys per block), ``stages`` (K/V ring depth),
    ``consumers`` (2 or 3 warpgroups of 64 query rows per tile) and ``num_sms`` (persistent
    CTAs) tune it. The batch and the sequence lengths are checked
    here and left symbolic in the kernel, so calls that differ only in them share one
    compiled kernel. ``splits=True`` (without a causal mask and LSE) takes
    :class:`SplitKeys`: a group's query heads as one tile's rows, and the keys cut into
    ranges when the tiles are too few for the SMs (flash-decoding). By default it is taken
    where a key/value head's query rows fit one 128-row tile (a few rows a head: decoding)
    and either heads share key/value heads or the heads are fewer than the SMs, unless
    ``block_n`` or ``consumers`` is given."""
    _validate(batch, heads, seq_q, seq_k, head_dim, dtype, kv_heads)
    consumers_given = consumers
    consumers = consumers or default_consumers(head_dim, causal, seq_q, batch * heads,
                                               num_sms or runtime.sm_count(default=H200_SMS))
    BN, stages, o_in_q, consumers = plan(head_dim, block_n, stages, causal, consumers)
    if BN % 16 or not 16 <= BN <= 256 or stages < 1:
        raise config_error(f"block_n={BN}, stages={stages}: block_n is a multiple of 16 up to "
                           "256 and the ring has at least one stage")
    if consumers not in (2, 3) or (consumers == 3 and head_dim != 64):
        raise config_error(f"consumers={consumers}: 2 warpgroups, or 3 at head_dim 64 (three "
                           "consumers have 160 registers a thread, too few for S, P and O at "
                           f"head_dim {head_dim})")
    scale = scale if scale is not None else 1.0 / math.sqrt(head_dim)
    if not scale > 0:
        raise config_error(f"scale={scale}: a positive number (the running maximum is taken "
                           "over the unscaled scores)")
    key = (heads, head_dim, bool(causal), dtype, kv_heads or heads, float(scale),
           bool(return_lse), BN, stages, o_in_q, consumers,
           num_sms or runtime.sm_count(default=H200_SMS))
    group = heads // (kv_heads or heads)
    if splits is None and not return_lse and not causal and group * seq_q <= 128 and (
            group > 1 or batch * heads < key[-1]) and block_n is None and consumers_given is None:
        splits = True  # a few rows a head: group the heads' rows, cut the keys if need be
    if splits:
        if causal or return_lse:
            raise config_error("splits=True (keys shared out over several CTAs, their partial "
                               "outputs combined after) is for attention without a causal "
                               "mask and without return_lse")
        return SplitKeys(key, batch, heads, seq_q, kv_heads or heads, consumers)
    if key not in _KERNELS:  # built once: the same kernel object compiles once
        _KERNELS[key] = _build(*key)
    return _KERNELS[key]


_KERNELS: dict = {}

#: The keys are shared out over several CTAs (:class:`SplitKeys`) when a launch's tiles are
#: fewer than the SMs and the keys at least this many: a decode step (seq_q 1) of 8 x 8
#: key/value heads is 64 tiles for 132 SMs, each walking every key alone.
SPLIT_MIN_KEYS = 1024
SPLIT_MAX = 32  # ranges a tile's keys are cut into at most
SPLIT_EVEN = 0.03  # fewer ranges win unless more fill the SMs' last round this much better


class SplitKeys:
    """``make_attention``'s kernel for a few query rows per head and no causal mask (a
    decode step, speculative or chunked decoding), launched as ``k(Q, K, V, O)`` like the
    others. Two things change, both invisible to the caller:

    * **Query heads that share a key/value head are one tile's rows.** Q (batch, heads,
      seq_q, d) is viewed as (batch, kv_heads, group · seq_q, d) (heads ``h`` of one group
      are adjacent; no copy), and O likewise: without a causal mask each row's softmax is
      its own, so the group reads its K and V once instead of ``group`` times.
    * **The keys are cut into ranges** (flash-decoding) when the tiles are fewer than the
      SMs: ``splits`` ranges a tile (:meth:`splits_for`: the fewest that fill the SMs'
      last round best), each range's CTA writing its normalised O
      and its log-sum-exp in float32 (``OP``, ``LSEP``, kept per stream, shape and device),
      and a second kernel (:func:`_build_combine`) adding them with weights
      ``2^(lse_s - max) / sum``, in range order.

    The split count is chosen per call from the arrays' sizes, so one object serves every
    batch and length, as the other kernels do; ``tw.simulate`` runs the same two kernels
    on numpy arrays."""

    def __init__(self, key, batch, heads, seq_q, kv_heads, consumers):
        self.key = key
        (self.heads, self.DT, _, self.dtype, self.Hk, scale, _, self.BN, stages, o_in_q,
         _, self.ctas) = key
        self.group = self.heads // self.Hk
        # packed: kv_heads query heads of group * seq_q rows; two consumers (128-row tiles)
        self.base = (self.Hk, self.DT, False, self.dtype, self.Hk, scale, False, self.BN,
                     stages, o_in_q, 2, self.ctas)
        self._bufs = Scratch("split-key attention's partial outputs")

    def __repr__(self) -> str:
        return (f"<make_attention split-keys kernel: {self.heads} heads in {self.Hk} groups, "
                f"head_dim {self.DT}>")

    def splits_for(self, batch: int, seq_q: int, seq_k: int) -> int:
        """The ranges each tile's keys are cut into for these sizes (1: not cut): the
        fewest whose items (tiles x ranges, all of one length) fill their last round of
        the SMs best, within :data:`SPLIT_EVEN` (64 tiles on 132 SMs: 2 ranges, 128 items
        in one round, rather than 5, 320 items in 2.4 rounds); at most :data:`SPLIT_MAX`
        and half the key blocks."""
        items = batch * self.Hk * -(-(self.group * seq_q) // 128)
        blocks = -(-seq_k // self.BN)
        if items >= self.ctas or seq_k < SPLIT_MIN_KEYS:
            return 1
        options = range(1, max(1, min(SPLIT_MAX, blocks // 2)) + 1)

        def filled(n):  # the busy share of the SMs over the rounds n ranges take
            rounds = items * n / self.ctas
            return rounds / math.ceil(rounds)

        best = max(filled(n) for n in options)
        return min(n for n in options if filled(n) >= best - SPLIT_EVEN)

    def kernel(self, splits: int):
        key = self.base + (splits,)
        if key not in _KERNELS:
            _KERNELS[key] = _build(*key)
        return _KERNELS[key]

    def combine(self, splits: int):
        key = ("combine", self.Hk, self.DT, splits, self.dtype)
        if key not in _KERNELS:
            _KERNELS[key] = _build_combine(*key[1:])
        return _KERNELS[key]

    def __tilewise_prim_func__(self):
        """The kernel of the same contract without either change (what ``tw.compile`` and
        a torch op's signature take; launches and ``tw.simulate`` go through this object)."""
        if self.key not in _KERNELS:
            _KERNELS[self.key] = _build(*self.key)
        return _KERNELS[self.key]

    def _packed(self, Q, O):  # noqa: E741
        b, h, sq, d = Q.shape
        shape = (b, self.Hk, self.group * sq, d)
        if hasattr(Q, "view") and hasattr(Q, "new_empty"):  # torch
            return Q.view(shape), O.view(shape)
        return Q.reshape(shape), O.reshape(shape)  # numpy: views of contiguous arrays

    def _check(self, Q, K, V, O):  # noqa: E741
        import tilewise

        b, h, sq, d = Q.shape
        want_kv = (b, self.Hk, K.shape[2], self.DT)
        if (h, d) != (self.heads, self.DT) or tuple(K.shape) != want_kv or \
                tuple(V.shape) != want_kv or tuple(O.shape) != tuple(Q.shape):
            raise tilewise.LaunchError(
                f"this attention kernel takes Q and O (batch, {self.heads}, seq_q, {self.DT}) "
                f"and K, V (batch, {self.Hk}, seq_k, {self.DT}); got Q {tuple(Q.shape)}, K "
                f"{tuple(K.shape)}, V {tuple(V.shape)}, O {tuple(O.shape)}",
                hint="make the kernel for these heads and head_dim")

    def _prepare(self, Q, K, V, O):  # noqa: E741
        """(Q and O packed, the key ranges) of a call, its arrays checked."""
        self._check(Q, K, V, O)
        Qp, Op = self._packed(Q, O)
        return Qp, Op, self.splits_for(Q.shape[0], Q.shape[2], K.shape[2])

    def __call__(self, Q, K, V, O, stream=None):  # noqa: E741
        Qp, Op, n = self._prepare(Q, K, V, O)
        if n == 1:
            self.kernel(1)(Qp, K, V, Op, stream=stream)
            return
        OP, LSEP = self._buffers(Qp, n, stream)
        self.kernel(n)(Qp, K, V, OP, LSEP, stream=stream)
        self.combine(n)(OP, LSEP, Op, stream=stream)

    def _buffers(self, Qp, n, stream):
        """OP and LSEP for ``n`` ranges, made on the launch's stream (safe to let go of
        there: :class:`tilewise.runtime.scratch.Scratch` keeps the 16 latest)."""
        b, hk, rows, d = Qp.shape
        return self._bufs.get(Qp, stream, (b, rows, n), lambda lib: (
            lib.empty(Qp, (b, hk, n, rows, d), "float32"),
            lib.empty(Qp, (b, hk, n, rows), "float32")))

    def __tilewise_simulate__(self, simulate, Q, K, V, O, **kw):  # noqa: E741
        import numpy as np

        Qp, Op, n = self._prepare(Q, K, V, O)
        b, hk, rows, d = Qp.shape
        if n == 1:
            return simulate(self.kernel(1), Qp, K, V, Op, **kw)
        OP = np.full((b, hk, n, rows, d), np.nan, np.float32)  # poisoned
        LSEP = np.full((b, hk, n, rows), np.nan, np.float32)
        simulate(self.kernel(n), Qp, K, V, OP, LSEP, **kw)
        return simulate(self.combine(n), OP, LSEP, Op, **kw)


def _build_combine(heads, DT, splits, dtype):
    """O = sum over the ranges s of 2^(LSEP_s - max) / sum_s' 2^(LSEP_s' - max) · OP_s (each
    range's O already normalised by its own sum; LSEP in log2 units): one warp a row, each
    lane a column every 32, the ranges added in order."""
    batch, seq_q = BATCH, SEQ_Q

    @T.prim_func
    def combine(OP_ptr: T.handle, LSEP_ptr: T.handle, O_ptr: T.handle):
        OP = T.match_buffer(OP_ptr, (batch, heads, splits, seq_q, DT), "float32")
        LSEP = T.match_buffer(LSEP_ptr, (batch, heads, splits, seq_q), "float32")
        O = T.match_buffer(O_ptr, (batch, heads, seq_q, DT), dtype)  # noqa: E741
        T.device_entry()
        bx = T.cta_id([T.ceildiv(batch * heads * seq_q, 4)])
        tid = T.thread_id([128])
        row = bx * 4 + tid // 32
        lane = tid % 32
        if row < batch * heads * seq_q:
            b = row // (heads * seq_q)
            h = row // seq_q % heads
            i = row % seq_q
            top: T.float32 = NEG_INF
            for s in range(splits):
                top = T.max(top, LSEP[b, h, s, i])
            total: T.float32 = 0.0
            for s in range(splits):
                total = total + T.exp2(LSEP[b, h, s, i] - top)
            for c in range(lane, DT, 32):
                acc: T.float32 = 0.0
                for s in range(splits):
                    acc = acc + T.exp2(LSEP[b, h, s, i] - top) * OP[b, h, s, i, c]
                O[b, h, i, c] = T.cast(acc / total, dtype)

    return combine


def _build(heads, DT, causal, dtype, Hk, scale, return_lse, BN, stages, o_in_q, C, ctas,
           splits=1):
    D = tile_head_dim(DT)  # TMA reads columns DT.. as zeros and drops them on the store
    batch, seq_q, seq_k = BATCH, SEQ_Q, SEQ_K
    group = heads // Hk
    sl2 = scale * LOG2E
    BM = 64 * C  # query rows per tile
    threads = 128 * (C + 1)  # consumers: warpgroups 0 .. C - 1; producer: warpgroup C
    # the producer keeps 24 registers; the consumers share the rest (at most 240)
    regs = min(240, (65536 - 128 * 24) // (128 * C) // 8 * 8)
    swz = widest_swizzle(D)
    q_layout = swizzled_tile(BM, D, 16, swz)
    kv_layout = swizzled_tile(BN, D, 16, swz, stages=stages)
    # K's ring viewed as (stages, D, BN): the B operand of S = Q Kᵀ, K-major
    kt_layout = kv_layout.permute((0, 2, 1), shape=(stages, BN, D))
    acc_s, acc_o, rows = wgmma_accumulator(BN), wgmma_accumulator(D), wgmma_accumulator_rows()
    p_frag = wgmma_a_fragment(BN)
    # S's registers seen as (64, 4, BN / 4): the middle axis is the 4 lanes that share a row,
    # so a sum over the last axis stays in each thread. l is kept as those per-lane partial
    # sums (rescaling is linear) and reduced across the lanes once per tile.
    by_lane = S[(4, 2, 8, 4, BN // 8, 2):(1 @ wid_in_wg, 2, 4 @ laneid, 1 @ laneid, 4, 1)]
    by_lane = by_lane.group((64, 4, BN // 4))
    per_lane = S[(4, 2, 8, 4, 1):(1 @ wid_in_wg, 1, 4 @ laneid, 1 @ laneid, 1)].group((64, 4, 1))
    rows3 = (S[(4, 2, 8, 1, 1):(1 @ wid_in_wg, 1, 4 @ laneid, 1, 1)] + R[4:1 @ laneid]).group(
        (64, 1, 1))
    q_bytes, kv_bytes = BM * D * 2, BN * D * 2

    @T.prim_func
    def attention(Q_ptr: T.handle, K_ptr: T.handle, V_ptr: T.handle, O_ptr: T.handle,
                  LSE_ptr: T.handle):
        Q = T.match_buffer(Q_ptr, (batch, heads, seq_q, DT), dtype)
        K = T.match_buffer(K_ptr, (batch, Hk, seq_k, DT), dtype)
        V = T.match_buffer(V_ptr, (batch, Hk, seq_k, DT), dtype)
        if splits > 1:  # each split's O (normalised, float32) and LSE, combined after
            OP = T.match_buffer(O_ptr, (batch, heads, splits, seq_q, DT), "float32")
            LSEP = T.match_buffer(LSE_ptr, (batch, heads, splits, seq_q), "float32")
        else:
            O = T.match_buffer(O_ptr, (batch, heads, seq_q, DT), dtype)  # noqa: E741
        if return_lse:
            LSE = T.match_buffer(LSE_ptr, (batch, heads, seq_q), "float32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([threads])
        wg = tid // 128  # 0 .. C - 1: consumers; C: the producer
        MB = (seq_q + BM - 1) // BM  # q-blocks per (batch, head)
        NB = (seq_k + BN - 1) // BN  # key blocks
        BH = batch * heads
        tiles = BH * MB * splits  # splits > 1: each tile's keys in `splits` ranges
        sched = Snake(tiles, first=bx, step=ctas)  # longest first (work_item), dealt in a snake
        Qs = T.alloc_buffer((BM, D), dtype, scope="shared.dyn", layout=q_layout, align=1024)
        Ks = T.alloc_buffer((stages, BN, D), dtype, scope="shared.dyn", layout=kv_layout,
                            align=1024)
        Kt = Ks.view(stages, D, BN, layout=kt_layout)
        Vs = T.alloc_buffer((stages, BN, D), dtype, scope="shared.dyn", layout=kv_layout,
                            align=1024)
        if o_in_q:
            Os = Qs
        else:
            Os = T.alloc_buffer((BM, D), dtype, scope="shared.dyn", layout=q_layout,
                                align=1024)
        q_full = T.alloc_shared((1,), "uint64")
        q_empty = T.alloc_shared((1,), "uint64")
        k_full = T.alloc_shared((stages,), "uint64")
        k_empty = T.alloc_shared((stages,), "uint64")
        v_full = T.alloc_shared((stages,), "uint64")
        v_empty = T.alloc_shared((stages,), "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(q_full[0]), 1)
            T.ptx.mbarrier.init(T.address_of(q_empty[0]), C)
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(k_full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(k_empty[s]), C)
                T.ptx.mbarrier.init(T.address_of(v_full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(v_empty[s]), C)
        T.cuda.cta_sync()
        if wg == C:  # ------------------------------------------------------------ producer
            T.ptx.setmaxnreg(False, 24)  # the producer gives its registers away
            if tid == 128 * C:  # one thread issues every load
                it = 0  # K/V blocks this CTA has gone through (the ring's position)
                tc = 0  # tiles this CTA has done (the Q barrier's phase)
                for rnd in sched.rounds():
                    t = sched.index(rnd)
                    if t >= tiles:  # this round's units ran out before this CTA
                        continue
                    b, h, hk, m0, j0, n_blocks, _ = split_item(t, splits, MB, NB, BH, heads,
                                                               group, seq_k, causal, BM, BN,
                                                               ctas)
                    T.ptx.mbarrier.try_wait(T.address_of(q_empty[0]), (tc + 1) % 2)
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(q_full[0]), q_bytes)
                    Tx.thread.copy_async(Qs[:, :], Q[b, h, m0:m0 + BM, 0:D], dispatch="tma",
                                         mbar=T.address_of(q_full[0]))
                    for j in range(n_blocks + 1):
                        if j < n_blocks:  # K block j
                            s = (it + j) % stages
                            T.ptx.mbarrier.try_wait(T.address_of(k_empty[s]),
                                                    ((it + j) // stages + 1) % 2)
                            T.ptx.mbarrier.arrive.expect_tx(T.address_of(k_full[s]), kv_bytes)
                            k0 = (j0 + j) * BN
                            Tx.thread.copy_async(Ks[s, :, :], K[b, hk, k0:k0 + BN, 0:D],
                                                 dispatch="tma", mbar=T.address_of(k_full[s]))
                        if j > 0:  # V block j - 1: it is read one step after K block j - 1
                            sv = (it + j - 1) % stages
                            T.ptx.mbarrier.try_wait(T.address_of(v_empty[sv]),
                                                    ((it + j - 1) // stages + 1) % 2)
                            T.ptx.mbarrier.arrive.expect_tx(T.address_of(v_full[sv]), kv_bytes)
                            v0 = (j0 + j - 1) * BN
                            Tx.thread.copy_async(Vs[sv, :, :], V[b, hk, v0:v0 + BN, 0:D],
                                                 dispatch="tma", mbar=T.address_of(v_full[sv]))
                    it = it + n_blocks
                    tc = tc + 1
        else:  # ------------------------------------------------------------------ consumers
            T.ptx.setmaxnreg(True, regs)  # ... and the consumers take them
            # registers: S (Sacc), P, O, O, per-row m, l, alpha and a scratch x
            sr = T.alloc_local((BN // 2,), "float32")
            Sacc = sr.view(64, BN, layout=acc_s)
            P = T.alloc_local((64, BN), dtype, layout=p_frag)
            orr = T.alloc_local((D // 2,), "float32")
            Oacc = orr.view(64, D, layout=acc_o)
            Ob = T.alloc_local((64, D), dtype, layout=acc_o)
            mr = T.alloc_local((2,), "float32")
            m = mr.view(64, 1, layout=rows)
            lr = T.alloc_local((2,), "float32")
            lsum = lr.view(64, 1, layout=rows)
            lpr = T.alloc_local((2,), "float32")
            lpart = lpr.view(64, 4, 1, layout=per_lane)  # l, per lane of the row
            ar = T.alloc_local((2,), "float32")
            alpha = ar.view(64, 1, layout=rows)
            alpha3 = ar.view(64, 1, 1, layout=rows3)
            S3 = sr.view(64, 4, BN // 4, layout=by_lane)
            yr = T.alloc_local((2,), "float32")
            y = yr.view(64, 4, 1, layout=per_lane)
            xr = T.alloc_local((2,), "float32")
            x = xr.view(64, 1, layout=rows)
            cw = wg  # this warpgroup's 64 rows of each tile
            leader = tid % 128 == 0
            lane = tid % 32
            if cw == C - 1:
                T.ptx.bar.arrive(1, 256)  # warpgroup 0 issues its GEMMs first
            it = 0
            tc = 0
            for rnd in sched.rounds():
                t = sched.index(rnd)
                if t >= tiles:
                    continue
                b, h, hk, m0, j0, n_blocks, sp = split_item(t, splits, MB, NB, BH, heads, group,
                                                            seq_k, causal, BM, BN, ctas)
                r0 = m0 + 64 * cw  # this warpgroup's first row
                # blocks from n_full on hold a masked score (the diagonal, or keys >= seq_k)
                if causal:
                    n_full = T.min((r0 + 1) // BN, seq_k // BN)
                else:
                    n_full = seq_k // BN
                Tx.wg.fill(m, NEG_INF)
                Tx.wg.fill(lpart, 0.0)
                Tx.wg.zero(Oacc)  # so the first rescale (by 0) and P V need no special case
                grew: T.bool = False  # some row of this warp moved its maximum: rescale O
                T.ptx.mbarrier.try_wait(T.address_of(q_full[0]), tc % 2)
                # One body, unrolled twice while parsing: phase 0 is block 0 (no P V to issue
                # yet), phase 1 the steady state, blocks 1 .. n_blocks - 1. Keeping `if`s out
                # of the issue sequence lets ptxas keep the wgmmas asynchronous.
                for phase in T.static_range(2):
                    for jj in range(n_blocks - 1 if phase else 1):
                        j = jj + phase  # the key block
                        s = (it + j) % stages
                        sv = (it + j + stages - 1) % stages
                        T.ptx.mbarrier.try_wait(T.address_of(k_full[s]), (it + j) // stages % 2)
                        if phase:
                            if grew:  # rescale O before adding P V
                                rescale(orr, ar, D)
                            T.ptx.mbarrier.try_wait(T.address_of(v_full[sv]),
                                                    (it + j - 1) // stages % 2)
                        for slot in T.static_range(C):  # ping-pong: warpgroup `slot` issues
                            if cw == slot:
                                T.ptx.bar.sync(1 + slot, 256)  # its turn on the tensor cores
                                T.ptx.wgmma.fence()
                                Tx.wg.gemm_async(Sacc, Qs[slot * 64:slot * 64 + 64, :],
                                                 Kt[s, :, :], accum=False)
                                T.ptx.wgmma.commit_group()
                                if phase:  # O += P V of the previous block, in flight with S
                                    Tx.wg.gemm_async(Oacc, P, Vs[sv, :, :], accum=True)
                                    T.ptx.wgmma.commit_group()
                                T.ptx.bar.arrive(1 + (slot + 1) % C, 256)  # the next one's
                        T.ptx.wgmma.wait_group(phase)  # S is ready (P V may still run)
                        if leader:
                            T.ptx.mbarrier.arrive(T.address_of(k_empty[s]))
                            if not o_in_q and j == n_blocks - 1:
                                T.ptx.mbarrier.arrive(T.address_of(q_empty[0]))  # Q is free
                        if j0 + j >= n_full:  # -inf: a key past seq_k or above the diagonal
                            for r in T.static_range(BN // 2):
                                col = (j0 + j) * BN + 8 * (r // 4) + 2 * (lane % 4) + r % 2
                                row = r0 + 16 * (tid // 32 % 4) + lane // 4 + 8 * (r // 2 % 2)
                                if causal:
                                    sr[r] = T.select((col >= seq_k) | (col > row), NEG_INF,
                                                     sr[r])
                                else:
                                    sr[r] = T.select(col >= seq_k, NEG_INF, sr[r])
                        # online softmax, in the log2 domain with the scale folded in
                        Tx.wg.max(x, Sacc, axes=-1)
                        for i in T.static_range(2):  # m moves only past m + RESCALE_AT / c
                            mi = T.select(xr[i] > mr[i] + RESCALE_AT / sl2, xr[i], mr[i])
                            ar[i] = mr[i] - mi  # 0 where m stays
                            mr[i] = mi
                        grew = T.ptx.vote_sync("any", (ar[0] != 0.0) | (ar[1] != 0.0))
                        Tx.wg.exp2(alpha, alpha, scale=sl2, ftz=True)  # 2^((m_old - m) c)
                        Tx.wg.mul(x, m, -sl2)
                        Tx.wg.fma(Sacc, Sacc, sl2, x)  # S c - m c
                        Tx.wg.exp2(Sacc, Sacc, ftz=True)  # P, unnormalised
                        Tx.wg.sum(y, S3, axes=-1)  # this lane's part of the row sums
                        Tx.wg.fma(lpart, lpart, alpha3, y)  # l = l alpha + rowsum(P)
                        if phase:
                            T.ptx.wgmma.wait_group(0)  # P V done: V and P are free
                            if leader:
                                T.ptx.mbarrier.arrive(T.address_of(v_empty[sv]))
                        Tx.wg.cast(P, Sacc)  # P, in registers, is the next wgmma's A operand
                # the last block's P V
                sv = (it + n_blocks - 1) % stages
                if grew:
                    rescale(orr, ar, D)
                T.ptx.mbarrier.try_wait(T.address_of(v_full[sv]),
                                        (it + n_blocks - 1) // stages % 2)
                for slot in T.static_range(C):
                    if cw == slot:
                        T.ptx.bar.sync(1 + slot, 256)
                        T.ptx.wgmma.fence()
                        Tx.wg.gemm_async(Oacc, P, Vs[sv, :, :], accum=True)
                        T.ptx.wgmma.commit_group()
                        T.ptx.bar.arrive(1 + (slot + 1) % C, 256)
                T.ptx.wgmma.wait_group(0)
                if leader:
                    T.ptx.mbarrier.arrive(T.address_of(v_empty[sv]))
                # epilogue: O / l -> shared (the output dtype) -> TMA store; and the LSE
                Tx.wg.sum(lsum, lpart, axes=1)  # the 4 lanes' parts: l per row
                if return_lse:
                    Tx.wg.log2(x, lsum)
                    Tx.wg.fma(x, m, sl2, x)
                    Tx.wg.mul(x, x, LN2)  # m scale + log(l): natural log
                    for i in T.static_range(2):
                        row = r0 + 16 * (tid // 32 % 4) + lane // 4 + 8 * i
                        if lane % 4 == 0 and row < seq_q:
                            LSE[b, h, row] = xr[i]
                if splits > 1:  # this split's LSE and normalised O, float32, for the combine
                    Tx.wg.log2(x, lsum)
                    Tx.wg.fma(x, m, sl2, x)
                    for i in T.static_range(2):
                        row = r0 + 16 * (tid // 32 % 4) + lane // 4 + 8 * i
                        if lane % 4 == 0 and row < seq_q:
                            LSEP[b, h, sp, row] = xr[i]  # log2 units: the combine's exp2
                    Tx.wg.reciprocal(lsum, lsum)
                    Tx.wg.mul(Oacc, Oacc, lsum)
                    Tx.wg.copy(OP[b, h, sp, r0:r0 + 64, 0:D], Oacc)
                    if o_in_q and leader:  # no store reads the Q tile: the next Q may land
                        T.ptx.mbarrier.arrive(T.address_of(q_empty[0]))
                    it = it + n_blocks
                    tc = tc + 1
                    continue
                Tx.wg.reciprocal(lsum, lsum)
                Tx.wg.mul(Oacc, Oacc, lsum)
                Tx.wg.cast(Ob, Oacc)
                if leader:
                    T.ptx.cp_async.bulk.wait_group_read(0)  # the last store has left Os
                T.ptx.bar.sync(1 + C + cw, 128)
                Tx.wg.copy(Os[cw * 64:cw * 64 + 64, :], Ob)
                T.ptx.fence.proxy_async()
                T.ptx.bar.sync(1 + C + cw, 128)
                if leader:
                    Tx.thread.copy_async(O[b, h, r0:r0 + 64, 0:D], Os[cw * 64:cw * 64 + 64, :],
                                         dispatch="tma")
                    T.ptx.cp_async.bulk.commit_group()
                    if o_in_q:  # the next Q may land once the store has read the tile
                        T.ptx.cp_async.bulk.wait_group_read(0)
                        T.ptx.mbarrier.arrive(T.address_of(q_empty[0]))
                it = it + n_blocks
                tc = tc + 1
            if leader:
                T.ptx.cp_async.bulk.wait_group(0)

    return attention if return_lse or splits > 1 else _without_lse(attention)


def make_attention_backward(*args, **kwargs):
    """The backward pass, with ``make_attention``'s arguments: an object called as
    ``bwd(Q, K, V, O, dO, LSE, dQ, dK, dV)`` (examples/attention_backward.py)."""
    return _sibling("attention_backward").make_attention_backward(*args, **kwargs)


def _sibling(name: str):
    """A module of this folder, loaded by path (the examples are files, not a package)."""
    import importlib.util
    import pathlib
    import sys

    key = f"_tilewise_example_{name}"
    if key not in sys.modules:
        path = pathlib.Path(__file__).with_name(f"{name}.py")
        spec = importlib.util.spec_from_file_location(key, path)
        sys.modules[key] = mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    return sys.modules[key]


def _without_lse(func):
    """The kernel without its LSE parameter (``return_lse=False`` never binds it)."""
    import dataclasses

    return dataclasses.replace(func, params=func.params[:4] + func.params[5:])  # sizes stay


def _validate(batch, heads, seq_q, seq_k, head_dim, dtype, kv_heads) -> None:
    if dtype not in ("bfloat16", "float16"):
        raise config_error(f"make_attention takes bfloat16 or float16, not {dtype!r}")
    if head_dim not in HEAD_DIMS:
        raise config_error(f"head_dim={head_dim}: a multiple of 8 from 8 to 256 (TMA's rows are "
                           "16-byte multiples and O's width is at most 256)")
    for name, v in (("batch", batch), ("heads", heads), ("seq_q", seq_q), ("seq_k", seq_k)):
        if not isinstance(v, int) or v < 1:
            raise config_error(f"{name}={v!r} must be a positive int")
    if kv_heads is not None and (kv_heads < 1 or heads % kv_heads):
        raise config_error(f"kv_heads={kv_heads} must divide heads={heads}")




@T.inline
def rescale(orr, ar, D):
    """O *= alpha, per thread: accumulator register v of a 64 x D wgmma tile holds row
    ``8 * (v // 2 % 2)`` of the thread's pair of rows (``wgmma_accumulator``)."""
    for v in T.static_range(D // 2):
        orr[v] = orr[v] * ar[v // 2 % 2]


@T.inline
def work_item(t, MB, NB, BH, heads, group, seq_k, causal, BM, BN, ctas):
    """Work item ``t`` of the persistent loop -> (batch, head, its key/value head, first
    row, key blocks to visit): the one order the producer and both consumers walk, written
    once and parsed into each role's loop. Without ``causal`` every tile is as long as the
    next and they go (batch, head) by (batch, head): the CTAs at work share its K and V in
    L2. Causal tiles see only the key blocks up to their diagonal and go longest first, so
    that the snake deal (``tilewise.sched.Snake``) balances the CTAs' work: with few heads
    (``BH``, batch x heads, at most a quarter of the CTAs, so that each head still has
    several CTAs streaming its K and V together) by q-block *level* across all heads (every
    head's last q-block, then the ones before them, ...), else head by head, longest first
    within each head (a round of CTAs then spans whole heads)."""
    if causal:
        by_level = BH * 4 <= ctas
        bh = T.select(by_level, t % BH, t // MB)
        mb = MB - 1 - T.select(by_level, t // BH, t % MB)
    else:
        bh = t // MB
        mb = t % MB
    b = bh // heads
    h = bh % heads
    m0 = mb * BM
    if causal:  # the key blocks the tile's rows see; the rest are skipped
        n_blocks = T.min(NB, (T.min(m0 + BM, seq_k) + BN - 1) // BN)
    else:
        n_blocks = NB
    return b, h, h // group, m0, n_blocks


@T.inline
def split_item(t, splits, MB, NB, BH, heads, group, seq_k, causal, BM, BN, ctas):
    """Work item ``t`` with the keys of each tile cut in ``splits`` ranges -> (batch, head,
    key/value head, first row, first key block, key blocks, split): the ranges of one tile
    are consecutive items (CTAs that run together read one head's K and V)."""
    if splits > 1:
        b, h, hk, m0, n_all = work_item(t // splits, MB, NB, BH, heads, group, seq_k, causal,
                                        BM, BN, ctas)
        sp = t % splits
        j0 = sp * n_all // splits
        n_blocks = (sp + 1) * n_all // splits - j0
    else:
        b, h, hk, m0, n_blocks = work_item(t, MB, NB, BH, heads, group, seq_k, causal, BM, BN,
                                           ctas)
        sp = 0
        j0 = 0
    return b, h, hk, m0, j0, n_blocks, sp


# ---- `tilewise run examples/attention.py` and the tests: a small causal GQA case ----------
SHAPE = (1, 2, 160, 200, 64)  # batch, heads, seq_q, seq_k, head_dim: tails in both
KV_HEADS = 1
TARGET = "sm_90a"
attention = make_attention(*SHAPE, causal=True, kv_heads=KV_HEADS, return_lse=True,
                           num_sms=4)
# P is rounded to 16 bits before P V (2^-9 of each weight, bf16) and O once more: against
# float64, |O - ref| <= 2^-7 |ref| + 2^-6 for inputs of unit variance; the LSE is float32.
RTOL = 2.0 ** -7
ATOL = 2.0 ** -6


def inputs(rng, shape=SHAPE, dtype="bfloat16", kv_heads=KV_HEADS):
    """Random Q, K, V of unit variance (never zeros), O and LSE poisoned with NaN."""
    import ml_dtypes
    import numpy as np

    d = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    b, h, sq, sk, hd = shape
    hk = kv_heads or h
    return [rng.standard_normal((b, h, sq, hd)).astype(d),
            rng.standard_normal((b, hk, sk, hd)).astype(d),
            rng.standard_normal((b, hk, sk, hd)).astype(d),
            np.full((b, h, sq, hd), np.nan, d), np.full((b, h, sq), np.nan, np.float32)]


def reference(q, k, v, o, lse, causal=True, scale=None):
    """O and LSE in float64 as torch SDPA defines them (top-left causal mask, GQA by repeating
    the key/value heads), O rounded to the inputs' dtype."""
    import numpy as np

    out, l_ = attention_reference(q, k, v, causal, scale)
    return [q, k, v, out.astype(o.dtype), l_.astype(np.float32)]


def attention_reference(q, k, v, causal: bool, scale: float | None = None):
    """(O, LSE) in float64 from numpy arrays (batch, heads, seq, head_dim)."""
    import numpy as np

    q, k, v = (np.asarray(x).astype(np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        above = np.arange(k.shape[2])[None, :] > np.arange(q.shape[2])[:, None]
        s = np.where(above, -np.inf, s)
    mx = s.max(-1, keepdims=True)
    e = np.exp(s - mx)
    total = e.sum(-1, keepdims=True)
    return e @ v / total, (np.log(total) + mx)[..., 0]
