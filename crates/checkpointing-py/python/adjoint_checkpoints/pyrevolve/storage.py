"""Where snapshots go, with ``pyrevolve.storage``'s classes and meanings: a
storage holds ``n_ckp`` slots, each one snapshot (the arrays that
``Checkpoint.get_data(t)`` returns); ``save(key, arrays)`` copies them into
slot ``key`` and ``load(key, locations)`` copies them back into the arrays
``Checkpoint.get_data_location(t)`` returns. ``wd`` and ``rd`` are the
write and read costs a multi-level schedule weighs.

- :class:`NumpyStorage`: RAM, one preallocated ``(n_ckp, size_ckp)`` array
  (``n_ckp=None``: a slot is allocated when first saved).
- :class:`BytesStorage`: RAM, each snapshot through a compressor
  (:func:`adjoint_checkpoints.pyrevolve.compression.init_compression`).
- :class:`DiskStorage`: one checksummed file per slot, written atomically by
  this project's Rust store (``adjoint_checkpoints._native.ByteDiskStore``), in a
  fresh directory under ``filedir`` removed when the storage is closed or
  collected (unless ``keepfiles``); a file that no longer matches its
  checksum raises ``adjoint_checkpoints.SnapshotCorruptedError``. Optionally
  compressed (``compression=(compress, decompress)``), which pyrevolve's
  disk storage is not. ``singlefile`` is accepted for pyrevolve's signature
  and has no effect.

>>> import numpy as np
>>> from adjoint_checkpoints.pyrevolve.storage import NumpyStorage, DiskStorage
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

__all__ = ["Storage", "NumpyStorage", "BytesStorage", "ArrayStorage", "DiskStorage", "StorageError"]


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

    def prefetch(self, key):
        """A hint that slot ``key`` will be loaded soon; storages that read
        in the background start now (this one does nothing)."""

    def settle(self):
        """Waits until what this storage does in the background (writes,
        removals) is done, and raises the first error it met; nothing for a
        storage that works in the caller's thread (this one)."""

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
    when first saved; a removed slot's row is kept for the next slot saved,
    so that the storage holds at most as many rows as it held snapshots at
    once, and a save copies into memory already touched instead of fresh
    pages, which cost milliseconds per state on some machines). A
    snapshot's arrays are flattened into its row (cast to ``dtype``); more
    than ``size_ckp`` entries raise :class:`StorageError`."""

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, wd=0, rd=0, name="MemoryStorage"):
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name)
        self.storage = None if self.n_ckp is None else np.zeros((self.n_ckp, self.size_ckp), order="C", dtype=dtype)
        self._rows = {}
        self._spare = []  # rows of removed slots, reused by the next slots saved

    def __getitem__(self, key):
        if self.storage is not None:
            return self.storage[key, :]
        if key not in self._rows:
            self._rows[key] = self._spare.pop() if self._spare else np.empty(self.size_ckp, dtype=self.dtype)
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
        row = self._rows.pop(key, None)
        if row is not None:
            self._spare.append(row)


class BytesStorage(Storage):
    """Snapshots in RAM through ``compression``, a pair ``(compress,
    decompress)`` from :func:`~adjoint_checkpoints.pyrevolve.compression.init_compression`:
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


