"""The rows of the warp collectives (:mod:`tilewise.ptx.table`): shuffle and vote."""

from __future__ import annotations

from ..ir import dtype as dt
from .op import PtxOp
from .op import param as _p
from .op import word_value


ROWS = [
    # ---- warp shuffle, PTX ISA §9.7.9.6 (shfl.sync)
    PtxOp("ptx.shfl_sync", (_p("mode", "str", choices=("up", "down", "bfly", "idx")),
                            _p("value"), _p("b"), _p("c", "value", None),
                            _p("mask", "value", None, dtype=dt.uint32)),
          "shfl.sync.{mode}.b32 d, a, b, c, membermask", None,
          result=lambda v: v["value"].dtype,
          check=word_value("shuffles move 32-bit values", "shuffle"),
          doc="exchange a 32-bit value between the lanes of a warp: lane i reads the "
              "value of lane i-b (up), i+b (down), i^b (bfly) or b (idx) when that "
              "lane is within the segment c says (default: the whole warp, c = 0 for "
              "up and 31 otherwise); otherwise its own. mask (default all lanes) names "
              "the lanes that execute it together; they must all be active"),
    # ---- warp vote, PTX ISA §9.7.13.1 (vote.sync)
    PtxOp("ptx.vote_sync", (_p("mode", "str", choices=("any", "all", "uni", "ballot")),
                            _p("pred"), _p("mask", "value", None, dtype=dt.uint32)),
          "vote.sync.{mode}.pred d, p, membermask  (ballot: vote.sync.ballot.b32)", None,
          result=lambda v: dt.uint32 if getattr(v["mode"], "value", v["mode"]) == "ballot"
          else dt.bool_,
          doc="a predicate of every lane of a warp, combined: any (true in some lane), "
              "all (in every lane), uni (the same in every lane) -> bool, or ballot -> "
              "uint32, bit i the predicate of lane i; the same value in every lane. "
              "mask (default all lanes) names the lanes that execute it together; they "
              "must all be active"),
]
