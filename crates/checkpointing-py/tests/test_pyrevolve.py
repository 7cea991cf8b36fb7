"""adjoint_checkpoints.pyrevolve, the drop-in for pyrevolve 2.2.8: the index
contract Devito relies on, gradients equal to store-all bit for bit for
every Revolver and many schedules (online ones included), pyrevolve's
forward-step counts, compression, and typed errors."""

import functools
import importlib
import os
import sys

import time

import numpy as np
import pytest

import adjoint_checkpoints
import heat1d
from heat1d import adjoint_step, step
from adjoint_checkpoints import pyrevolve as pr
from adjoint_checkpoints.pyrevolve import compression

# -- a recording operator: the index contract ---------------------------------


class Recorder:
    def __init__(self, n):
        self.n = n
        self.calls = []
        self.reverse_started_at = None


class RecOp(pr.Operator):
    def __init__(self, rec, name):
        self.rec, self.name = rec, name

    def apply(self, **kwargs):
        assert set(kwargs) == {"t_start", "t_end"}, kwargs
        self.rec.calls.append((self.name, kwargs["t_start"], kwargs["t_end"]))


class RecCheckpoint(pr.Checkpoint):
    def __init__(self, rec):
        self.rec = rec
        self.data = np.zeros(4)

    size, dtype = 4, np.float64

    def get_data(self, t):
        self.rec.calls.append(("save", t))
        return [self.data]

    def get_data_location(self, t):
        self.rec.calls.append(("load", t))
        return [self.data]


def record(make_revolver, n):
    rec = Recorder(n)
    revolver = make_revolver(RecCheckpoint(rec), RecOp(rec, "fwd"), RecOp(rec, "rev"), n)
    revolver.apply_forward()
    rec.reverse_started_at = len(rec.calls)
    revolver.apply_reverse()
    return rec, revolver


def check_contract(rec, online=False):
    """pyrevolve's index contract, as Devito needs it."""
    n, calls = rec.n, rec.calls
    forward, reverse = calls[: rec.reverse_started_at], calls[rec.reverse_started_at:]
    # Every operator range inside [0, n], non-empty.
    for call in calls:
        if call[0] in ("fwd", "rev"):
            assert 0 <= call[1] < call[2] <= n, call
    # The forward sweep covers 0..n in order, and runs no adjoint.
    at = 0
    for call in forward:
        assert call[0] != "rev" and call[0] != "load", call
        if call[0] == "fwd":
            assert call[1] == at, (call, at)
            at = call[2]
    assert at == n
    # The reverse: rev(i, i + 1) for i = n - 1 ... 0, one step each.
    revs = [c for c in reverse if c[0] == "rev"]
    assert revs == [("rev", i, i + 1) for i in range(n - 1, -1, -1)]
    # The first reversed step has no forward before it (but with online
    # schedules, which restore a snapshot and replay up to n first); every
    # other one comes right after fwd(i, i + 1).
    if not online:
        assert reverse[0] == ("rev", n - 1, n)
    for k, call in enumerate(reverse):
        if call[0] == "rev" and (call[1] != n - 1 or k > 0):
            assert reverse[k - 1] == ("fwd", call[1], call[1] + 1), reverse[max(0, k - 3):k + 1]
    # Snapshots are taken and restored at steps in [0, n).
    for call in calls:
        if call[0] in ("save", "load"):
            assert 0 <= call[1] < n, call


N = 23

SCHEDULES = {
    "Revolve": lambda n: adjoint_checkpoints.Revolve(n, 4),
    "HRevolve": lambda n: adjoint_checkpoints.HRevolve(n, 2, 4),
    "Multistage": lambda n: adjoint_checkpoints.Multistage(n, 2, 3),
    "Mixed": lambda n: adjoint_checkpoints.Mixed(n, 5),
    "DiskRevolve": lambda n: adjoint_checkpoints.DiskRevolve(n, 3),
    "PeriodicDiskRevolve": lambda n: adjoint_checkpoints.PeriodicDiskRevolve(n, 3),
    "Periodic": lambda n: adjoint_checkpoints.Periodic(n, 5),
    "OnlineR2 (online)": lambda n: adjoint_checkpoints.OnlineR2(4),
    "SingleMemory (online)": lambda n: adjoint_checkpoints.SingleMemory(),
    "SingleDisk (online)": lambda n: adjoint_checkpoints.SingleDisk(move_data=True),
    "TwoLevel (online)": lambda n: adjoint_checkpoints.TwoLevel(7, 2, binomial_storage=adjoint_checkpoints.StorageType.RAM),
    "plan": lambda n: adjoint_checkpoints.plan(n, 8 * 40, 8 * 40 * 6, forward_seconds=1.0),
    "plan with disk": lambda n: adjoint_checkpoints.plan(
        n, 8 * 40, 8 * 40 * 4, disk=8 * 40 * 50, forward_seconds=1.0, disk_bandwidth="1GB/s"
    ),
}