class ArrayStorage(Storage):
    """Snapshots in one of this project's Rust stores
    (:class:`adjoint_checkpoints.ArrayStore`): ``store="ram"``, ``"disk"`` (one
    checksummed file per slot, written atomically) or ``"hdf5"`` (one HDF5
    file; a build with the ``hdf5`` feature), compressed by ``codec``
    (``"zstd"``, ``"lz4"``: bit for bit; ``"zfp:abs=1e-6"``,
    ``"sz3:rel=1e-5"``: within that bound, checked on every write). The
    arrays go to the store and come back into ``get_data_location``'s
    arrays without extra copies, the GIL released while the store encodes
    and does its I/O. Files go in a fresh directory ``pyrevolve-*`` under
    ``filedir`` (``None``: the system's temporary directory), removed by
    :meth:`close` or when the storage is collected unless ``keepfiles``.
    ``compression=(compress, decompress)`` (from
    :func:`~adjoint_checkpoints.pyrevolve.compression.init_compression`)
    compresses each array in Python first instead of ``codec``. A corrupted
    or missing file raises ``adjoint_checkpoints.SnapshotCorruptedError`` /
    ``SnapshotError`` naming the slot. A ``"disk"`` store writes in the
    background (it stages up to 9 snapshots in RAM) unless
    ``background=False``, where each save returns once written.

    >>> import numpy as np
    >>> from adjoint_checkpoints.pyrevolve.storage import ArrayStorage
    >>> u = np.linspace(0.0, 1.0, 1000)
    >>> storage = ArrayStorage(1000, 2, np.float64, store="disk", codec="zfp:abs=1e-9")
    >>> storage.save(0, [u])
    >>> back = np.zeros_like(u)
    >>> storage.load(0, [back])
    >>> bool(np.abs(back - u).max() <= 1e-9), storage.nbytes_held < u.nbytes
    (True, True)
    """

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, wd=0, rd=0, name=None, *, store="ram",
                 codec=None, filedir=None, keepfiles=False, compression=None, background=True):
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name or f"ArrayStorage({store})")
        from adjoint_checkpoints import ArrayStore

        if codec is not None and compression is not None:
            raise ValueError(f"{self.name}: give codec= or compression=, not both")
        self.keepfiles = keepfiles
        self.filedir = None
        path = None
        if store != "ram":
            if filedir is not None:
                os.makedirs(filedir, exist_ok=True)
            self.filedir = tempfile.mkdtemp(prefix="pyrevolve-", dir=filedir)
            path = self.filedir if store == "disk" else os.path.join(self.filedir, "snapshots.h5")
        disk = {"prefix": "slot-", "background": background} if store == "disk" else {}
        self._store = ArrayStore(store, codec=codec, path=path, **disk)
        #: Whether the store writes in the background (a disk store, unless
        #: ``background=False``).
        self.background = store == "disk" and background
        self.compression = compression
        self._meta = {}
        self._sizes = {}

    def _save(self, key, arrays):
        if key in self._store:
            self._remove(key)
        # A disk store: its file's size is read when asked for
        # (nbytes_held), not here: stats() would wait for the background
        # writes and sync the files (a blocking store's every save
        # fsynced: 50 ms for a 10 MB state on this bench's disk).
        before = None if self._store.store == "disk" else self._store.stats()["bytes_written"]
        if self.compression is None:
            self._store.save(key, arrays)
        else:
            with self.profiler.get_timer("storage", "compress"):
                blobs = [self.compression[0](a) for a in arrays]
            parts = [np.frombuffer(memoryview(b.data).cast("B"), dtype=np.uint8) for b in blobs]
            self._store.save(key, parts)
            self._meta[key] = [b.metadata for b in blobs]
        self._sizes[key] = None if before is None else self._store.stats()["bytes_written"] - before

    def _read(self, key):
        arrays = self._store.load(key)
        if self.compression is None:
            return arrays
        from .compression import CompressedObject

        with self.profiler.get_timer("storage", "decompress"):
            return [np.asarray(self.compression[1](CompressedObject(a, metadata=m)))
                    for a, m in zip(arrays, self._meta[key])]

    def load(self, key, locations):
        """Copies slot ``key`` into the arrays ``locations``: straight from
        the store into them when they are C-contiguous arrays of the stored
        dtypes and sizes (as ``get_data_location`` returns), else through
        new arrays."""
        locations = list(locations)
        self._check_key(key)
        if self.compression is None and key in self._held and len(locations) == len(self._held[key]):
            direct = all(
                isinstance(loc, np.ndarray) and loc.flags.c_contiguous and loc.flags.writeable
                and loc.dtype == dtype and loc.size == int(np.prod(shape))
                for loc, (shape, dtype) in zip(locations, self._held[key])
            )
            if direct:
                with self.profiler.get_timer("storage", "copy_load"):
                    self._store.load_into(key, locations)
                return
        super().load(key, locations)

    def _slot_file(self, key):
        """Slot ``key``'s file in a disk store: the Rust disk store's name,
        ``{prefix}{step:020}.ckpt``."""
        return os.path.join(self.filedir, f"slot-{int(key):020d}.ckpt")

    def prefetch(self, key):
        """Starts reading slot ``key`` in the background (a disk store;
        nothing for the others): the run announces the restores ahead."""
        if key in self._held:
            self._store.prefetch(key)

    def drop_cached(self, key):
        """Drops what the operating system caches of slot ``key`` (a disk
        store's file, written back first), so that its next load reads from
        the device; whether it did (``False`` in RAM)."""
        self._check_key(key)
        return self._store.drop_cached(key)

    def settle(self):
        """Waits for the background writes and removals (a disk store
        unless ``background=False``)."""
        if self.background:
            self._store.flush()

    def _remove(self, key):
        self._store.remove(key)
        self._meta.pop(key, None)
        self._sizes.pop(key, None)

    @property
    def nbytes_held(self):
        """The bytes the store holds now (encoded and compressed: on disk,
        the files' sizes, once the background writes are done; in RAM, the
        buffers')."""
        if any(size is None for size in self._sizes.values()):
            self.settle()  # a background write's file exists once settled
            for key, size in self._sizes.items():
                if size is None:
                    self._sizes[key] = os.path.getsize(self._slot_file(key))
        return sum(self._sizes.values())

    @property
    def stats(self):
        """The store's counters (:meth:`adjoint_checkpoints.ArrayStore.stats`)."""
        return self._store.stats()

    def close(self):
        """Drops the snapshots and removes the files (unless ``keepfiles``)."""
        self._held.clear()
        self._meta.clear()
        self._sizes.clear()
        for key in self._store.steps():
            self._store.remove(key)
        if self.filedir is not None and not self.keepfiles:
            shutil.rmtree(self.filedir, ignore_errors=True)

    def removeDatdir(self):
        """pyrevolve's name for :meth:`close`'s removal."""
        if self.filedir is not None:
            shutil.rmtree(self.filedir, ignore_errors=True)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to do at interpreter exit
            pass


