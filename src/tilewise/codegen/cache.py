"""The on-disk compile cache.

An entry is ``<cache_dir>/kernels/<key[:2]>/<key>.<kind>``: the magic ``TWC1``, the SHA-256
of the payload, the payload. Kinds: ``ptx`` and ``cubin`` (a kernel; the key covers
everything the output depends on, see :func:`tilewise.compiler.cache_key`) and ``bc`` (a
libdevice slice, :mod:`.libdevice`). Writes are atomic (a temporary file in the same folder,
then ``os.replace``), so a reader sees a whole entry or none; every entry is verified on
reading, and one whose digest does not match (truncated, edited, damaged) reads as a miss
and is rebuilt and overwritten. A cache folder that cannot be written (read-only, full, a
file in the way) warns once per process and tilewise compiles without it.
Settings: ``TILEWISE_CACHE_DIR``, ``TILEWISE_CACHE=0`` (:mod:`tilewise.knobs`).
"""

from __future__ import annotations

import hashlib
import itertools
import os

from ..knobs import knobs

_MAGIC = b"TWC1"
_SERIAL = itertools.count()


def _temporary(folder: str) -> tuple[int, str]:
    """A new file in ``folder``, private to this process and call (O_EXCL). Not
    ``tempfile.mkstemp``: importing tempfile (shutil, random) costs ~4 ms of every cold
    compile."""
    while True:
        tmp = os.path.join(folder, f".tmp-{os.getpid()}-{next(_SERIAL)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that no reader ever sees a partial file."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = _temporary(folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def entry_path(key: str, kind: str) -> str:
    return os.path.join(knobs.cache_dir, "kernels", key[:2], f"{key}.{kind}")


def load(key: str, kind: str) -> bytes | None:
    """The payload of a valid entry, or None (disabled, missing or damaged)."""
    if not knobs.cache_enabled:
        return None
    try:
        with open(entry_path(key, kind), "rb") as f:
            blob = f.read()
    except OSError:
        return None
    head, digest, payload = blob[:4], blob[4:36], blob[36:]
    if head != _MAGIC or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


_warned: set[str] = set()  # cache folders already warned about in this process


def store(key: str, kind: str, payload: bytes) -> None:
    """Save an entry (skipped when the cache is disabled; a cache that cannot be written
    warns once and is skipped: it must not fail a compile)."""
    if not knobs.cache_enabled:
        return
    try:
        atomic_write(entry_path(key, kind), _MAGIC + hashlib.sha256(payload).digest() + payload)
    except OSError as e:
        _warn_unwritable(e)


def _warn_unwritable(e: OSError) -> None:
    folder = knobs.cache_dir
    if folder in _warned:
        return
    _warned.add(folder)
    import warnings

    warnings.warn(f"tilewise: cannot write the compile cache in {folder} "
                  f"({e.strerror or e}); compiling without it. Set TILEWISE_CACHE_DIR to a "
                  "writable folder, or TILEWISE_CACHE=0 to turn the cache off.",
                  RuntimeWarning, stacklevel=3)
