"""Ahead-of-time C launchers: ``tilewise compile FILE:FUNC --emit c -o kernel.c`` writes
``kernel.c`` and ``kernel.h``, which embed the cubin and launch it through the CUDA driver
API, for programs that run a tilewise kernel without Python (Triton's AOT tool does the
same for its kernels).

The header declares, for a kernel ``k``::

    CUresult tw_k_load(void);     /* loads the cubin into the current context (once) */
    void tw_k_unload(void);
    CUresult tw_k_launch(CUstream stream, CUdeviceptr A, ..., float alpha, int32_t M, ...);

``tw_k_launch`` takes the kernel's parameters in order (a ``CUdeviceptr`` per array, the
C type of each scalar; 16-bit floats as their ``uint16_t`` bits) and then its symbolic sizes
by name (the Python launcher reads them from the arrays; C arrays carry no shape). It
loads the module on first use, refuses a GPU the target cannot run on
(``CUDA_ERROR_NO_BINARY_FOR_GPU``), computes the grid from the sizes (an empty or
non-cluster-multiple grid is ``CUDA_ERROR_INVALID_VALUE``), encodes the TMA tensor maps
with ``cuTensorMapEncodeTiled`` exactly as the Python launcher does, and calls
``cuLaunchKernel`` (``cuLaunchKernelEx`` with programmatic stream serialization for a
kernel compiled with ``programmatic=True``, as the Python launcher launches it). Arrays
are the caller's to check: C-contiguous (or as the kernel's strides say), 16-byte aligned,
of the kernel's dtype and shape.

The source includes ``<cuda.h>`` when the compiler finds it and otherwise declares the
few driver entry points it calls itself (their ABI is stable); link with ``-lcuda``. The
emitter reads the saved-kernel description (:mod:`tilewise.runtime.saved`), so a compiled
and a loaded kernel emit the same C.
"""

from __future__ import annotations

import re

from .errors import CompileError

_CTYPES = {"bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
           "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
           "uint32": "uint32_t", "uint64": "uint64_t", "float16": "uint16_t",
           "bfloat16": "uint16_t", "float32": "float", "float64": "double",
           "float8_e4m3": "uint8_t", "float8_e5m2": "uint8_t"}
_BINOPS = {"+": "+", "-": "-", "*": "*", "&": "&", "|": "|", "^": "^", "<<": "<<",
           ">>": ">>"}

_FALLBACK = """\
#if defined(__has_include)
#  if __has_include(<cuda.h>)
#    include <cuda.h>
#    define TW_HAVE_CUDA_H 1
#  endif
#endif
#ifndef TW_HAVE_CUDA_H
/* The driver API subset used here, as <cuda.h> declares it (stable ABI; link -lcuda). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
#ifdef __cplusplus
typedef struct CUtensorMap_st { alignas(128) uint64_t opaque[16]; } CUtensorMap;
#else
typedef struct CUtensorMap_st { _Alignas(128) uint64_t opaque[16]; } CUtensorMap;
#endif
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED 14
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuFuncSetAttribute(CUfunction hfunc, int attrib, int value);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, CUstream stream,
                        void **params, void **extra);
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct CUlaunchAttribute_st {
  int id;
  char pad[4];
  union { char pad[64]; unsigned long long align; int programmaticStreamSerializationAllowed; }
      value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                          void **extra);
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, int dtype, uint32_t rank, void *address,
                                const uint64_t *dims, const uint64_t *strides,
                                const uint32_t *box, const uint32_t *elem_strides,
                                int interleave, int swizzle, int l2_promotion, int oob_fill);
#endif
"""


def emit_c(header: dict, cubin: bytes, stem: str) -> tuple[str, str]:
    """``(kernel.h, kernel.c)`` for a saved-kernel description; ``stem`` names the header
    the source includes."""
    name = "tw_" + re.sub(r"\W", "_", header["kernel"])
    args = _arguments(header)
    proto = f"CUresult {name}_launch(CUstream stream{''.join(', ' + a for a, _ in args)})"
    guard = "TW_" + re.sub(r"\W", "_", stem).upper() + "_H"
    h = "\n".join([
        f"/* {stem}.h: the tilewise kernel {header['kernel']} for {header['target']}, "
        f"generated by tilewise {header['tilewise']}. */",
        f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", _FALLBACK,
        "#ifdef __cplusplus", 'extern "C" {', "#endif",
        "/* Load the kernel into the current CUDA context (the first launch does it too). */",
        f"CUresult {name}_load(void);", f"void {name}_unload(void);",
        f"/* {_launch_doc(header)} */", proto + ";",
        "#ifdef __cplusplus", "}", "#endif", f"#endif  /* {guard} */", ""])
    c = "\n".join([f'#include "{stem}.h"', "", _cubin_array(name, cubin), "",
                   _load(name, header), "", _launch(name, header, args, proto), ""])
    return h, c


