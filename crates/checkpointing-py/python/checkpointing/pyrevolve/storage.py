"""Where snapshots go, with ``pyrevolve.storage``'s classes and meanings: a
storage holds ``n_ckp`` slots, each one snapshot (the arrays that
``Checkpoint.get_data(t)`` returns); ``save(key, arrays)`` copies them into
slot ``key`` and ``load(key, locations)`` copies them back into the arrays
``Checkpoint.get_data_location(t)`` returns. ``wd`` and ``rd`` are the
write and read costs a multi-level schedule weighs.

- :class:`NumpyStorage`: RAM, one preallocated ``(n_ckp, size_ckp)`` array
  (``n_ckp=None``: a slot is allocated when first saved).
- :class:`BytesStorage`: RAM, each snapshot through a compressor
  (:func:`checkpointing.pyrevolve.compression.init_compression`).
- :class:`DiskStorage`: one checksummed file per slot, written atomically by
  this project's Rust store (``checkpointing._native.ByteDiskStore``), in a
  fresh directory under ``filedir`` removed when the storage is closed or
  collected (unless ``keepfiles``); a file that no longer matches its
  checksum raises ``checkpointing.SnapshotCorruptedError``. Optionally
  compressed (``compression=(compress, decompress)``), which pyrevolve's
  disk storage is not. ``singlefile`` is accepted for pyrevolve's signature
  and has no effect.

>>> import numpy as np
>>> from checkpointing.pyrevolve.storage import NumpyStorage, DiskStorage
>>> u = np.arange(6.0).reshape(2, 3)
>>> for storage in (NumpyStorage(6, 2, np.float64), DiskStorage(6, 2, np.float64, filedir=None)):
...     storage.save(1, [u])
...     back = np.zeros_like(u)
...     storage.load(1, [back])
...     print(type(storage).__name__, np.array_equal(back, u))
NumpyStorage True
DiskStorage True
"""

import os
import shutil
import tempfile

import numpy as np

from .profiling import Profiler

__all__ = ["Storage", "NumpyStorage", "BytesStorage", "DiskStorage", "StorageError"]


class StorageError(IndexError):
    """A slot outside ``[0, n_ckp)``, a load from an empty slot, more data
    than a slot holds, or a push onto a full stack / pop from an empty
    one."""


def _arrays(data_pointers):
    """The arrays of a ``get_data`` result (a list of arrays, or anything
    iterable, as pyrevolve accepts)."""
    return [np.asarray(p) for p in data_pointers]


