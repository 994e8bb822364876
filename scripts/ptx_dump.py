"""Dump the lowered IR, PTX and dynamic shared memory of every example and test kernel at
sm_90a and sm_100a, one file per kernel and target (used by scripts/ptx-diff).

Usage: python scripts/ptx_dump.py ROOT OUTDIR   (ROOT holds src/, examples/, tests/)."""

import importlib.util
import os
import sys

TESTS = ("dispatch", "tma", "gemm", "tcgen05", "compute", "core", "sim")
FACTORIES = {  # example file -> (factory, arguments) beyond its module-level kernels
    "softmax": [("make_softmax_smem", (64, 512))],
    "rmsnorm": [("make_rmsnorm_smem", (64, 512))],
    "gemm_hopper": [("make_gemm", (256, 256, 128)), ("make_gemm", (200, 136, 72))],
    "gemm_blackwell": [("make_gemm", (256, 256, 256))],
    "tiled_copy": [("make_pipelined_copy", (64, 2048))],
    "bulk_copy": [("make_bulk_stream", (64, 2048))],
}


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
        return f"ERROR {type(e).__name__}: {e}\n"


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