def revolvers(tmp_path):
    """(name, make(checkpoint, fwd, rev, n)) for every Revolver kind and
    every schedule above."""
    out = [
        ("Revolver default", lambda c, f, r, n: pr.Revolver(c, f, r, None, n)),
        ("Revolver 1", lambda c, f, r, n: pr.Revolver(c, f, r, 1, n)),
        ("Revolver 3", lambda c, f, r, n: pr.Revolver(c, f, r, 3, n)),
        ("Revolver n", lambda c, f, r, n: pr.Revolver(c, f, r, n, n)),
        ("Revolver blosc", lambda c, f, r, n: pr.Revolver(c, f, r, 3, n, compression_params={"scheme": "blosc"})),
        ("DiskRevolver", lambda c, f, r, n: pr.DiskRevolver(c, f, r, 4, n, filedir=str(tmp_path))),
        ("DiskRevolver blosc", lambda c, f, r, n: pr.DiskRevolver(
            c, f, r, 4, n, filedir=str(tmp_path), compression_params={"scheme": "blosc"})),
        ("MultiLevelRevolver", lambda c, f, r, n: pr.MultiLevelRevolver(
            c, f, r, n, [pr.NumpyStorage(c.size, 3, c.dtype), pr.DiskStorage(c.size, 5, c.dtype, filedir=str(tmp_path), wd=2, rd=2)])),
        ("MultiLevelRevolver one level", lambda c, f, r, n: pr.MultiLevelRevolver(
            c, f, r, n, [pr.NumpyStorage(c.size, 3, c.dtype)])),
    ]
    for name, make in SCHEDULES.items():
        out.append((f"Revolver schedule={name}", lambda c, f, r, n, make=make: pr.Revolver(c, f, r, None, n, schedule=make(n))))
        out.append((f"DiskRevolver schedule={name}", lambda c, f, r, n, make=make: pr.DiskRevolver(
            c, f, r, None, n, filedir=str(tmp_path), schedule=make(n))))
    out.append(("Revolver schedule=function", lambda c, f, r, n: pr.Revolver(
        c, f, r, None, n, schedule=lambda steps, nbytes: adjoint_checkpoints.HRevolve(steps, 2, 3))))
    # The Rust stores (adjoint_checkpoints.ArrayStore) on each level.
    hrevolve = lambda n: adjoint_checkpoints.HRevolve(n, 2, 4)  # noqa: E731
    for ram in ("ram", "ram:zstd", "ram:lz4"):
        out.append((f"Revolver ram={ram}", lambda c, f, r, n, ram=ram: pr.Revolver(c, f, r, 3, n, ram=ram)))
    for disk in ("disk", "disk:lz4", "disk:zstd-3", "hdf5", "hdf5:zstd"):
        out.append((f"DiskRevolver disk={disk}", lambda c, f, r, n, disk=disk: pr.DiskRevolver(
            c, f, r, 4, n, filedir=str(tmp_path), disk=disk)))
        out.append((f"Revolver HRevolve ram=ram:lz4 disk={disk}", lambda c, f, r, n, disk=disk: pr.Revolver(
            c, f, r, None, n, schedule=hrevolve(n), ram="ram:lz4", disk=disk)))
    return out


NAMES = [name for name, _ in revolvers("/nonexistent")]


def _has_store(store):
    try:
        adjoint_checkpoints.ArrayStore(store)
    except ValueError:
        return False
    return True


#: Whether this build has the HDF5 store (the `hdf5` feature).
HAS_HDF5 = _has_store("hdf5")


def _make(name, tmp_path):
    if "blosc" in name:
        pytest.importorskip("blosc")
    if "hdf5" in name and not HAS_HDF5:
        pytest.skip("this build has no HDF5 store (maturin develop --features hdf5)")
    return dict(revolvers(tmp_path))[name]


@pytest.mark.parametrize("n", [1, 2, 5, N])
@pytest.mark.parametrize("name", NAMES)
def test_the_index_contract(name, n, tmp_path):
    make = _make(name, tmp_path)
    if n < 2 and ("HRevolve" in name or "Multistage" in name or "DiskRevolve" in name or "function" in name
                  or "Mixed" in name or "plan" in name or "Periodic" in name):
        pytest.skip("this schedule needs at least 2 steps")
    rec, revolver = record(make, n)
    check_contract(rec, online="online" in name)
    assert revolver.reverse_steps == n
    assert revolver.forward_steps == sum(c[2] - c[1] for c in rec.calls if c[0] == "fwd")
    # Nothing left on disk once the reverse is done.
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


# -- gradients: a 1D heat equation with a reaction term -----------------------

CELLS = 40
initial = functools.partial(heat1d.initial, CELLS)
store_all = functools.partial(heat1d.store_all, CELLS)  # store_all(n)


class Heat:
    """Devito's pattern: the forward keeps the state before its last step
    in ``prev`` (as a time buffer does), which the adjoint reads; a
    snapshot holds only ``u``. So the adjoint of step i is right only
    after ``fwd(i, i + 1)``: the index contract."""

    def __init__(self):
        self.u, self.prev, self.mu = initial(), np.full(CELLS, np.nan), None
        heat = self

        class Fwd(pr.Operator):
            def apply(self, t_start, t_end):
                for _ in range(t_start, t_end):
                    heat.prev[:] = heat.u
                    heat.u[:] = step(heat.u)

        class Rev(pr.Operator):
            def apply(self, t_start, t_end):
                assert t_end == t_start + 1
                heat.mu = adjoint_step(heat.prev, heat.mu)
                heat.prev[:] = np.nan  # used once

        class Cp(pr.Checkpoint):
            size, dtype = CELLS, np.float64

            def get_data(self, t):
                return [heat.u]

            def get_data_location(self, t):
                return [heat.u]

        self.fwd, self.rev, self.cp = Fwd(), Rev(), Cp()


