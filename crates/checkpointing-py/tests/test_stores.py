"""adjoint_checkpoints.ArrayStore, the Rust snapshot stores for NumPy arrays:
every store and codec keeps every dtype and shape (bit for bit, or within
a lossy codec's bound), the caller's arrays are filled in place, and bad
input, damaged files and misuse are typed errors naming the step."""

import os
import threading

import numpy as np
import pytest

import adjoint_checkpoints
from adjoint_checkpoints import ArrayStore, SnapshotCorruptedError, SnapshotError, codecs


def _has_store(store):
    try:
        ArrayStore(store)
    except ValueError:
        return False
    return True


STORES = ["ram", "disk"] + (["hdf5"] if _has_store("hdf5") else [])
LOSSLESS = [None, "zstd", "zstd-9", "lz4", "identity"]
LOSSY = [f"{c}:abs=1e-7" for c in codecs.available()] + [f"{c}:rel=1e-6" for c in codecs.available()]


def arrays():
    """Arrays of every kind a state may hold; large enough for the
    codecs' real paths."""
    rng = np.random.default_rng(5)
    return [
        np.sin(np.linspace(0.0, 20.0, 120_000)).reshape(300, 400),  # float64, smooth
        rng.standard_normal((7, 11, 13)).astype(np.float32),  # float32, 3-D
        np.arange(10, dtype=np.int32),
        np.array([True, False, True]),
        np.array(3.5),  # 0-d
        np.zeros((0, 4)),  # empty
        np.arange(6, dtype=">f8"),  # big-endian
        np.arange(12, dtype=np.complex128).reshape(3, 4),
    ]


@pytest.mark.parametrize("codec", LOSSLESS)
@pytest.mark.parametrize("store", STORES)
def test_lossless_stores_keep_every_array_bit_for_bit(store, codec):
    s = ArrayStore(store, codec=codec)
    data = arrays()
    for step in (0, 7, 2**40):
        s.save(step, data)
    assert s.steps() == [0, 7, 2**40] and len(s) == 3 and 7 in s and 8 not in s
    for got, want in zip(s.load(7), data):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    into = [np.empty_like(a) for a in data]
    s.load_into(2**40, into)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(into, data))
    stats = s.stats()
    assert stats["writes"] == 3 and stats["reads"] == 2
    assert stats["raw_bytes_written"] == 3 * sum(a.nbytes for a in data)
    if codec in ("zstd", "zstd-9"):
        assert stats["bytes_written"] < stats["raw_bytes_written"]
    s.remove(0)
    assert s.steps() == [7, 2**40]


@pytest.mark.parametrize("codec", LOSSY)
@pytest.mark.parametrize("store", STORES)
def test_lossy_stores_keep_the_bound_and_compress(store, codec):
    s = ArrayStore(store, codec=codec)
    u = np.sin(np.linspace(0.0, 20.0, 200_000)).reshape(400, 500)
    v = np.cos(np.linspace(0.0, 5.0, 30_000)).astype(np.float32)
    s.save(1, [u, v])
    back_u, back_v = s.load(1)
    assert back_u.dtype == np.float64 and back_v.dtype == np.float32
    tolerance_u = 1e-7 if "abs" in codec else 1e-6 * np.ptp(u)
    tolerance_v = 1e-7 if "abs" in codec else 1e-6 * float(np.ptp(v))
    assert np.abs(back_u - u).max() <= tolerance_u
    assert np.abs(back_v.astype(np.float64) - v).max() <= tolerance_v
    assert s.stats()["bytes_written"] * 2 < s.stats()["raw_bytes_written"]


@pytest.mark.skipif(not codecs.available(), reason="no lossy codec in this build")
def test_a_lossy_codec_refuses_non_float_arrays_naming_them():
    s = ArrayStore("ram", codec=f"{codecs.available()[0]}:abs=1e-6")
    with pytest.raises(TypeError, match="array 1 is <i8.*lossless codec"):
        s.save(3, [np.zeros(4), np.arange(3, dtype=np.int64)])
    assert 3 not in s


def test_non_contiguous_and_array_like_inputs_are_stored_as_arrays():
    s = ArrayStore("disk", codec="lz4")
    base = np.arange(24.0).reshape(4, 6)
    s.save(0, [base[:, ::2], [1, 2, 3], base.T])
    a, b, c = s.load(0)
    assert np.array_equal(a, base[:, ::2]) and np.array_equal(b, [1, 2, 3]) and np.array_equal(c, base.T)


def test_load_into_writes_in_place_and_checks_its_destinations():
    s = ArrayStore("ram")
    u = np.arange(12.0).reshape(3, 4)
    s.save(5, [u])
    flat = np.zeros(12)
    s.load_into(5, [flat])  # same dtype and size: the shape may differ
    assert np.array_equal(flat, u.ravel())
    with pytest.raises(ValueError, match="holds 1 arrays, 2 given"):
        s.load_into(5, [flat, flat])
    with pytest.raises(ValueError, match="is <f8, the destination <f4"):
        s.load_into(5, [np.zeros(12, dtype=np.float32)])
    with pytest.raises(ValueError, match="has 64 bytes, the stored array 96"):
        s.load_into(5, [np.zeros(8)])
    readonly = np.zeros(12)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        s.load_into(5, [readonly])
    with pytest.raises(ValueError, match="not C-contiguous"):
        s.load_into(5, [np.zeros(24)[::2]])
    with pytest.raises(TypeError, match="numpy.ndarray"):
        s.load_into(5, [bytearray(96)])
    assert np.array_equal(readonly, np.zeros(12))


