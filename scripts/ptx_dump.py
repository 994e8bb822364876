"""Dump the lowered IR, PTX and dynamic shared memory of every example and test kernel at
sm_90a and sm_100a, one file per kernel and target (used by scripts/ptx-diff).

Usage: python scripts/ptx_dump.py ROOT OUTDIR   (ROOT holds src/, examples/, tests/)."""

import importlib.util
import os
import re
import sys

TESTS = ("dispatch", "tma", "gemm", "tcgen05", "compute", "core", "sim")
FACTORIES = {  # example file -> (factory, arguments) beyond its module-level kernels
    "softmax": [("make_softmax_smem", (64, 512))],
    "rmsnorm": [("make_rmsnorm_smem", (64, 512))],
    "gemm_hopper": [("make_gemm", (256, 256, 128)), ("make_gemm", (200, 136, 72))],
    "gemm_blackwell": [("make_gemm", (256, 256, 256))],
    "tiled_copy": [("make_pipelined_copy", (64, 2048))],
    "bulk_copy": [("make_bulk_stream", (64, 2048))],
    # (M, N, K, scaling, fast_accum, bm, bn, stages, num_sms, cluster, share, overlap)
    "gemm_fp8": [("make_gemm_fp8", args) for args in (
        (), (200, 136, 272, "row"), (200, 136, 272, "tensor"),
        (200, 136, 272, "row", True), (200, 136, 272, "tensor", True),
        (256, 256, 512, "block", False, None, None, None, 4, None, None, True),
        (256, 256, 512, "row", False, None, None, None, 4, None, None, True),
        (512, 512, 256, "block", False, 256, 128, None, 4),
        (512, 512, 256, "block", False, 128, 256, None, 4),
        (512, 512, 256, "row", False, 128, 256, None, 4),
        (512, 512, 256, "tensor", True, 256, 128, None, 4),
        (64, 512, 256, "block", False, 64, 128, None, 4),
        (512, 512, 256, "block", False, 128, 128, None, 4, 2, "b"),
        (512, 512, 256, "block", False, 128, 128, None, 4, 2, "a"))],
    # (groups, N, K, layout, M, expected_m, overlap): tiles 128 x 128, 64 x 32, 128 x 256
    "gemm_grouped": [(f"make_grouped_gemm_{e}", args) for e in ("fp8", "bf16") for args in (
        (3, 136, 272, "contiguous"), (3, 136, 272, "masked"),
        (3, 136, 272, "contiguous", 384), (3, 136, 272, "masked", None, 128),
        (8, 4096, 7168, "contiguous", 8192), (8, 4096, 7168, "masked", None, 1024))] + [
        ("make_grouped_gemm_fp8", (3, 136, 272, "contiguous", None, None, True)),
        ("make_grouped_gemm_fp8", (3, 136, 272, "masked", None, 128, True))],
}
# where an error stands: its line and column, the T.inline helpers it is in
LOCATION = re.compile(r"(?<=\.py):\d+:\d+|\n *in the T\.inline helper .*(?=\n)")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _files(root):
    ex = os.path.join(root, "examples")
    out = [os.path.join(ex, f) for f in sorted(os.listdir(ex)) if f.endswith(".py")]
    for sub in TESTS:
        d = os.path.join(root, "tests", sub)
        out += [os.path.join(d, f) for f in sorted(os.listdir(d))
                if f.startswith(("kernels", "ckernels", "test_")) and f.endswith(".py")]
    return out


def _kernels(mod, base):
    from tilewise.ir.stmt import PrimFunc

    found = [(k, v) for k, v in vars(mod).items() if isinstance(v, PrimFunc)]
    for fname, args in FACTORIES.get(base, []):
        try:
            found.append((f"{fname}{args}".replace(" ", ""), getattr(mod, fname)(*args)))
        except Exception as e:  # noqa: BLE001 - reported, the dump goes on
            print("factory failed", base, fname, e, file=sys.stderr)
    return found


def _text(tw, func, target) -> str:
    try:
        k = tw.compile(func, target=target)
        return (k.source("lowered") + "\n=====PTX\n" + k.source("ptx")
                + f"\n=====dynamic shared memory {k.dynamic_smem}\n")
    except Exception as e:  # noqa: BLE001 - an error kernel: its message is the output
        # without its place: a refactor that moves a line or makes a helper changes no code
        return f"ERROR {type(e).__name__}: {LOCATION.sub('', str(e))}\n"


def main(root, out):
    sys.path.insert(0, os.path.join(root, "src"))
    os.environ["TILEWISE_CACHE"] = "0"
    import tilewise as tw

    os.makedirs(out, exist_ok=True)
    n = 0
    for path in _files(root):
        rel = os.path.relpath(path, root).replace("/", "_")[:-3]
        if "/tests/" in path:
            for d in (os.path.dirname(path), os.path.join(root, "tests")):
                if d not in sys.path:
                    sys.path.insert(0, d)
        try:
            mod = _load(path, rel)
        except Exception as e:  # noqa: BLE001 - a test module that needs pytest's setup
            print("skipped", rel, type(e).__name__, e, file=sys.stderr)
            continue
        for name, func in _kernels(mod, os.path.basename(path)[:-3]):
            for target in ("sm_90a", "sm_100a"):
                with open(os.path.join(out, f"{rel}.{name}.{target}.txt"), "w") as f:
                    f.write(_text(tw, func, target))
                n += 1
    print(f"dumped {n} kernel/target pairs to {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
