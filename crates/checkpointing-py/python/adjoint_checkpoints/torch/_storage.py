"""Where :func:`adjoint_checkpoints.torch.checkpointed_loop` keeps a snapshot: a
holder per stored state, made when the schedule stores it, with
``restore()`` (the state's tensors again) and ``release()`` (drop it).

* :class:`_Held`: by reference, where the tensors are (the ``RAM`` level,
  and ``DISK`` with ``disk="host"`` for CPU tensors); version counters
  detect a state modified in place.
* :class:`_HostCopy`: the ``DISK`` level in host memory (``disk="host"``):
  pinned copies of CUDA tensors made on a side stream, and copied back to
  the device on another one when the run prefetches them.
* :class:`_FileCopy`: the ``DISK`` level in files (``disk="files"`` or a
  directory), written by :class:`_Files` through the package's Rust disk
  store on a background thread (the write lane) and read on another (the
  read lane), ahead of the read where the run announces it.
"""

from concurrent.futures import Future, ThreadPoolExecutor, wait

import torch

from adjoint_checkpoints import codecs as _codecs
from adjoint_checkpoints._prefetch import background_on
from adjoint_checkpoints._native import ByteDiskStore, SnapshotCorruptedError


class _Held:
    """A state held by reference (``RAM`` level, and ``DISK`` with
    ``disk="host"`` for CPU tensors); version counters detect in-place
    changes."""

    def __init__(self, leaves, step):
        self.leaves, self.step = list(leaves), step
        self.versions = [t._version for t in self.leaves]
        #: The leaves' storages (key -> bytes), counted by the run while it
        #: holds this state in RAM.
        self.storages = None

    def restore(self):
        for t, v in zip(self.leaves, self.versions):
            if t._version != v:
                raise RuntimeError(
                    f"checkpointed_loop: the state of step {self.step} was modified in place after it was "
                    "stored; step() must return new tensors, not modify its input"
                )
        return list(self.leaves)

    def release(self):
        self.leaves = None


class _HostCopy:
    """A state in host memory: pinned copies of CUDA tensors, made on a side
    stream (overlapping compute), references to CPU tensors.

    :meth:`prefetch` starts the copy of the CUDA tensors back to the device
    ahead of :meth:`restore`, on another side stream: the device tensors
    are allocated on that stream (so the caching allocator gives them
    memory no queued kernel of the compute stream still uses) and handed
    to the compute stream at :meth:`restore`, which waits for the copy's
    event and records the tensors' use on the compute stream (so their
    memory goes back to the side stream only once the compute stream's
    work on them is done)."""

    def __init__(self, leaves, step, streams):
        self.step = step
        self.devices = [t.device for t in leaves]
        self.host, self.events = _to_host(leaves, streams)
        self.versions = [t._version if t.device.type == "cpu" else None for t in leaves]
        #: Per tensor, (device tensor, event at the end of its copy) once
        #: :meth:`prefetch` started it (``None`` for CPU tensors), else None.
        self.prefetched = None

    def device_bytes(self):
        """The bytes :meth:`prefetch` would allocate on devices (0: nothing to
        prefetch, the state is on the CPU)."""
        return sum(t.numel() * t.element_size() for t, dev in zip(self.host, self.devices) if dev.type == "cuda")

    def prefetch(self, streams):
        """Starts the copy of the CUDA tensors back to their devices on a side
        stream (one per device, made in ``streams`` if absent), after their
        copy to the host; returns the device tensors, which
        :meth:`restore` returns."""
        ready = []
        for t, dev, ev in zip(self.host, self.devices, self.events):
            if dev.type != "cuda":
                ready.append(None)
                continue
            side = _side_stream(streams, dev)
            side.wait_event(ev)  # the copy to the host is done
            with torch.cuda.stream(side):
                # Allocated on the side stream: from memory no kernel queued
                # on the compute stream may still use.
                d = t.to(dev, non_blocking=True)
                done = torch.cuda.Event()
                done.record(side)
            ready.append((d, done))
        self.prefetched = ready
        return [r[0] for r in ready if r is not None]

    def restore(self):
        ready, self.prefetched = self.prefetched, None
        out = []
        for k, (t, dev, ev, v) in enumerate(zip(self.host, self.devices, self.events, self.versions)):
            if v is not None and t._version != v:
                raise RuntimeError(f"checkpointed_loop: the state of step {self.step} was modified in place")
            if ready is not None and ready[k] is not None:
                d, done = ready[k]
                if done is not None:
                    compute = torch.cuda.current_stream(dev)
                    compute.wait_event(done)
                    # Used from now on on the compute stream: the allocator
                    # must not reuse its memory for the side stream before
                    # the work queued there on it is done.
                    d.record_stream(compute)
                out.append(d)
            elif dev.type == "cuda":
                torch.cuda.current_stream(dev).wait_event(ev)
                out.append(t.to(dev, non_blocking=True))
            else:
                out.append(t)
        return out

    def release(self):
        self.host = None
        self.prefetched = None


