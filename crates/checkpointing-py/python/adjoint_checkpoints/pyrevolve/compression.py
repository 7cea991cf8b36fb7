"""Snapshot compression with ``pyrevolve.compression``'s names and meanings
(pyrevolve 2.2.8): a ``compression_params`` dict picks the scheme,

- ``{"scheme": None}``: no compression (the default);
- ``{"scheme": "blosc"}``: lossless, with the ``blosc`` package from PyPI
  (``pip install blosc``); ``chunk_size`` (bytes, default 1,000,000) as in
  pyrevolve;
- ``{"scheme": "zfp", "tolerance": 1e-7}``: error-bounded lossy compression
  with ``tolerance`` the absolute error bound, by this project's Rust codecs
  (:mod:`adjoint_checkpoints.codecs`, codec ``"zfp"``, ``abs=tolerance``);
  pyrevolve's ``parallel`` is accepted and has no effect;
- ``{"scheme": "custom", "compressor": c, "decompressor": d}``: the user's
  functions, called as ``c(params, array) -> CompressedObject`` and
  ``d(params, compressed) -> array`` with ``params`` the other entries of
  the dict.

:func:`init_compression` turns such a dict into the pair of functions of
one argument that the storages call. A scheme whose package is missing
raises :class:`CompressorUnavailableError` (an ``ImportError``) naming what
to install; an unknown scheme :class:`UnknownCompressionError` (a
``ValueError``). pyrevolve printed these and raised a bare
``AssertionError``.

>>> import numpy as np
>>> from adjoint_checkpoints.pyrevolve.compression import init_compression
>>> calls = []
>>> def compressor(params, array):
...     calls.append(params["level"])
...     return CompressedObject(array.tobytes(), shape=array.shape, dtype=array.dtype)
>>> def decompressor(params, compressed):
...     return np.frombuffer(compressed.data, compressed.dtype).reshape(compressed.shape)
>>> compress, decompress = init_compression(
...     {"scheme": "custom", "compressor": compressor, "decompressor": decompressor, "level": 3})
>>> a = np.arange(6.0).reshape(2, 3)
>>> np.array_equal(decompress(compress(a)), a), calls
(True, [3])
>>> init_compression({"scheme": "lz77"})
Traceback (most recent call last):
...
adjoint_checkpoints.pyrevolve.compression.UnknownCompressionError: unknown compression scheme 'lz77': use None, 'blosc', 'zfp' or 'custom' (with 'compressor' and 'decompressor')
"""

import importlib
import pickle
from functools import partial

import numpy as np

__all__ = [
    "CompressedObject",
    "CompressorUnavailableError",
    "UnknownCompressionError",
    "init_compression",
    "compressors",
    "decompressors",
    "compressors_available",
    "compressors_known",
    "DEFAULTS",
]


class CompressorUnavailableError(ImportError):
    """A known compression scheme whose package is not installed; the
    message names what to install.

    >>> import adjoint_checkpoints.pyrevolve.compression as c
    >>> issubclass(c.CompressorUnavailableError, ImportError)
    True
    """


class UnknownCompressionError(ValueError):
    """A ``compression_params`` that names no scheme this module knows, or a
    ``"custom"`` scheme without callable ``compressor`` and
    ``decompressor``."""


#: The default parameters of each scheme, as pyrevolve's.
DEFAULTS = {None: {}, "blosc": {"chunk_size": 1000000}, "zfp": {"tolerance": 0.0000001, "parallel": True}}

#: The schemes this module knows, with what provides each.
compressors_known = {
    "blosc": "the blosc package: pip install blosc",
    "zfp": "adjoint_checkpoints.codecs (this project's Rust codecs, the error-bounded 'zfp' codec): "
    "install an adjoint-checkpoints release that provides adjoint_checkpoints.codecs",
}


class CompressedObject:
    """A compressed array: ``data`` (bytes-like) and the ``shape`` and
    ``dtype`` to rebuild it, also as ``metadata`` (a dict with at least
    ``shape`` and ``dtype``), as pyrevolve's.

    >>> CompressedObject(b"xy", metadata={"shape": (2,), "dtype": "u1"}).shape
    (2,)
    """

    def __init__(self, data, shape=None, dtype=None, metadata=None):
        if metadata is not None:
            if shape is not None or dtype is not None:
                raise ValueError("CompressedObject: give either metadata or shape and dtype, not both")
            if "shape" not in metadata or "dtype" not in metadata:
                raise ValueError("CompressedObject: metadata needs 'shape' and 'dtype'")
            shape, dtype = metadata["shape"], metadata["dtype"]
        else:
            metadata = {"shape": shape, "dtype": dtype}
        self.data = data
        self.shape = shape
        self.dtype = dtype
        self.metadata = metadata

    @property
    def pickled_metadata(self):
        """``metadata`` as a pickle, as pyrevolve's attribute."""
        return pickle.dumps(self.metadata)


def no_compression_in(params, indata):
    """The array's bytes, uncompressed."""
    indata = np.asarray(indata)
    return CompressedObject(memoryview(indata.tobytes()), shape=indata.shape, dtype=indata.dtype)