class Storage:
    """The base of the storages: ``size_ckp`` entries of ``dtype`` a slot,
    ``n_ckp`` slots, write cost ``wd`` and read cost ``rd``; ``save`` and
    ``load`` by slot (vector interface) or ``push``/``peek``/``pop`` (stack
    interface, as pyrevolve's H-Revolve used)."""

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, wd=0, rd=0, name="storage"):
        if n_ckp is not None and (isinstance(n_ckp, bool) or int(n_ckp) != n_ckp or n_ckp < 0):
            raise ValueError(f"{name}: n_ckp must be a non-negative int or None, got {n_ckp!r}")
        self.size_ckp = int(size_ckp)
        self.n_ckp = None if n_ckp is None else int(n_ckp)
        self.dtype = dtype
        self.profiler = profiler if profiler is not None else Profiler()
        self.wd = wd
        self.rd = rd
        self.name = name
        self._stack_ptr = -1
        self._held = {}

    # -- the vector interface -------------------------------------------
    def save(self, key, data_pointers):
        """Copies the arrays ``data_pointers`` into slot ``key``."""
        self._check_key(key)
        arrays = _arrays(data_pointers)
        with self.profiler.get_timer("storage", "copy_save"):
            self._save(key, arrays)
        self._held[key] = [(a.shape, a.dtype) for a in arrays]

    def load(self, key, locations):
        """Copies slot ``key`` into the arrays ``locations``."""
        self._check_key(key)
        if key not in self._held:
            raise StorageError(f"{self.name}: slot {key} holds no snapshot")
        with self.profiler.get_timer("storage", "copy_load"):
            arrays = self._read(key)
            locations = list(locations)
            if len(locations) != len(arrays):
                raise StorageError(
                    f"{self.name}: slot {key} holds {len(arrays)} arrays, {len(locations)} locations given"
                )
            for location, array in zip(locations, arrays):
                np.copyto(location, array.reshape(np.shape(location)))

    def remove(self, key):
        """Frees slot ``key`` (nothing if empty)."""
        if self._held.pop(key, None) is not None:
            self._remove(key)

    def _check_key(self, key):
        if isinstance(key, bool) or int(key) != key or key < 0 or (self.n_ckp is not None and key >= self.n_ckp):
            raise StorageError(f"{self.name}: slot {key!r} outside [0, {self.n_ckp})")

    # -- the stack interface --------------------------------------------
    def push(self, data_pointers):
        """Saves into the next slot."""
        if self.isFull():
            raise StorageError(f"{self.name}: push onto a full stack of {self.n_ckp}")
        self._stack_ptr += 1
        self.save(self._stack_ptr, data_pointers)

    def peek(self, locations):
        """Loads the top slot (nothing if empty)."""
        if not self.isEmpty():
            self.load(self._stack_ptr, locations)

    def pop(self, locations):
        """Loads the top slot and drops it."""
        if self.isEmpty():
            raise StorageError(f"{self.name}: pop from an empty stack")
        self.load(self._stack_ptr, locations)
        self.remove(self._stack_ptr)
        self._stack_ptr -= 1

    def isFull(self):
        return self.n_ckp is not None and self._stack_ptr >= self.n_ckp - 1

    def isEmpty(self):
        return self._stack_ptr == -1

    @property
    def maxsize(self):
        """The capacity in entries of ``dtype`` (``None`` if unbounded)."""
        return None if self.n_ckp is None else self.size_ckp * self.n_ckp

    @property
    def maxsize_in_bytes(self):
        return None if self.n_ckp is None else self.maxsize * np.dtype(self.dtype).itemsize

    @property
    def size(self):
        """The entries held now."""
        return sum(int(np.prod(shape)) for shapes in self._held.values() for shape, _ in shapes)

    @property
    def nckp(self):
        """The number of slots (what a multi-level schedule may use)."""
        return self.n_ckp

    def _save(self, key, arrays):
        raise NotImplementedError

    def _read(self, key):
        raise NotImplementedError

    def _remove(self, key):
        pass


class NumpyStorage(Storage):
    """Snapshots in RAM, in one C-contiguous ``(n_ckp, size_ckp)`` array of
    ``dtype`` allocated up front (``n_ckp=None``: one row a slot, allocated
    when first saved). A snapshot's arrays are flattened into its row (cast
    to ``dtype``); more than ``size_ckp`` entries raise
    :class:`StorageError`."""

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, wd=0, rd=0, name="MemoryStorage"):
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name)
        self.storage = None if self.n_ckp is None else np.zeros((self.n_ckp, self.size_ckp), order="C", dtype=dtype)
        self._rows = {}

    def __getitem__(self, key):
        if self.storage is not None:
            return self.storage[key, :]
        if key not in self._rows:
            self._rows[key] = np.empty(self.size_ckp, dtype=self.dtype)
        return self._rows[key]

    def _save(self, key, arrays):
        total = sum(a.size for a in arrays)
        if total > self.size_ckp:
            raise StorageError(f"{self.name}: a snapshot of {total} entries does not fit a slot of {self.size_ckp}")
        row = self[key]
        at = 0
        for a in arrays:
            np.copyto(row[at:at + a.size], a.reshape(-1), casting="same_kind")
            at += a.size

    def _read(self, key):
        row = self[key]
        out, at = [], 0
        for shape, _ in self._held[key]:
            size = int(np.prod(shape))
            out.append(row[at:at + size].reshape(shape))
            at += size
        return out

    def _remove(self, key):
        self._rows.pop(key, None)