def _side_stream(streams, device):
    """The side stream of ``device`` in ``streams``, made if absent."""
    side = streams.get(device)
    if side is None:
        side = streams[device] = torch.cuda.Stream(device)
    return side


def _to_host(leaves, streams):
    """Host copies of ``leaves``: CUDA tensors are copied into pinned memory
    on a side stream (one per device) after the work already queued on the
    current stream; returns the host tensors and, per tensor, the event
    marking the end of its copy (``None`` for CPU tensors, kept by
    reference)."""
    host, events = [], []
    for t in leaves:
        if t.device.type != "cuda":
            host.append(t)
            events.append(None)
            continue
        side = _side_stream(streams, t.device)
        side.wait_stream(torch.cuda.current_stream(t.device))
        with torch.cuda.stream(side):
            buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
            buf.copy_(t, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(side)
        # The allocator must not reuse t's memory before the copy is done.
        t.record_stream(side)
        host.append(buf)
        events.append(ev)
    return host, events


_ALIGN = 64


class _Files:
    """The ``DISK`` level in files: two Rust byte stores (restart states and
    adjoint inputs, each keyed by the loop step), written (and files
    removed) on one background thread, the write lane, so that writes
    overlap compute, and read on another, the read lane, so that a read
    never waits behind writes of other snapshots (a read waits for its own
    snapshot's write; the stores are held only to begin and commit each
    file's I/O, so both lanes work at once). With
    ``ADJOINT_CHECKPOINTS_BACKGROUND=0`` (:func:`~adjoint_checkpoints._prefetch.background_on`) each
    write is made at its store instead, the caller waiting for it: the
    blocking store, to compare."""

    def __init__(self, directory, stats, compress=None):
        self.compress = compress
        self.background = background_on()
        self.stores = {
            "ics": ByteDiskStore(directory, prefix="ics-"),
            "deps": ByteDiskStore(directory, prefix="deps-"),
        }
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpointing-disk")
        self.reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpointing-disk-read")
        self.pending = []
        self.stats = stats
        self.streams = {}

    def save(self, kind, step, leaves):
        host, events = _to_host(leaves, self.streams)
        meta = [(t.dtype, t.shape, t.device) for t in leaves]
        args = (self.stores[kind], step, host, events, self.compress, self.stats)
        if self.background:
            future = self.pool.submit(self._write, *args)
        else:
            future = Future()
            try:
                future.set_result(self._write(*args))
            except Exception as error:  # raised where the lane's would be: at the read, or the check
                future.set_exception(error)
        self.pending.append(future)
        self.stats.disk_writes += 1
        self.stats.disk_bytes_written += sum(t.numel() * t.element_size() for t in leaves)
        return _FileCopy(self, kind, step, meta, future)

    @staticmethod
    def _write(store, step, host, events, compress, stats):
        parts = []
        for t, ev in zip(host, events):
            if ev is not None:
                ev.synchronize()
            t = t.contiguous()
            nbytes = t.numel() * t.element_size()
            if compress is None:
                parts.append(_raw(t))
                parts.append(bytes(-nbytes % _ALIGN))
                continue
            # Compressed: each part is its length (8 bytes) and its bytes;
            # float32/float64 tensors through the error-bounded codec.
            if t.dtype in _COMPRESSIBLE and nbytes:
                data = _codecs.compress(t.detach().numpy(), compress)
            else:
                data = _raw(t)
            parts.append(len(data).to_bytes(8, "little"))
            parts.append(data)
            parts.append(bytes(-len(data) % _ALIGN))
        stats.disk_bytes_stored += sum(len(p) for p in parts)
        store.save(step, parts)

    def read(self, kind, step, meta, future):
        """Starts reading the snapshot of ``step`` on the read lane, once
        its write (``future``) is done: a future of its tensors in host
        memory (decoded there too; those of CUDA tensors staged in pinned
        memory, so that their copy to the device at the restore is
        asynchronous), raising the write's or the read's error."""
        return self.reads.submit(self._staged, self.stores[kind], step, meta, future, self.compress)

    @staticmethod
    def _staged(store, step, meta, future, compress):
        tensors = _Files._load(store, step, meta, future, compress)
        return [t.pin_memory() if device.type == "cuda" else t for t, (_, _, device) in zip(tensors, meta)]

    @staticmethod
    def _load(store, step, meta, future, compress):
        future.result()  # raises the write's error, if any
        payload = store.load(step)
        if compress is not None:
            return _Files._decode_compressed(step, payload, meta)
        buf = torch.frombuffer(payload, dtype=torch.uint8) if len(payload) else torch.empty(0, dtype=torch.uint8)
        out, offset = [], 0
        for dtype, shape, _ in meta:
            nbytes = _numel(shape) * _itemsize(dtype)
            if offset + nbytes > buf.numel():
                err = SnapshotCorruptedError(f"snapshot of step {step} is shorter than the state it should hold")
                err.step = step
                raise err
            out.append(buf[offset : offset + nbytes].view(dtype).reshape(shape))
            offset += nbytes + (-nbytes % _ALIGN)
        return out

    @staticmethod
    def _decode_compressed(step, payload, meta):
        def corrupted(why):
            err = SnapshotCorruptedError(f"snapshot of step {step}: {why}")
            err.step = step
            return err

        view = memoryview(payload)
        out, offset = [], 0
        for dtype, shape, _ in meta:
            if offset + 8 > len(view):
                raise corrupted("shorter than the state it should hold")
            length = int.from_bytes(view[offset : offset + 8], "little")
            start, offset = offset + 8, offset + 8 + length
            if offset > len(view):
                raise corrupted("shorter than the state it should hold")
            data = view[start:offset]
            offset += -length % _ALIGN
            nbytes = _numel(shape) * _itemsize(dtype)
            if dtype in _COMPRESSIBLE and nbytes:
                try:
                    array = _codecs.decompress(data)
                except _codecs.CodecError as e:
                    raise corrupted(str(e)) from None
                t = torch.from_numpy(array.copy())
                if t.dtype != dtype or tuple(t.shape) != tuple(shape):
                    raise corrupted(f"holds {t.dtype} {tuple(t.shape)} where {dtype} {tuple(shape)} was saved")
            else:
                if length != nbytes:
                    raise corrupted(f"holds {length} bytes where {nbytes} were saved")
                t = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape) if nbytes else torch.empty(shape, dtype=dtype)
            out.append(t)
        return out

    def remove(self, kind, step, future, read=None):
        """Removes the file of ``step`` on the write lane, after its write
        and after ``read``, its read in flight if any (whose error, if
        any, is its restore's to raise)."""

        def remove():
            future.result()
            if read is not None:
                wait([read])
            self.stores[kind].remove(step)

        self.pending.append(self.pool.submit(remove))

    def check(self):
        """Waits for every write and removal; raises the first error."""
        pending, self.pending = self.pending, []
        for f in pending:
            f.result()

    def close(self):
        self.reads.shutdown(wait=True)
        self.pool.shutdown(wait=True)