@pytest.mark.parametrize("name", NAMES)
def test_the_gradient_is_store_all_bitwise(name, tmp_path):
    make = _make(name, tmp_path)
    heat = Heat()
    revolver = make(heat.cp, heat.fwd, heat.rev, N)
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    assert np.array_equal(heat.mu, store_all(N)), name


def test_the_default_schedule_applies_to_revolvers_made_afterwards():
    made = []

    def factory(n, nbytes):
        made.append((n, nbytes))
        return adjoint_checkpoints.HRevolve(n, 2, 3)

    previous = pr.set_default_schedule(factory)
    try:
        heat = Heat()
        revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N)
        assert pr.get_default_schedule() is factory
    finally:
        pr.set_default_schedule(previous)
    assert made == [(N, CELLS * 8)]
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    assert np.array_equal(heat.mu, store_all(N))
    assert revolver.peak_snapshots["DISK"] > 0
    # An explicit schedule= wins over the default; a plan() as the default
    # gives each Revolver a fresh copy.
    planned = adjoint_checkpoints.plan(N, CELLS * 8, CELLS * 8 * 6, forward_seconds=1.0)
    previous = pr.set_default_schedule(planned)
    try:
        for _ in range(2):
            heat = Heat()
            revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N)
            assert revolver.schedule is not planned
            revolver.apply_forward()
            heat.mu = 2.0 * heat.u
            revolver.apply_reverse()
            assert np.array_equal(heat.mu, store_all(N))
        explicit = adjoint_checkpoints.Revolve(N, 2)
        assert pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=explicit).schedule is explicit
    finally:
        pr.set_default_schedule(previous)


# -- pyrevolve's forward-step counts ------------------------------------------

#: Forward steps (all calls of the forward operator, replays included) of
#: pyrevolve 2.2.8's Revolver(checkpoint, fwd, rev, n_checkpoints,
#: n_timesteps), recorded with pyrevolve 2.2.8 from PyPI (`pip install
#: pyrevolve==2.2.8`, built on Python 3.11 with gcc) by counting the steps
#: of a recording operator: {(n_timesteps, n_checkpoints): steps}; None is
#: adjust(n_timesteps).
PYREVOLVE_FORWARD_STEPS = {
    (10, 2): 30, (10, 4): 24, (10, 9): 19, (10, 12): 19, (50, 3): 230, (50, None): 194,
    (100, 5): 416, (100, None): 416, (257, 6): 1212, (498, 6): 2694, (498, None): 2694,
    (498, 20): 1739, (1000, 7): 5713, (1000, 30): 3472, (3000, 10): 16635,
}


def forward_steps(n_checkpoints, n_timesteps, **kwargs):
    rec = Recorder(n_timesteps)
    revolver = pr.Revolver(RecCheckpoint(rec), RecOp(rec, "fwd"), RecOp(rec, "rev"), n_checkpoints, n_timesteps, **kwargs)
    revolver.apply_forward()
    revolver.apply_reverse()
    return revolver.forward_steps


@pytest.mark.parametrize("key", sorted(PYREVOLVE_FORWARD_STEPS, key=str))
def test_the_forward_steps_are_pyrevolves(key):
    nt, ncp = key
    assert forward_steps(ncp, nt) == PYREVOLVE_FORWARD_STEPS[key]
    snaps = pr.adjust(nt) if ncp is None else ncp
    assert PYREVOLVE_FORWARD_STEPS[key] == pr.numforw(nt, min(snaps, nt - 1) or 1) + nt


def _real_pyrevolve():
    """pyrevolve itself if installed (and not this drop-in), else None."""
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "pyrevolve" or k.startswith("pyrevolve.")}
    try:
        module = importlib.import_module("pyrevolve")
    except ImportError:
        module = None
    finally:
        real = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "pyrevolve" or k.startswith("pyrevolve.")}
        sys.modules.update(saved)
    if module is None or module.__name__ != "pyrevolve" or "adjoint_checkpoints" in module.__file__:
        return None
    return module, real


def test_the_operator_calls_are_pyrevolves_when_it_is_installed():
    """With pyrevolve installed (scripts/pyrevolve-suite.sh's venv has it),
    the same run on both gives the same operator calls and snapshot steps,
    for a grid of (n_timesteps, n_checkpoints)."""
    found = _real_pyrevolve()
    if found is None:
        pytest.skip("pyrevolve is not installed: compared with the recorded counts only")
    real, _ = found

    def trace(module, ncp, nt):
        log = []

        class Op(module.Operator):
            def __init__(self, name):
                self.name = name

            def apply(self, **kw):
                log.append((self.name, kw["t_start"], kw["t_end"]))

        class Cp(module.Checkpoint):
            size, dtype = 2, np.float64
            a = np.zeros(2)

            def get_data(self, t):
                log.append(("save", t))
                return [self.a]

            def get_data_location(self, t):
                log.append(("load", t))
                return [self.a]

        r = module.Revolver(Cp(), Op("fwd"), Op("rev"), ncp, nt)
        r.apply_forward()
        r.apply_reverse()
        return log

    for nt in list(range(2, 40)) + [100, 498]:
        for ncp in [None, 1, 2, 3, 5, 8, nt]:
            assert trace(pr, ncp, nt) == trace(real, ncp, nt), (nt, ncp)