class BytesStorage(Storage):
    """Snapshots in RAM through ``compression``, a pair ``(compress,
    decompress)`` from :func:`~checkpointing.pyrevolve.compression.init_compression`:
    each array of a snapshot is compressed on save and decompressed on load.
    ``auto_pickle`` is accepted for pyrevolve's signature."""

    def __init__(self, size_ckp, n_ckp, dtype, compression, auto_pickle=False, profiler=None, wd=0, rd=0, name="ByteStorage"):
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name)
        self.compressor, self.decompressor = compression
        self.auto_pickle = auto_pickle
        self._blobs = {}

    def _save(self, key, arrays):
        with self.profiler.get_timer("storage", "compress"):
            self._blobs[key] = [self.compressor(a) for a in arrays]

    def _read(self, key):
        with self.profiler.get_timer("storage", "decompress"):
            return [np.asarray(self.decompressor(blob)) for blob in self._blobs[key]]

    def _remove(self, key):
        self._blobs.pop(key, None)

    @property
    def nbytes_held(self):
        """The compressed bytes held now."""
        return sum(len(memoryview(b.data).cast("B")) for blobs in self._blobs.values() for b in blobs)


class DiskStorage(Storage):
    """Snapshots on disk: one checksummed file per slot, in a fresh
    directory ``pyrevolve-*`` under ``filedir`` (``None``: the system's
    temporary directory), removed by :meth:`close` or when the storage is
    collected unless ``keepfiles``. ``compression=(compress, decompress)``
    compresses each array first. A corrupted file raises
    ``checkpointing.SnapshotCorruptedError`` on load."""

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, filedir="./", singlefile=True, wd=0, rd=0,
                 name="DiskStorage", keepfiles=False, compression=None):
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name)
        from checkpointing._native import ByteDiskStore

        self.singlefile = singlefile
        self.keepfiles = keepfiles
        if filedir is not None:
            os.makedirs(filedir, exist_ok=True)
        self.filedir = tempfile.mkdtemp(prefix="pyrevolve-", dir=filedir)
        self._store = ByteDiskStore(self.filedir, prefix="slot-")
        self.compression = compression
        self._meta = {}

    def _save(self, key, arrays):
        if key in self._store:
            self._store.remove(key)
        if self.compression is None:
            parts = [np.ascontiguousarray(a) for a in arrays]
            self._meta[key] = [(a.shape, a.dtype, a.nbytes) for a in parts]
        else:
            with self.profiler.get_timer("storage", "compress"):
                blobs = [self.compression[0](a) for a in arrays]
            parts = [memoryview(b.data).cast("B") for b in blobs]
            self._meta[key] = [(b.metadata, len(p)) for b, p in zip(blobs, parts)]
        try:
            self._store.save(key, parts)  # buffers written as they are, no copy
        except TypeError:
            # A native module whose store takes only bytes: one copy each.
            self._store.save(key, [memoryview(p).cast("B").tobytes() for p in parts])

    def _read(self, key):
        raw = memoryview(self._store.load(key))
        out, at = [], 0
        if self.compression is None:
            for shape, dtype, nbytes in self._meta[key]:
                out.append(np.frombuffer(raw[at:at + nbytes], dtype=dtype).reshape(shape))
                at += nbytes
            return out
        from .compression import CompressedObject

        with self.profiler.get_timer("storage", "decompress"):
            for metadata, nbytes in self._meta[key]:
                blob = CompressedObject(raw[at:at + nbytes].tobytes(), metadata=metadata)
                out.append(np.asarray(self.compression[1](blob)))
                at += nbytes
        return out

    def _remove(self, key):
        self._store.remove(key)
        self._meta.pop(key, None)

    def path_of(self, key):
        """The file of slot ``key``."""
        return self._store.path_of(key)

    @property
    def nbytes_held(self):
        """The bytes on disk now (after compression)."""
        return sum(n for meta in self._meta.values() for *_, n in meta)

    def close(self):
        """Removes the directory and its files (unless ``keepfiles``)."""
        self._held.clear()
        self._meta.clear()
        if not self.keepfiles:
            shutil.rmtree(self.filedir, ignore_errors=True)

    def removeDatdir(self):
        """pyrevolve's name for :meth:`close`'s removal."""
        shutil.rmtree(self.filedir, ignore_errors=True)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to do at interpreter exit
            pass