class DiskStorage(ArrayStorage):
    """Snapshots on disk: pyrevolve's ``DiskStorage`` signature on an
    :class:`ArrayStorage` with ``store="disk"`` (one checksummed file per
    slot, in a fresh directory ``pyrevolve-*`` under ``filedir``, removed
    by :meth:`close` or when the storage is collected unless
    ``keepfiles``). ``compression=(compress, decompress)`` compresses each
    array first, or keyword-only ``codec=`` in Rust (``"zstd"``,
    ``"zfp:abs=1e-6"``...); keyword-only ``store="hdf5"`` keeps the slots
    in one HDF5 file instead; keyword-only ``background=False`` writes each
    snapshot before the save returns (no staging in RAM). A corrupted file
    raises ``adjoint_checkpoints.SnapshotCorruptedError`` on load.
    ``singlefile`` is accepted for pyrevolve's signature and has no
    effect."""

    def __init__(self, size_ckp, n_ckp, dtype, profiler=None, filedir="./", singlefile=True, wd=0, rd=0,
                 name="DiskStorage", keepfiles=False, compression=None, *, codec=None, store="disk",
                 background=True):
        if store not in ("disk", "hdf5"):
            raise ValueError(f"{name}: store must be 'disk' or 'hdf5', got {store!r}")
        super().__init__(size_ckp, n_ckp, dtype, profiler, wd=wd, rd=rd, name=name, store=store, codec=codec,
                         filedir=filedir, keepfiles=keepfiles, compression=compression, background=background)
        self.singlefile = singlefile

    def path_of(self, key):
        """The file of slot ``key`` (``store="disk"``; with ``"hdf5"``, the
        one file of every slot)."""
        if self._store.store == "hdf5":
            return self._store.path
        return self._slot_file(key)