def test_the_classic_helpers_are_pyrevolves():
    # Recorded with pyrevolve 2.2.8's pyrevolve.crevolve (see above).
    assert [pr.adjust(n) for n in (1, 2, 10, 100, 498, 1000, 10000, 100000)] == [0, 1, 3, 5, 6, 7, 8, 10]
    assert pr.numforw(498, 6) == 2196 and pr.numforw(10, 2) == 20
    assert pr.maxrange(6, 4) == 210 and pr.maxrange(40, 40) == 2**31 - 1
    assert pr.expense(10, 2) == 2.0
    with pytest.raises(pr.RevolveError, match="snaps must be at least 1"):
        pr.numforw(10, 0)


# -- compression ----------------------------------------------------------------


def test_blosc_round_trips_exactly():
    pytest.importorskip("blosc")
    compress, decompress = compression.init_compression({"scheme": "blosc", "chunk_size": 1000})
    a = np.random.default_rng(0).standard_normal((30, 17))
    blob = compress(a)
    assert len(blob.metadata["chunks"]) == 5  # 4080 bytes in chunks of 1000
    out = decompress(blob)
    assert out.dtype == a.dtype and np.array_equal(out, a)


def test_blosc_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "blosc", None)
    with pytest.raises(compression.CompressorUnavailableError, match="pip install blosc"):
        compression.init_compression({"scheme": "blosc"})


def test_zfp_without_checkpointing_codecs_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "adjoint_checkpoints.codecs", None)
    with pytest.raises(compression.CompressorUnavailableError, match="adjoint_checkpoints.codecs"):
        compression.init_compression({"scheme": "zfp", "tolerance": 1e-6})
    heat = Heat()
    with pytest.raises(ImportError, match="zfp"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, compression_params={"scheme": "zfp"})


def test_zfp_keeps_the_tolerance_when_checkpointing_codecs_is_there():
    """Skipped where adjoint_checkpoints.codecs is absent (checked above)."""
    pytest.importorskip("adjoint_checkpoints.codecs")
    assert "zfp" in compression.compressors_available
    compress, decompress = compression.init_compression({"scheme": "zfp", "tolerance": 1e-6})
    a = np.random.default_rng(1).standard_normal((30, 40))
    blob = compress(a)
    out = decompress(blob)
    assert out.shape == a.shape and out.dtype == a.dtype
    assert np.max(np.abs(out - a)) <= 1e-6 and len(blob.data) < a.nbytes
    heat = Heat()
    revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, compression_params={"scheme": "zfp", "tolerance": 1e-9})
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    assert np.allclose(heat.mu, store_all(N), rtol=0, atol=1e-6)


def test_a_custom_compressor_is_used_for_every_snapshot():
    counts = {"in": 0, "out": 0}

    def compressor(params, array):
        counts["in"] += 1
        assert params == {"scale": 2.0}
        return compression.CompressedObject((array * params["scale"]).tobytes(), shape=array.shape, dtype=array.dtype)

    def decompressor(params, blob):
        counts["out"] += 1
        return np.frombuffer(blob.data, dtype=blob.dtype).reshape(blob.shape) / params["scale"]

    heat = Heat()
    params = {"scheme": "custom", "compressor": compressor, "decompressor": decompressor, "scale": 2.0}
    revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, compression_params=params)
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    assert np.array_equal(heat.mu, store_all(N))
    assert counts["in"] == revolver.saves and counts["out"] == revolver.loads > 0


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((3, 0), pr.RevolverError, "n_timesteps must be at least 1, got 0"),
        ((3, -5), pr.RevolverError, "n_timesteps must be at least 1, got -5"),
        ((3, None), pr.RevolverError, "n_timesteps is None"),
        ((3, 10.0), TypeError, "n_timesteps must be an int"),
        ((0, 10), pr.RevolverError, "n_checkpoints must be at least 1, got 0"),
        ((-1, 10), pr.RevolverError, "n_checkpoints must be at least 1, got -1"),
    ],
)
def test_bad_counts_are_clear_errors(args, error, message):
    heat = Heat()
    with pytest.raises(error, match=message):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, *args)