def _arguments(header) -> list[tuple[str, str]]:
    """``(C declaration, C name)`` of every launch argument after the stream."""
    out = []
    for p in header["params"]:
        if "buffer" in p:
            out.append((f"CUdeviceptr {p['buffer']}", p["buffer"]))
        else:
            out.append((f"{_CTYPES[p['dtype']]} {p['name']}", p["name"]))
    for s in header["sizes"]:
        out.append((f"{_CTYPES[s['dtype']]} {s['name']}", s["name"]))
    return out


def _launch_doc(header) -> str:
    arrays = [f"{p['buffer']} ({p['dtype']}, {_shape(p['shape'], header)})"
              for p in header["params"] if "buffer" in p]
    sizes = ", ".join(s["name"] for s in header["sizes"]) or "none"
    return (f"Launch on `stream`: device arrays {', '.join(arrays) or 'none'}, C-contiguous "
            f"and 16-byte aligned; symbolic sizes: {sizes}.")


def _shape(shape, header) -> str:
    return "(" + ", ".join(_text(s, header) for s in shape) + ")"


def _text(j, header) -> str:
    """A size expression (saved form) as Python-like text, for comments."""
    if isinstance(j, int):
        return str(j)
    if "int" in j:
        return str(j["int"])
    if "size" in j:
        return header["sizes"][j["size"]]["name"]
    if "unary" in j:
        return f"-{_text(j['a'], header)}"
    if "cast" in j:
        return _text(j["value"], header)
    return f"({_text(j['a'], header)} {j['op']} {_text(j['b'], header)})"


def _c(j, header) -> str:
    """A size expression (saved form) as C (int64_t arithmetic, Python's floor division)."""
    if isinstance(j, int):
        return str(j)
    if "int" in j:
        return str(j["int"])
    if "size" in j:
        return f"((int64_t){header['sizes'][j['size']]['name']})"
    if "unary" in j:
        return f"(-{_c(j['a'], header)})"
    if "cast" in j:
        return f"((int64_t)({_c(j['value'], header)}))"
    a, b, op = _c(j["a"], header), _c(j["b"], header), j["op"]
    if op in _BINOPS:
        return f"({a} {_BINOPS[op]} {b})"
    if op in ("//", "%", "min", "max"):
        fn = {"//": "tw_floordiv", "%": "tw_floormod", "min": "tw_min", "max": "tw_max"}[op]
        return f"{fn}({a}, {b})"
    raise CompileError(f"--emit c cannot write the size operation {op!r} in C")


def _cubin_array(name: str, cubin: bytes) -> str:
    rows = [", ".join(f"0x{b:02x}" for b in cubin[i:i + 16]) for i in range(0, len(cubin), 16)]
    body = ",\n  ".join(rows)
    return (f"static const _Alignas(16) unsigned char {name}_cubin[{len(cubin)}] = {{\n  "
            f"{body}\n}};")


def _runs_on(header) -> str:
    """The C condition on ``major``/``minor`` for the target (Target.runs_on)."""
    from .target import Target

    t = Target(header["target"])
    arch = "(major * 10 + minor)"
    if t.suffix == "":
        return f"{arch} >= {t.arch}"
    if t.suffix == "f":
        return f"major == {t.family} && {arch} >= {t.arch}"
    return f"{arch} == {t.arch}"


def _load(name: str, header) -> str:
    smem = header["dynamic_smem"]
    lines = [
        "/* Python's floor division and modulo, in which the sizes' expressions are written */",
        "static inline int64_t tw_floordiv(int64_t a, int64_t b) { int64_t q = a / b; "
        "return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }",
        "static inline int64_t tw_floormod(int64_t a, int64_t b) "
        "{ return a - tw_floordiv(a, b) * b; }",
        "static inline int64_t tw_min(int64_t a, int64_t b) { return a < b ? a : b; }",
        "static inline int64_t tw_max(int64_t a, int64_t b) { return a > b ? a : b; }",
        "", f"static CUmodule {name}_module;", f"static CUfunction {name}_function;", "",
        f"CUresult {name}_load(void) {{",
        "  CUdevice dev; int major = 0, minor = 0; CUresult r;",
        f"  if ({name}_function) return CUDA_SUCCESS;",
        "  if ((r = cuCtxGetDevice(&dev)) != CUDA_SUCCESS) return r;",
        "  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);",
        "  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);",
        f"  if (!({_runs_on(header)})) return CUDA_ERROR_NO_BINARY_FOR_GPU;  "
        f"/* {header['target']} */",
        f"  if ((r = cuModuleLoadData(&{name}_module, {name}_cubin)) != CUDA_SUCCESS) return r;",
        f"  if ((r = cuModuleGetFunction(&{name}_function, {name}_module, "
        f"\"{header['entry']}\")) != CUDA_SUCCESS) return r;"]
    if smem:
        lines.append(f"  if ((r = cuFuncSetAttribute({name}_function, "
                     f"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {smem})) != "
                     "CUDA_SUCCESS) return r;")
    if header["options"].get("nonportable_cluster"):
        lines.append(f"  if ((r = cuFuncSetAttribute({name}_function, "
                     "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)) != "
                     "CUDA_SUCCESS) return r;")
    lines += ["  return CUDA_SUCCESS;", "}", "",
              f"void {name}_unload(void) {{",
              f"  if ({name}_module) cuModuleUnload({name}_module);",
              f"  {name}_module = 0; {name}_function = 0;", "}"]
    return "\n".join(lines)