def test_ndarray_subclasses_are_read_and_filled_through_their_memory():
    class Data(np.ndarray):  # as Devito's Data: an ndarray subclass
        @property
        def __array_interface__(self):
            raise AssertionError("must not be asked")

    u = np.arange(6.0).view(Data)
    s = ArrayStore("ram")
    s.save(1, [u])
    out = np.zeros(6).view(Data)
    s.load_into(1, [out])
    assert np.array_equal(np.asarray(out), np.arange(6.0))


def test_misuse_is_a_typed_error_naming_the_step():
    s = ArrayStore("disk")
    s.save(4, [np.ones(3)])
    with pytest.raises(SnapshotError, match="4") as info:
        s.save(4, [np.ones(3)])
    assert info.value.step == 4
    with pytest.raises(SnapshotError) as info:
        s.load(9)
    assert info.value.step == 9
    with pytest.raises(SnapshotError):
        s.remove(9)
    with pytest.raises(ValueError, match='unknown store "tape"'):
        ArrayStore("tape")
    with pytest.raises(codecs.CodecError):
        ArrayStore("ram", codec="gzip")
    with pytest.raises(codecs.CodecError):
        ArrayStore("ram", codec="zfp:abs=-1")
    with pytest.raises(ValueError, match="path and prefix"):
        ArrayStore("ram", path="/tmp/x")
    with pytest.raises(TypeError, match="list of arrays"):
        s.save(5, np.ones(3))
    with pytest.raises(TypeError, match="list of arrays"):
        s.load_into(4, np.ones(3))


def test_a_damaged_or_vanished_file_raises_naming_the_step(tmp_path):
    for codec in (None, "zstd"):
        directory = tmp_path / str(codec)
        s = ArrayStore("disk", codec=codec, path=directory, prefix="slot-")
        s.save(6, [np.linspace(0.0, 1.0, 5000)])
        s.save(7, [np.linspace(0.0, 1.0, 5000)])
        s.flush()  # the files are written in the background
        (path6,) = directory.glob("slot-*06.ckpt")
        with open(path6, "r+b") as f:
            f.seek(os.path.getsize(path6) // 2)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0xFF]))
        with pytest.raises(SnapshotCorruptedError) as info:
            s.load(6)
        assert info.value.step == 6
        (path7,) = directory.glob("slot-*07.ckpt")
        with open(path7, "r+b") as f:
            f.truncate(10)
        with pytest.raises(SnapshotCorruptedError) as info:
            s.load(7)
        assert info.value.step == 7
        os.remove(path6)
        with pytest.raises(SnapshotError) as info:
            s.load_into(6, [np.zeros(5000)])
        assert info.value.step == 6


@pytest.mark.skipif("hdf5" not in STORES, reason="this build has no HDF5 store")
def test_an_hdf5_store_writes_one_file_at_its_path(tmp_path):
    path = tmp_path / "run.h5"
    s = ArrayStore("hdf5", codec="zstd", path=path)
    s.save(2, [np.ones((30, 30))])
    assert path.is_file() and s.path == path and s.store == "hdf5" and s.codec == "zstd-1"
    assert repr(s) == 'ArrayStore("hdf5", codec="zstd-1", 1 snapshots)'


def test_threads_can_save_while_another_computes():
    """The GIL is released while a store compresses and writes: saves from
    two threads, with a NumPy computation beside them, all land."""
    s = ArrayStore("disk", codec="zstd")
    lock = threading.Lock()
    u = np.sin(np.linspace(0.0, 1.0, 500_000))

    def save(first):
        for step in range(first, first + 4):
            with lock:  # one store, one writer at a time
                s.save(step, [u * step])

    workers = [threading.Thread(target=save, args=(k,)) for k in (0, 10)]
    for w in workers:
        w.start()
    total = float(np.sum(u * u))
    for w in workers:
        w.join()
    assert s.steps() == [0, 1, 2, 3, 10, 11, 12, 13] and total > 0
    assert np.array_equal(s.load(12)[0], u * 12)


def test_a_background_disk_store_keeps_every_array_and_a_blocking_one_is_a_choice(tmp_path):
    arrays = [np.linspace(0.0, 1.0, 20000), np.arange(7, dtype=np.int64)]
    for background in (True, False):
        s = ArrayStore("disk", codec="zstd", path=tmp_path / str(background), background=background)
        for step in range(12):
            s.save(step, [a + step for a in arrays])
        for step in (11, 3, 7):
            s.prefetch(step)  # never blocks; read ahead in the background
        for step in (11, 3, 7, 0):
            back = s.load(step)
            assert all(np.array_equal(b, a + step) for a, b in zip(arrays, back))
        s.flush()
        assert s.stats()["writes"] == 12
        assert len(list((tmp_path / str(background)).glob("snapshot-*.ckpt"))) == 12