def test_bad_schedules_and_schemes_are_clear_errors():
    heat = Heat()
    with pytest.raises(pr.RevolverError, match="the schedule is for 10 steps, this Revolver for n_timesteps=23"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=adjoint_checkpoints.Revolve(10, 2))
    with pytest.raises(TypeError, match=r"schedule must be None, a checkpointing schedule, planned\(...\) or a function"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule="revolve")
    with pytest.raises(TypeError, match="a schedule object runs once"):
        pr.set_default_schedule(adjoint_checkpoints.Revolve(N, 2))
    with pytest.raises(compression.UnknownCompressionError, match="unknown compression scheme 'gzip'"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, compression_params={"scheme": "gzip"})
    with pytest.raises(compression.UnknownCompressionError, match="needs callable 'compressor'"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, compression_params={"scheme": "custom"})
    storages = [pr.NumpyStorage(CELLS, 2, np.float64) for _ in range(3)]
    with pytest.raises(pr.RevolverError, match="one or two storages"):
        pr.MultiLevelRevolver(heat.cp, heat.fwd, heat.rev, N, storages)
    used = adjoint_checkpoints.Revolve(N, 2)
    next(iter(used))
    with pytest.raises(pr.RevolverError, match="already been used"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=used)


def test_calls_out_of_order_are_clear_errors():
    heat = Heat()
    revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N)
    with pytest.raises(pr.RevolverStateError, match="apply_forward\\(\\) has not run"):
        revolver.apply_reverse()
    revolver.apply_forward()
    with pytest.raises(pr.RevolverStateError, match="already run its forward"):
        revolver.apply_forward()


def test_an_operator_that_raises_leaves_no_partial_state(tmp_path):
    heat = Heat()

    class Failing(pr.Operator):
        def __init__(self):
            self.calls = 0

        def apply(self, t_start, t_end):
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("kernel failed")
            heat.fwd.apply(t_start=t_start, t_end=t_end)

    revolver = pr.DiskRevolver(heat.cp, Failing(), heat.rev, 4, N, filedir=str(tmp_path))
    with pytest.raises(RuntimeError, match="kernel failed"):
        revolver.apply_forward()
    assert not any(p.is_file() for p in tmp_path.rglob("*")), "the failed run's snapshots are removed"
    with pytest.raises(pr.RevolverStateError, match="raised; its snapshots are freed, make a new Revolver"):
        revolver.apply_reverse()
    # A retry with a new Revolver, in the same directory, gives store-all's gradient.
    heat.u[:] = initial()
    again = pr.DiskRevolver(heat.cp, heat.fwd, heat.rev, 4, N, filedir=str(tmp_path))
    again.apply_forward()
    heat.mu = 2.0 * heat.u
    again.apply_reverse()
    assert np.array_equal(heat.mu, store_all(N))


def test_a_corrupted_disk_snapshot_raises_naming_the_step(tmp_path):
    heat = Heat()
    revolver = pr.DiskRevolver(heat.cp, heat.fwd, heat.rev, 4, N, filedir=str(tmp_path))
    revolver.apply_forward()
    disk = revolver.storage_list[0]
    assert disk.stats["writes"] >= 4  # the store's stats() waits for its background writes first
    files = sorted(p for p in tmp_path.rglob("*.ckpt"))
    assert len(files) == 4
    # Beside them, the lock of the directory while the Revolver holds them.
    assert [p.name for p in tmp_path.rglob(".*lock")] == [".slot-lock"]
    steps = revolver.storage_ckps(0)
    slot_of_step_0 = 0  # the first snapshot (step 0) takes the lowest slot
    assert steps[0] == 0
    path = disk.path_of(slot_of_step_0)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) - 1)
        f.write(b"\xff" if f.read(1) != b"\xff" else b"\x00")
    heat.mu = 2.0 * heat.u
    with pytest.raises(adjoint_checkpoints._native.SnapshotCorruptedError, match="time step 0") as info:
        revolver.apply_reverse()
    assert info.value.step == 0


# -- install_as_pyrevolve ---------------------------------------------------------


def test_install_as_pyrevolve_gives_pyrevolves_import_paths():
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "pyrevolve" or k.startswith("pyrevolve.")}
    previous = pr.get_default_schedule()
    try:
        factory = lambda n, nbytes: adjoint_checkpoints.Revolve(n, 2)  # noqa: E731
        assert pr.install_as_pyrevolve(schedule=factory) is pr
        import pyrevolve
        from pyrevolve import Checkpoint, Operator, Revolver  # noqa: F401  (Devito's import)
        from pyrevolve.compression import compressors_available, init_compression  # noqa: F401
        from pyrevolve.storage import BytesStorage  # noqa: F401
        from pyrevolve.crevolve import adjust

        assert pyrevolve is pr and Revolver is pr.MemoryRevolver and adjust is pr.adjust
        assert pr.get_default_schedule() is factory
    finally:
        pr.set_default_schedule(previous)
        for k in [k for k in sys.modules if k == "pyrevolve" or k.startswith("pyrevolve.")]:
            del sys.modules[k]
        sys.modules.update(saved)


# -- where snapshots go: ram= / disk= and set_default_storage -----------------


@pytest.mark.skipif(not compression.compressors_available.count("zfp"), reason="no zfp codec in this build")
def test_an_error_bounded_disk_level_gives_a_gradient_within_its_bound(tmp_path):
    heat = Heat()
    revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=adjoint_checkpoints.HRevolve(N, 2, 4),
                           disk="disk:zfp:abs=1e-13")
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    exact = store_all(N)
    error = np.abs(heat.mu - exact).max()
    assert 0 < error < 1e-9 * np.abs(exact).max(), error


