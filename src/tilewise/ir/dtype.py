"""Scalar data types: one table, every other mapping derived from it."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScriptError, did_you_mean


@dataclass(frozen=True)
class DataType:
    """A scalar type. ``kind`` is one of int, uint, float, bool, handle."""

    name: str
    kind: str
    bits: int

    @property
    def bytes(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def numpy(self):
        """The numpy dtype holding this type's values (bit-exact for the narrow floats)."""
        import numpy as np

        special = _NUMPY_SPECIAL.get(self.name)
        if special is not None:
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, special))
        return np.dtype(self.name if self.name != "handle" else "uint64")


_TABLE = [
    ("bool", "bool", 1),
    ("int8", "int", 8),
    ("int16", "int", 16),
    ("int32", "int", 32),
    ("int64", "int", 64),
    ("uint8", "uint", 8),
    ("uint16", "uint", 16),
    ("uint32", "uint", 32),
    ("uint64", "uint", 64),
    ("float16", "float", 16),
    ("bfloat16", "float", 16),
    ("float32", "float", 32),
    ("float64", "float", 64),
    ("float8_e4m3", "float", 8),
    ("float8_e5m2", "float", 8),
    ("handle", "handle", 64),
]

DTYPES: dict[str, DataType] = {name: DataType(name, kind, bits) for name, kind, bits in _TABLE}
_NUMPY_SPECIAL = {"bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn",
                  "float8_e5m2": "float8_e5m2"}
_ALIASES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
            "float8_e4m3fn": "float8_e4m3", "e4m3": "float8_e4m3", "e5m2": "float8_e5m2",
            "half": "float16", "float": "float32", "int": "int32"}

bool_ = DTYPES["bool"]
int32 = DTYPES["int32"]
int64 = DTYPES["int64"]
uint32 = DTYPES["uint32"]
uint64 = DTYPES["uint64"]
float32 = DTYPES["float32"]
handle = DTYPES["handle"]
#: A TMA tensor map (128 opaque bytes), the type of the hidden kernel parameters the ``tma``
#: variant adds (``ptx/tma.py``); not a type kernels can name.
tensormap = DataType("tensormap", "tensormap", 1024)


def dtype(value) -> DataType:
    """Accept a DataType, a name such as ``"float16"``, or a numpy dtype."""
    if isinstance(value, DataType):
        return value
    name = str(value)
    if hasattr(value, "name") and not isinstance(value, str):
        name = value.name
    name = _ALIASES.get(name, name)
    if name in DTYPES:
        return DTYPES[name]
    raise ScriptError(f"unknown data type {value!r}", hint=did_you_mean(name, DTYPES))


def from_numpy(np_dtype) -> DataType:
    """The DataType of a numpy (or ml_dtypes) dtype."""
    import numpy as np

    name = np.dtype(np_dtype).name
    for ours, theirs in _NUMPY_SPECIAL.items():
        if name == theirs:
            return DTYPES[ours]
    return dtype(name)