def no_compression_out(params, indata):
    """The array back from :func:`no_compression_in`'s object."""
    return np.frombuffer(indata.data, dtype=indata.dtype).reshape(indata.shape)


def _blosc():
    try:
        return importlib.import_module("blosc")
    except ImportError as e:
        raise CompressorUnavailableError(
            f"compression scheme 'blosc' needs {compressors_known['blosc']} ({e})"
        ) from e


def blosc_compress(params, indata):
    """Lossless: the array's bytes by ``blosc.compress``, in chunks of
    ``params["chunk_size"]`` bytes (blosc's limit is 2 GB a call)."""
    blosc = _blosc()
    indata = np.ascontiguousarray(indata)
    raw = memoryview(indata).cast("B")
    chunk = int(params.get("chunk_size", DEFAULTS["blosc"]["chunk_size"]))
    if chunk < 1:
        raise ValueError(f"blosc chunk_size must be at least 1 byte, got {chunk}")
    parts = [blosc.compress(raw[i:i + chunk].tobytes(), typesize=max(1, indata.itemsize)) for i in range(0, len(raw), chunk)]
    metadata = {"shape": indata.shape, "dtype": indata.dtype, "chunks": [len(p) for p in parts]}
    return CompressedObject(b"".join(parts), metadata=metadata)


def blosc_decompress(params, indata):
    """The array back from :func:`blosc_compress`'s object."""
    blosc = _blosc()
    data = memoryview(indata.data)
    out, at = [], 0
    for size in indata.metadata["chunks"]:
        out.append(blosc.decompress(data[at:at + size].tobytes()))
        at += size
    return np.frombuffer(b"".join(out), dtype=indata.dtype).reshape(indata.shape)


def _codecs():
    try:
        return importlib.import_module("adjoint_checkpoints.codecs")
    except ImportError as e:
        raise CompressorUnavailableError(
            f"compression scheme 'zfp' needs {compressors_known['zfp']}; this installation has none ({e}). "
            "Use scheme 'blosc' (lossless) or None meanwhile"
        ) from e


def zfp_compress(params, indata):
    """Error-bounded: ``adjoint_checkpoints.codecs.compress(array, "zfp",
    abs=params["tolerance"])``."""
    codecs = _codecs()
    indata = np.ascontiguousarray(indata)
    blob = codecs.compress(indata, "zfp", abs=params.get("tolerance", DEFAULTS["zfp"]["tolerance"]))
    return CompressedObject(memoryview(blob), shape=indata.shape, dtype=indata.dtype)


def zfp_decompress(params, indata):
    """The array back from :func:`zfp_compress`'s object (within the
    tolerance)."""
    codecs = _codecs()
    out = codecs.decompress(bytes(indata.data))
    return np.asarray(out, dtype=indata.dtype).reshape(indata.shape)


#: The compressing function of each scheme, ``f(params, array)``.
compressors = {None: no_compression_in, "blosc": blosc_compress, "zfp": zfp_compress}
#: The decompressing function of each scheme, ``f(params, compressed)``.
decompressors = {None: no_compression_out, "blosc": blosc_decompress, "zfp": zfp_decompress}


def _available():
    out = [None]
    for scheme, probe in (("blosc", "blosc"), ("zfp", "adjoint_checkpoints.codecs")):
        try:
            importlib.import_module(probe)
        except ImportError:
            continue
        out.append(scheme)
    return out


#: The schemes usable in this installation (``None`` always; ``"blosc"``
#: with the blosc package; ``"zfp"`` with :mod:`adjoint_checkpoints.codecs`),
#: found when this module is imported.
compressors_available = _available()


def init_compression(params):
    """The pair ``(compress, decompress)`` of one-argument functions for a
    ``compression_params`` dict (see the module's documentation): the
    scheme's functions with the remaining parameters (and the scheme's
    defaults) bound.

    >>> import numpy as np
    >>> compress, decompress = init_compression({"scheme": None})
    >>> decompress(compress(np.ones(3))).tolist()
    [1.0, 1.0, 1.0]
    """
    if not isinstance(params, dict):
        raise TypeError(f"compression_params must be a dict such as {{'scheme': 'blosc'}}, got {type(params).__name__}")
    params = dict(params)
    scheme = params.pop("scheme", None)
    if scheme == "custom":
        compressor = params.pop("compressor", None)
        decompressor = params.pop("decompressor", None)
        if not callable(compressor) or not callable(decompressor):
            raise UnknownCompressionError(
                "compression scheme 'custom' needs callable 'compressor' and 'decompressor' entries, "
                f"got {compressor!r} and {decompressor!r}"
            )
    elif scheme in compressors:
        if scheme == "blosc":
            _blosc()
        elif scheme == "zfp":
            _codecs()
        compressor, decompressor = compressors[scheme], decompressors[scheme]
        for key, value in DEFAULTS[scheme].items():
            params.setdefault(key, value)
    else:
        raise UnknownCompressionError(
            f"unknown compression scheme {scheme!r}: use None, 'blosc', 'zfp' or 'custom' "
            "(with 'compressor' and 'decompressor')"
        )
    return partial(compressor, params), partial(decompressor, params)