def test_the_default_storage_applies_to_revolvers_made_afterwards(tmp_path):
    previous = pr.set_default_storage(ram="ram:zstd", disk="disk:lz4")
    try:
        heat = Heat()
        revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=adjoint_checkpoints.HRevolve(N, 2, 4))
        ram = revolver.storage_list[0]
        assert isinstance(ram, pr.ArrayStorage) and ram._store.codec == "zstd-1"
        revolver.apply_forward()
        disk = revolver._run.storage(adjoint_checkpoints.StorageType.DISK)
        assert isinstance(disk, pr.DiskStorage) and disk._store.codec == "lz4"
        heat.mu = 2.0 * heat.u
        revolver.apply_reverse()
        assert np.array_equal(heat.mu, store_all(N))
        # An explicit argument wins over the default.
        explicit = pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, ram="numpy")
        assert isinstance(explicit.storage_list[0], pr.NumpyStorage)
    finally:
        pr.set_default_storage(**previous)
    assert pr.get_default_storage() == {"ram": None, "disk": None}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"ram": "disk"}, pr.RevolverError, "RAM level's store is 'numpy' or 'ram'"),
        ({"disk": "ram:zstd"}, pr.RevolverError, "DISK level's store is 'disk' or 'hdf5'"),
        ({"ram": "numpy:zstd"}, pr.RevolverError, "'numpy' takes no codec"),
        ({"ram": "ram:gzip"}, ValueError, "gzip"),
        ({"disk": 3}, TypeError, "must be a string"),
        ({"ram": "ram:lz4", "compression_params": {"scheme": "zfp"}}, pr.RevolverError, "give one, not both"),
    ],
)
def test_bad_storage_choices_are_clear_errors(kwargs, error, message):
    heat = Heat()
    with pytest.raises(error, match=message):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, 3, N, **kwargs)


# -- planned(): the schedule each Revolver plans from its measurements --------


class Counted(pr.Operator):
    """Records the calls of an operator, then makes them."""

    def __init__(self, operator):
        self.operator, self.calls = operator, []

    def apply(self, t_start, t_end):
        self.calls.append((t_start, t_end))
        self.operator.apply(t_start=t_start, t_end=t_end)


def _run(revolver, heat):
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    return heat.mu


@pytest.mark.parametrize("disk", [None, "disk", "disk:zstd"])
def test_planned_measures_the_step_and_the_disk_then_plans(disk, tmp_path):
    import json

    heat = Heat()
    fwd = Counted(heat.fwd)
    # With a disk, RAM also holds what the background disk store stages
    # (9 snapshots), which the plan reserves.
    budget = {"ram": CELLS * 8 * (5 + (9 if disk else 0))} | ({"disk": CELLS * 8 * 100} if disk else {})
    revolver = pr.Revolver(heat.cp, fwd, heat.rev, None, N, filedir=str(tmp_path), disk=disk,
                           schedule=pr.planned(**budget, repeats=2))
    # One uncounted and two timed runs of step 0, each from the initial
    # state, which is put back after each; with a disk, two rounds of runs
    # more beside a save in flight (the contention), at least one each.
    assert fwd.calls == [(0, 1)] * len(fwd.calls)
    assert len(fwd.calls) == 3 if not disk else len(fwd.calls) >= 3 + 2
    assert np.array_equal(heat.u, initial())
    measured = revolver.measured
    assert measured["forward_seconds"] > 0
    plan_input = json.loads(revolver.schedule.plan.to_json())["input"]
    assert plan_input["forward_seconds"] == measured["forward_seconds"]
    # A RAM snapshot's copies, measured through a RAM storage like the
    # Revolver's, priced by the plan.
    assert measured["ram_write_seconds"] > 0 and measured["ram_read_seconds"] > 0
    assert plan_input["levels"]["ram"]["write_seconds"] == measured["ram_write_seconds"]
    assert plan_input["levels"]["ram"]["read_seconds"] == measured["ram_read_seconds"]
    if disk:
        assert measured["disk_write_seconds"] > 0 and measured["disk_read_seconds"] > 0
        assert plan_input["levels"]["disk"]["write_seconds"] == measured["disk_write_seconds"]
        assert plan_input["levels"]["disk"]["read_seconds"] == measured["disk_read_seconds"]
        # In the background: the save's own return, and the share of the
        # I/O that steps beside it lose, measured and handed over.
        assert measured["disk_issue_seconds"] > 0 and 0 <= measured["disk_contention"] <= 1
        assert plan_input["levels"]["disk"]["issue_seconds"] == measured["disk_issue_seconds"]
        assert plan_input["levels"]["disk"].get("contention", 0.0) == measured["disk_contention"]
        assert plan_input["levels"]["disk"]["capacity"] == budget["disk"]
        assert plan_input["levels"]["disk"]["background"] == {"writes_in_flight": 5, "staged_snapshots": 9}
        # Reads announced as far ahead as the drop-in's driver announces them.
        assert plan_input["read_look_ahead"] == adjoint_checkpoints._native.LOOK_AHEAD == 8
        assert not any(p.is_file() for p in tmp_path.rglob("*")), "the measurement's snapshot was left behind"
        # A level this small is read from the page cache.
        assert measured["disk_reads_cold"] is False
    else:
        assert plan_input["levels"]["disk"] is None
    assert plan_input["levels"]["ram"]["capacity"] == budget["ram"]
    assert np.array_equal(_run(revolver, heat), store_all(N))