#: Tensor types the error-bounded codecs take.
_COMPRESSIBLE = (torch.float32, torch.float64)


def _raw(t):
    """The bytes of ``t`` (contiguous, in host memory) for
    ``ByteDiskStore.save``: a NumPy view of its memory, not a copy (the
    store copies it with the GIL released, so that the write lane does not
    hold up the computing thread); ``b""`` when it holds none."""
    if t.numel() == 0:
        return b""
    return t.detach().reshape(-1).view(torch.uint8).numpy()


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _itemsize(dtype):
    return torch.empty((), dtype=dtype).element_size()


class _FileCopy:
    """A state in a file of :class:`_Files`, read back once its write
    (``future``) is done: started ahead by :meth:`prefetch`, or at
    :meth:`restore`; released, the file is removed after the write and the
    read in flight."""

    def __init__(self, files, kind, step, meta, future):
        self.files, self.kind, self.step, self.meta, self.future = files, kind, step, meta, future
        #: The read started ahead of :meth:`restore`, if any.
        self.read = None

    def nbytes(self):
        """The bytes of the state's tensors: what a read brings into memory."""
        return sum(_numel(shape) * _itemsize(dtype) for dtype, shape, _ in self.meta)

    def prefetch(self):
        """Starts the read on the read lane (once)."""
        if self.read is None:
            self.read = self.files.read(self.kind, self.step, self.meta, self.future)

    def restore(self):
        read, self.read = self.read, None
        if read is None:
            read = self.files.read(self.kind, self.step, self.meta, self.future)
        self.files.stats.disk_reads += 1
        # Copied to their devices here, on the caller's stream, as before
        # the read lane.
        return [t.to(device, non_blocking=True) if device.type != "cpu" else t
                for t, (_, _, device) in zip(read.result(), self.meta)]

    def release(self):
        if self.files is not None:
            self.files.remove(self.kind, self.step, self.future, self.read)
            self.files, self.read = None, None

