"""A kernel factory's argument that no kernel it builds can serve is a ``ConfigError``: a
TilewiseError located at the line that called the factory (with that line and a caret), and
a ValueError, Python's convention for a bad argument value."""

import pytest

import tilewise as tw
from exload import load_example

CASES = [  # (example, call, what the message says)
    ("gemm_hopper", lambda m: m.make_gemm(128, 128, 128, producer="thread"),  # <- gemm_hopper
     "producer='thread': 'warpgroup' or 'warp'"),
    ("attention", lambda m: m.make_attention(1, 1, 64, 64, 36),  # <- attention
     "head_dim=36: a multiple of 8 from 8 to 256"),
    ("gemm_fp8", lambda m: m.make_gemm_fp8(128, 128, 128, scaling="rows"),  # <- gemm_fp8
     "scaling='rows': one of"),
    ("gemm_grouped", lambda m: m.make_grouped_gemm_fp8(2, 128, 128, layout="ragged"),  # <- gemm_grouped
     "layout='ragged': 'contiguous' or 'masked'"),
]


ROW_CASES = [  # (id, example, call, what the message says): the row kernels' factories
    ("softmax-dtype", "softmax", lambda m: m.make_softmax(4, 100, "int8"),  # <- softmax-dtype
     "dtype 'int8': the row kernels take float16, bfloat16, float32"),
    ("rmsnorm-cols", "rmsnorm", lambda m: m.make_rmsnorm(4, 0, "float16"),  # <- rmsnorm-cols
     "4 x 0: a row kernel needs at least one row and one column"),
    ("softmax-threads", "softmax", lambda m: m.softmax_kernel(4, 64, threads=2048),  # <- softmax-threads
     "threads=2048: at most 1024 a CTA"),
    ("softmax-bwd-chunk", "softmax_backward",
     lambda m: m.make_softmax_backward(4, 100, "bfloat16", chunk=0),  # <- softmax-bwd-chunk
     "chunk=0: a count, at least 1"),
    ("rmsnorm-grads-dtype", "rmsnorm_backward",
     lambda m: m.make_rmsnorm_grads(4, 100, "int8"),  # <- rmsnorm-grads-dtype
     "dtype 'int8'"),
    ("rmsnorm-weight-rows", "rmsnorm_backward",
     lambda m: m.make_rmsnorm_weight_grad(0, 100, "float16"),  # <- rmsnorm-weight-rows
     "0 x 100: a row kernel needs at least one row"),
    ("rmsnorm-fused-shape", "rmsnorm_backward",
     lambda m: m.make_rmsnorm_backward_fused(16384, 50257, "bfloat16"),  # <- rmsnorm-fused-shape
     "a fused RMSNorm backward takes"),
]


def _line_of(marker: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if line.rstrip().endswith(marker))


@pytest.mark.parametrize("marker,example,call,message",
                         [(c[0], *c) for c in CASES] + ROW_CASES,
                         ids=[c[0] for c in CASES] + [c[0] for c in ROW_CASES])
def test_a_factory_argument_error_names_the_callers_line(marker, example, call, message):
    mod = load_example(example)
    with pytest.raises(tw.ConfigError) as info:
        call(mod)
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, tw.TilewiseError)
    assert message in e.message
    assert e.span is not None and e.span.file == __file__
    assert e.span.line == _line_of(f"# <- {marker}"), str(e)
    text = str(e)
    assert text.startswith(f"{__file__}:{e.span.line}:0: config error: ")
    assert "m." in text and "^" in text  # the caller's line, and a caret under it
    assert "examples/" not in text.split("\n")[0].split(": config error")[0]