def test_planned_times_disk_writes_into_slots_it_keeps(tmp_path, monkeypatch):
    """The disk level's writes are timed as a run makes them when it fills
    the level: every timed save, the contention rounds' included, goes to
    a slot of its own, and no slot is emptied before the last save (a
    slot saved and emptied again would find the pages of its file already
    in the page cache, which a run's first writes do not)."""
    from adjoint_checkpoints.pyrevolve import _revolvers

    made = []
    make = _revolvers._disk_storage

    def recorded(*args, **kw):
        storage = make(*args, **kw)
        events = []
        made.append(events)
        save, remove = storage.save, storage.remove

        def saving(key, data):
            events.append(("save", key))
            return save(key, data)

        def removing(key):
            events.append(("remove", key))
            return remove(key)

        storage.save, storage.remove = saving, removing
        return storage

    monkeypatch.setattr(_revolvers, "_disk_storage", recorded)
    heat = Heat()
    budget = {"ram": CELLS * 8 * (5 + 9), "disk": CELLS * 8 * 100}
    pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, filedir=str(tmp_path), disk="disk",
                schedule=pr.planned(**budget, repeats=3))
    measuring = [events for events in made if events]
    assert measuring, made
    for events in measuring:
        saves = [key for kind, key in events if kind == "save"]
        assert len(saves) >= 3 and len(set(saves)) == len(saves), events
        last_save = max(i for i, (kind, _) in enumerate(events) if kind == "save")
        assert all(kind == "save" for kind, _ in events[: last_save + 1]), events


def test_planned_prices_cold_reads_where_the_disk_outgrows_the_page_cache(tmp_path, monkeypatch):
    """A disk level that may hold more than the page cache has room for is
    priced at reads from the device: each round's snapshot written back,
    its pages dropped, then read (Linux); the rule is the Rust probe's."""
    import statistics

    from adjoint_checkpoints.pyrevolve import _planned

    native = adjoint_checkpoints._native
    assert native._reads_cold(10**18, 10**12, 10**6, 0) and not native._reads_cold(1, 10, 1, 0)
    # Every step's snapshot is less than the budget: that is what the level holds.
    assert not native._reads_cold(10**18, 10, 1, 0)
    colds = []
    timed = _planned._timed_copies

    def recording(storage, data, location, repeats, cold=None, **kw):
        out = timed(storage, data, location, repeats, cold, **kw)
        if cold is not None:
            colds.append(list(cold))
        return out

    monkeypatch.setattr(_planned, "_timed_copies", recording)
    monkeypatch.setattr(native, "_reads_cold", lambda level_budget, steps, snapshot_bytes, ram_bytes: True)
    heat = Heat()
    budget = {"ram": CELLS * 8 * (5 + 9), "disk": CELLS * 8 * 100}
    revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, filedir=str(tmp_path), disk="disk",
                           schedule=pr.planned(**budget, repeats=2))
    measured = revolver.measured
    assert measured["disk_reads_cold"] is True
    if sys.platform == "linux":
        assert colds and all(len(c) == 2 for c in colds)
        assert measured["disk_read_seconds"] in [statistics.median(c) for c in colds]
    assert np.array_equal(_run(revolver, heat), store_all(N))


def test_a_disk_storage_drops_its_cache_and_a_ram_storage_has_none():
    from adjoint_checkpoints.pyrevolve.storage import ArrayStorage

    u = np.linspace(0.0, 1.0, 1 << 16)
    for store, drops in (("disk", sys.platform == "linux"), ("ram", False)):
        storage = ArrayStorage(u.size, 1, np.float64, store=store)
        storage.save(0, [u])
        storage.settle()
        assert storage.drop_cached(0) is drops
        back = np.empty_like(u)
        storage.load(0, [back])
        assert np.array_equal(back, u)
        storage.close()


class Slowed(pr.Operator):
    """An operator whose every step also waits 2 ms: a solver's step, long
    against writing its (small) state."""

    def __init__(self, operator):
        self.operator, self.steps = operator, 0

    def apply(self, t_start, t_end):
        time.sleep(0.002 * (t_end - t_start))
        self.steps += t_end - t_start
        self.operator.apply(t_start=t_start, t_end=t_end)