def _launch(name: str, header, args, proto: str) -> str:
    grid = [_c(g, header) for g in header["grid"]]
    lines = [proto + " {", "  CUresult r;",
             f"  if (!{name}_function && (r = {name}_load()) != CUDA_SUCCESS) return r;"]
    lines += [f"  int64_t g{d} = {g};" for d, g in enumerate(grid)]
    lines.append("  if (g0 <= 0 || g1 <= 0 || g2 <= 0) return CUDA_ERROR_INVALID_VALUE;")
    cluster = header["options"].get("cluster_dim")
    if cluster:
        cond = " || ".join(f"g{d} % {c}" for d, c in enumerate(cluster) if c > 1)
        if cond:
            lines.append(f"  if ({cond}) return CUDA_ERROR_INVALID_VALUE;")
    for i, m in enumerate(header["tensor_maps"]):
        lines += _tensor_map(i, m, header)
    slots = [f"&{n}" for _, n in args] + [f"&map{i}" for i in range(len(header["tensor_maps"]))]
    lines.append(f"  void *params[] = {{{', '.join(slots) or '0'}}};")
    if header["options"].get("programmatic"):
        return "\n".join(lines + _programmatic_launch(name, header) + ["}"])
    lines.append(f"  return cuLaunchKernel({name}_function, (unsigned)g0, (unsigned)g1, "
                 f"(unsigned)g2, {header['block']}, 1, 1, {header['dynamic_smem']}, stream, "
                 "params, 0);")
    lines.append("}")
    return "\n".join(lines)


def _programmatic_launch(name: str, header) -> list[str]:
    """``cuLaunchKernelEx`` with programmatic stream serialization, as the Python launcher
    launches a kernel compiled with ``programmatic=True``: it may start while the kernel
    ahead of it on the stream finishes (it waits for it with ``griddepcontrol.wait``)."""
    return [
        "  /* programmatic dependent launch (compiled with programmatic=True) */",
        "  CUlaunchAttribute attr = {0};",
        "  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;",
        "  attr.value.programmaticStreamSerializationAllowed = 1;",
        "  CUlaunchConfig cfg = {0};",
        "  cfg.gridDimX = (unsigned)g0; cfg.gridDimY = (unsigned)g1; "
        "cfg.gridDimZ = (unsigned)g2;",
        f"  cfg.blockDimX = {header['block']}; cfg.blockDimY = 1; cfg.blockDimZ = 1;",
        f"  cfg.sharedMemBytes = {header['dynamic_smem']}; cfg.hStream = stream;",
        "  cfg.attrs = &attr; cfg.numAttrs = 1;",
        f"  return cuLaunchKernelEx(&cfg, {name}_function, params, 0);"]


def _tensor_map(i: int, m: dict, header) -> list[str]:
    """``cuTensorMapEncodeTiled`` of saved map ``m`` (as runtime/tensormap.py calls it)."""
    from .ptx import tma

    buf = header["params"][m["param"]]["buffer"]
    rank = len(m["box"])
    dims = ", ".join(f"(uint64_t){_c(d, header)}" for d in m["dims"])
    strides = ", ".join(f"(uint64_t){_c(s, header)} * {m['elem_bytes']}"
                        for s in m["strides"]) or "0"
    return [f"  CUtensorMap map{i};",
            f"  {{ const uint64_t dims[] = {{{dims}}};",
            f"    const uint64_t strides[] = {{{strides}}};",
            f"    const uint32_t box[] = {{{', '.join(map(str, m['box']))}}};",
            f"    const uint32_t ones[] = {{{', '.join(['1'] * rank)}}};",
            f"    r = cuTensorMapEncodeTiled(&map{i}, {tma.DATA_TYPES[m['dtype']]}, {rank}, "
            f"(void *){buf}, dims, strides, box, ones, 0, {tma.SWIZZLE_MODES[m['swizzle']]}, "
            f"{tma.L2_PROMOTION[m['l2_promotion']]}, {tma.OOB_FILL[m['oob']]});",
            "    if (r != CUDA_SUCCESS) return r; }"]
