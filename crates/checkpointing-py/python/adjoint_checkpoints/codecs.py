"""Error-bounded lossy compression of NumPy arrays: zfp and SZ3, with the
bound checked on every write.

Each array is compressed, decompressed at once, and its largest error
``max |x - x'|`` measured; a miss is retried at a quarter of the
tolerance, twice, then the array is kept lossless. Arrays holding NaN or
infinities, constant and empty arrays are kept lossless (bit for bit).
The result carries its header: the bound asked for, the tolerance it
resolved to, the measured error (see :func:`info`).

Bounds (exactly one): ``abs=E`` (``|x - x'| <= E``), ``rel=R`` (``R``
times the array's range ``max x - min x``), and for zfp only
``precision=BITS`` or ``rate=BITS`` (bits, not an error bound: the error is
measured and recorded). Codecs: ``"zfp"`` (in the default build) and
``"sz3"`` (built with ``maturin develop --features sz3``; its Rust binding
is GPL-3.0); :func:`available` lists this build's.

>>> from typing import Any, Optional

import numpy as np
>>> from adjoint_checkpoints import codecs
>>> x = np.sin(np.linspace(0, 10, 100_000))
>>> blob = codecs.compress(x, "zfp", abs=1e-6)
>>> y = codecs.decompress(blob)
>>> bool(np.max(np.abs(x - y)) <= 1e-6), y.dtype, y.shape
(True, dtype('float64'), (100000,))
>>> len(blob) * 3 < x.nbytes
True
>>> codecs.info(blob)["max_error"] <= 1e-6
True
"""

from __future__ import annotations

import numpy as np

from . import _native

#: Raised for a damaged or foreign compressed array, a codec this build
#: lacks, or an invalid bound (a subclass of ``ValueError``).
CodecError = _native.CodecError

__all__ = ["CodecError", "available", "check", "compress", "decompress", "info"]

_BOUND_KEYS = {"abs": "abs", "rel": "rel", "precision": "prec", "rate": "rate"}


def available() -> list[str]:
    """The lossy codecs of this build, e.g. ``["zfp", "sz3"]``."""
    return list(_native._lossy_codecs())


def check(codec: str) -> None:
    """Raises :class:`CodecError` (or ``ValueError``) unless this build can
    apply ``codec``, a whole spec such as ``"zfp:rel=1e-6"``: for the
    bridges, to refuse a bad ``compress=`` before a loop runs.

    >>> from adjoint_checkpoints import codecs
    >>> codecs.check("zfp:abs=1e-6")
    >>> codecs.check("zfp:abs=-1")
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.CodecError: error bound `abs=-1e0`: must be finite and above 0
    """
    compress(np.zeros(0), codec)


def _spec(codec, bounds):
    given = {k: v for k, v in bounds.items() if v is not None}
    if ":" in codec and not given:
        return codec  # a whole spec, "zfp:rel=1e-6": checked by the codec
    if len(given) != 1:
        raise ValueError(
            "give exactly one bound: abs=, rel=, precision= or rate= "
            f"(got {sorted(given) or 'none'})"
        )
    (key, value), = given.items()
    return f"{codec}:{_BOUND_KEYS[key]}={value!r}"


def compress(
    array: np.ndarray,
    codec: str,
    *,
    abs: Optional[float] = None,
    rel: Optional[float] = None,
    precision: Optional[int] = None,
    rate: Optional[float] = None,
) -> bytes:
    """Compresses a float32 or float64 array of any shape; returns bytes
    that :func:`decompress` reads back. ``codec`` is ``"zfp"`` or ``"sz3"``
    with one bound argument, or a whole spec such as ``"zfp:rel=1e-6"``
    (the command's ``--compress`` syntax) without one.

    >>> import numpy as np
    >>> from adjoint_checkpoints import codecs
    >>> field = np.outer(np.sin(np.arange(64) / 9), np.cos(np.arange(48) / 7)).astype(np.float32)
    >>> back = codecs.decompress(codecs.compress(field, "zfp", rel=1e-4))
    >>> bool(np.max(np.abs(back - field)) <= 1e-4 * (field.max() - field.min()))
    True
    >>> codecs.compress(field, "zfp:rel=1e-4") == codecs.compress(field, "zfp", rel=1e-4)
    True
    >>> codecs.compress(field, "zfp")
    Traceback (most recent call last):
    ...
    ValueError: give exactly one bound: abs=, rel=, precision= or rate= (got none)
    """
    spec = _spec(codec, {"abs": abs, "rel": rel, "precision": precision, "rate": rate})
    array = np.asarray(array)
    if array.dtype == np.float32:
        dtype = "f4"
    elif array.dtype == np.float64:
        dtype = "f8"
    else:
        raise ValueError(f"lossy codecs take float32 or float64 arrays, not {array.dtype}")
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
    return _native._lossy_compress(data.tobytes(), dtype, list(array.shape), spec)


def decompress(blob: bytes) -> np.ndarray:
    """The array that :func:`compress` compressed (within its bound).

    Damaged bytes raise :class:`CodecError` (each array carries a CRC-32 of
    its compressed bytes).
    """
    raw, dtype, shape = _native._lossy_decompress(bytes(blob))
    return np.frombuffer(raw, dtype="<" + dtype).reshape(shape).astype(dtype, copy=False)


def info(blob: bytes) -> dict[str, Any]:
    """The header of a compressed array, a dict: ``bound``, ``tolerance``
    (``None`` for precision and rate), ``max_error`` (measured on write),
    ``attempts``, ``lossless_reason`` (``None``, or why it was kept
    lossless), ``dtype``, ``shape``, ``raw_bytes``, ``compressed_bytes``."""
    return dict(_native._lossy_info(bytes(blob)))