def test_planned_uses_a_blocking_disk_where_the_staging_does_not_fit(tmp_path, monkeypatch):
    """RAM for 3 states (the live state, one step's adjoint data, one
    snapshot) cannot hold the background disk's 9 staged snapshots: the
    background plan keeps off the disk (Revolve with one snapshot, 276
    forward steps), so the disk is planned blocking, which pays with 2 ms
    steps; the Revolver's disk storage then writes each snapshot before
    the save returns, and the gradient is store-all's."""
    from adjoint_checkpoints.pyrevolve import _revolvers

    made = []
    make = _revolvers._disk_storage
    monkeypatch.setattr(_revolvers, "_disk_storage", lambda *a, **k: made.append(make(*a, **k)) or made[-1])
    heat = Heat()
    fwd = Slowed(heat.fwd)
    revolver = pr.Revolver(heat.cp, fwd, heat.rev, None, N, filedir=str(tmp_path),
                           schedule=pr.planned(ram=CELLS * 8 * 3, disk=CELLS * 8 * 100, repeats=1))
    assert revolver.disk_background is False and revolver.measured["disk_background"] is False
    assert revolver.schedule.plan.snapshots.get("DISK", 0) > 0
    fwd.steps = 0
    assert np.array_equal(_run(revolver, heat), store_all(N))
    assert revolver.peak_snapshots["DISK"] > 0
    assert fwd.steps < adjoint_checkpoints.optimal_steps_binomial(N, 1), fwd.steps
    # The planner's probes (one in the background, one blocking), then the
    # Revolver's disk level, blocking.
    assert [d.background for d in made] == [True, False, False]


def test_planned_as_the_default_plans_for_each_revolver():
    # RAM: 4 states and the background disk store's 9 staged snapshots.
    choice = pr.planned(ram=CELLS * 8 * (4 + 9), disk=CELLS * 8 * 50, repeats=1)
    previous = pr.set_default_schedule(choice)
    try:
        assert pr.get_default_schedule() is choice
        for n in (N, 2 * N):
            heat = Heat()
            revolver = pr.Revolver(heat.cp, heat.fwd, heat.rev, None, n)
            assert revolver.schedule.plan.steps == n and revolver.measured["forward_seconds"] > 0
            assert np.array_equal(_run(revolver, heat), store_all(n))
    finally:
        pr.set_default_schedule(previous)


def test_planned_refuses_what_it_cannot_plan():
    with pytest.raises(pr.RevolverError, match="repeats must be an int of at least 1"):
        pr.planned(ram="1MiB", repeats=0)
    with pytest.raises(adjoint_checkpoints.PlanError, match='unknown unit "XB"'):
        pr.planned(ram="1XB")
    heat = Heat()
    with pytest.raises(adjoint_checkpoints.PlanError, match="nothing fits"):
        pr.Revolver(heat.cp, heat.fwd, heat.rev, None, N, schedule=pr.planned(ram=CELLS * 8))
    storage = pr.NumpyStorage(CELLS, 4, np.float64)
    with pytest.raises(pr.RevolverError, match="MultiLevelRevolver's are its storage_list's"):
        pr.MultiLevelRevolver(heat.cp, heat.fwd, heat.rev, N, [storage], schedule=pr.planned(ram="1MiB"))


def _disk_events(tmp_path, ram_slots, disk_slots, schedule=None):
    """The heat gradient through a MultiLevelRevolver whose disk storage
    records its saves, prefetches and loads (checked against store-all);
    returns what the disk storage saw, in order."""
    events = []

    class Recording(pr.DiskStorage):
        def save(self, key, data_pointers):
            events.append(("save", key))
            super().save(key, data_pointers)

        def prefetch(self, key):
            events.append(("prefetch", key))
            super().prefetch(key)

        def load(self, key, locations):
            events.append(("load", key))
            super().load(key, locations)

    heat = Heat()
    disk = Recording(heat.cp.size, disk_slots, heat.cp.dtype, filedir=str(tmp_path), wd=2, rd=2)
    storages = [pr.NumpyStorage(heat.cp.size, ram_slots, heat.cp.dtype), disk]
    revolver = pr.MultiLevelRevolver(heat.cp, heat.fwd, heat.rev, N, storages, schedule=schedule)
    revolver.apply_forward()
    heat.mu = 2.0 * heat.u
    revolver.apply_reverse()
    assert np.array_equal(heat.mu, store_all(N))
    return events


def _loads_announced_after_their_saves(events):
    """The number of loads, each checked to follow a prefetch of its slot
    made after the slot's last save."""
    loads = [i for i, (kind, _) in enumerate(events) if kind == "load"]
    for i in loads:
        key = events[i][1]
        saved = max(j for j in range(i) if events[j] == ("save", key))
        assert ("prefetch", key) in events[saved:i], (i, events)
    return len(loads)


def test_a_restore_of_a_snapshot_saved_within_the_window_is_announced_after_its_save(tmp_path):
    """Every state on disk (``Mixed`` with a snapshot a step): the first reads
    of the reverse sweep are of snapshots saved less than ``LOOK_AHEAD``
    actions before them, and are announced once saved, as every later
    read is."""
    events = _disk_events(tmp_path, 1, N, schedule=adjoint_checkpoints.Mixed(N, N))
    assert _loads_announced_after_their_saves(events) >= N - 1, events


def test_restores_from_disk_are_announced_ahead_and_the_gradient_is_unchanged(tmp_path):
    """The run reads the schedule ahead and announces each disk restore to
    the storage (a background disk store starts reading it then)."""
    events = _disk_events(tmp_path, 2, 6)
    assert _loads_announced_after_their_saves(events) > 0, "the schedule never restored from disk"
