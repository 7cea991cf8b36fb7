"""adjoint_checkpoints.torch.checkpointed_loop against plain autograd through the
whole loop, for every schedule kind, a heat-equation step and a small neural
ODE; snapshot budgets through the counters it exposes; snapshots on disk
(checksummed files) with corruption raising; online schedules with a stop
function; float32; torch.compile; CUDA when present.

Tolerance: the gradients (w.r.t. the initial state and every parameter)
equal plain autograd's to 1e-12 in norm-relative terms,
||g - g_ref|| <= 1e-12 ||g_ref||, in float64 (each step's derivative is the
same computation as in plain autograd; only where states are kept differs).
"""

import math
import os
import threading

import pytest

torch = pytest.importorskip("torch")

import adjoint_checkpoints as cp  # noqa: E402
from adjoint_checkpoints.torch import (  # noqa: E402
    LoopStats,
    SnapshotCorruptedError,
    SnapshotError,
    checkpointed_loop,
)


@pytest.fixture(autouse=True)
def recount_the_bytes_held(monkeypatch):
    """Every run here checks its running byte count (``peak_bytes``)
    against a recount over every holder, at each step."""
    from adjoint_checkpoints.torch._run import _Run

    monkeypatch.setattr(_Run, "check_ledger", True)


RTOL = 1e-12
N = 24


# --- problems ----------------------------------------------------------------


class Heat:
    """Explicit heat equation u_t = kappa u_xx + a sin(u) on a periodic 1-D
    grid, with a time-dependent source; parameters kappa, a."""

    def __init__(self, dtype=torch.float64, device="cpu"):
        g = torch.Generator().manual_seed(1)
        self.kappa = torch.tensor(0.3, dtype=dtype, device=device, requires_grad=True)
        self.a = torch.tensor(0.2, dtype=dtype, device=device, requires_grad=True)
        self.x0 = torch.rand(32, generator=g, dtype=dtype).to(device).requires_grad_()
        self.params = [self.kappa, self.a]

    def step(self, i, u):
        lap = torch.roll(u, 1) - 2 * u + torch.roll(u, -1)
        return u + 0.4 * self.kappa * lap + 0.05 * self.a * torch.sin(u) + 0.01 * math.cos(0.1 * i)

    def loss(self, u):
        return (u**2).sum()


class ODEFunc(torch.nn.Module):
    """A symplectic-Euler neural ODE on a state of two tensors (q, p)."""

    def __init__(self, d=6, h=10):
        super().__init__()
        self.force = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.Tanh(), torch.nn.Linear(h, d))
        self.mass = torch.nn.Linear(d, d, bias=False)

    def forward(self, i, state):
        q, p = state
        p = p - 0.05 * self.force(q)
        q = q + 0.05 * torch.tanh(self.mass(p))
        return q, p


class NeuralODE:
    def __init__(self, dtype=torch.float64, device="cpu"):
        torch.manual_seed(0)
        self.module = ODEFunc().to(dtype=dtype, device=device)
        g = torch.Generator().manual_seed(2)
        self.x0 = (
            torch.randn(3, 6, generator=g, dtype=dtype).to(device).requires_grad_(),
            torch.randn(3, 6, generator=g, dtype=dtype).to(device).requires_grad_(),
        )
        self.params = list(self.module.parameters())
        self.step = self.module  # checkpointed_loop finds its parameters itself

    def loss(self, state):
        q, p = state
        return (q**2).sum() + (torch.sin(p) * q).sum()


def leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def reference(problem, n):
    """Loss and gradients by plain autograd through the whole loop."""
    x = problem.x0
    for i in range(n):
        x = problem.step(i, x)
    loss = problem.loss(x)
    return loss.detach(), torch.autograd.grad(loss, leaves(problem.x0) + problem.params)


def ours(problem, n, schedule, **kw):
    stats = LoopStats()
    for t in leaves(problem.x0) + problem.params:
        t.grad = None
    params = None if isinstance(problem.step, torch.nn.Module) else problem.params
    x = checkpointed_loop(problem.step, problem.x0, n, schedule=schedule, params=params, stats=stats, **kw)
    loss = problem.loss(x)
    loss.backward()
    return loss.detach(), [t.grad for t in leaves(problem.x0) + problem.params], stats


def assert_grads_equal(got, ref, rtol=RTOL):
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g is not None and g.shape == r.shape and g.dtype == r.dtype
        err = torch.linalg.vector_norm(g - r).item()
        assert err <= rtol * torch.linalg.vector_norm(r).item(), (err, torch.linalg.vector_norm(r).item())


# --- every schedule kind, with its budget ----------------------------------------

# (name, factory of n, budget(n) -> (max RAM snapshots, max DISK snapshots, max WORK steps))
SCHEDULES = [
    ("Revolve", lambda n: cp.Revolve(n, 3), lambda n: (3, 0, 1)),
    ("HRevolve", lambda n: cp.HRevolve(n, 2, 3), lambda n: (2, 3, 1)),
    ("Multistage", lambda n: cp.Multistage(n, 2, 2), lambda n: (2, 2, 1)),
    ("DiskRevolve", lambda n: cp.DiskRevolve(n, 2), lambda n: (2, n, 1)),
    ("PeriodicDiskRevolve", lambda n: cp.PeriodicDiskRevolve(n, 2), lambda n: (2, n, 1)),
    ("Mixed-disk", lambda n: cp.Mixed(n, 3), lambda n: (0, 3, 1)),
    ("Mixed-ram", lambda n: cp.Mixed(n, 3, storage=cp.StorageType.RAM), lambda n: (3, 0, 1)),
    ("Periodic", lambda n: cp.Periodic(n, 5), lambda n: (math.ceil(n / 5), 0, 5)),
    ("TwoLevel(online)", lambda n: cp.TwoLevel(5, 2), lambda n: (0, math.ceil(n / 5) + 2, 1)),
    ("OnlineR2(online)", lambda n: cp.OnlineR2(4), lambda n: (4, 0, 1)),
    ("SingleMemory(online)", lambda n: cp.SingleMemory(), lambda n: (0, 0, n)),
    ("SingleDisk(online)", lambda n: cp.SingleDisk(), lambda n: (0, n, n)),
    ("SingleDisk-move(online)", lambda n: cp.SingleDisk(move_data=True), lambda n: (0, n, n)),
]


def schedule_forward_steps(schedule):
    """Steps the schedule advances in all (its Forward actions), up to EndReverse."""
    total = 0
    for a in schedule:
        if isinstance(a, cp.Forward):
            total += a.n1 - a.n0
        elif isinstance(a, cp.EndReverse):
            return total
    return total


@pytest.mark.parametrize("problem_cls", [Heat, NeuralODE], ids=["heat", "neural-ode"])
@pytest.mark.parametrize("name,factory,budget", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_gradients_equal_plain_autograd(problem_cls, name, factory, budget):
    problem = problem_cls()
    ref_loss, ref = reference(problem, N)
    loss, got, stats = ours(problem, N, factory)
    assert torch.equal(loss, ref_loss)  # the forward is the same computation
    assert_grads_equal(got, ref)
    ram, disk, work = budget(N)
    assert stats.steps == N and stats.adjoint_steps == N
    assert stats.peak_ram <= ram, stats
    assert stats.peak_disk <= disk, stats
    assert stats.peak_work <= work, stats
    assert stats.peak_states <= ram + disk + work + 1
    if disk == 0:
        assert stats.disk_writes == 0


def test_revolve_evaluates_steps_as_the_schedule_says():
    """No step runs more often than the schedule advances it: taped steps in
    WORK are differentiated without re-running them."""
    problem = Heat()
    for s in (2, 4, 8):
        _, _, stats = ours(problem, N, lambda n: cp.Revolve(n, s))
        assert stats.step_evaluations == schedule_forward_steps(cp.Revolve(N, s))
        assert stats.taped_steps == N
        assert stats.peak_ram == s and stats.peak_work == 1


def test_budget_respected_when_tight():
    problem = NeuralODE()
    _, ref = reference(problem, 40)
    for s in (1, 2, 5):
        _, got, stats = ours(problem, 40, lambda n: cp.Revolve(n, s))
        assert_grads_equal(got, ref)
        assert stats.peak_ram == s
        assert stats.peak_states <= s + 2


# --- DISK level: host memory, files, corruption ----------------------------------


@pytest.mark.parametrize("disk", ["host", "files", "dir"])
def test_disk_levels(disk, tmp_path):
    problem = NeuralODE()
    _, ref = reference(problem, N)
    where = str(tmp_path) if disk == "dir" else disk
    _, got, stats = ours(problem, N, lambda n: cp.HRevolve(n, 1, 4), disk=where)
    assert_grads_equal(got, ref)
    assert 0 < stats.peak_disk <= 4 and stats.disk_writes > 0 and stats.disk_reads > 0
    if disk != "host":
        assert stats.disk_bytes_written > 0
    if disk == "dir":
        assert not [f for f in os.listdir(tmp_path) if f.endswith(".ckpt")], "snapshot files left behind"


FILE_SCHEDULES = [
    ("HRevolve", lambda n: cp.HRevolve(n, 1, 4)),
    ("DiskRevolve", lambda n: cp.DiskRevolve(n, 2)),
    ("Mixed", lambda n: cp.Mixed(n, 3)),
]


@pytest.mark.parametrize("name,factory", FILE_SCHEDULES, ids=[s[0] for s in FILE_SCHEDULES])
@pytest.mark.parametrize("compress", [None, "zfp:abs=1e-300"], ids=["raw", "zfp"])
def test_files_read_ahead_of_the_backward(name, factory, compress, monkeypatch, tmp_path):
    """disk="files": the backward starts reading each DISK snapshot on the
    read lane while the actions before its read run. Gradients are those of
    the blocking path (ADJOINT_CHECKPOINTS_PREFETCH=0) bitwise, and plain
    autograd's; the states read ahead are counted in the bytes held (the
    ledger is recounted at every step, see the fixture); no reader thread
    outlives the loop."""
    from adjoint_checkpoints import codecs

    if compress is not None and "zfp" not in codecs.available():
        pytest.skip("zfp not in this build")
    problem = NeuralODE()
    _, ref = reference(problem, N)
    runs = {}
    for prefetch in ("1", "0"):
        monkeypatch.setenv("ADJOINT_CHECKPOINTS_PREFETCH", prefetch)
        _, got, stats = ours(problem, N, factory, disk=str(tmp_path), compress=compress)
        runs[prefetch] = ([g.clone() for g in got], stats)
    (ahead, on), (blocking, off) = runs["1"], runs["0"]
    for a, b in zip(ahead, blocking):
        assert torch.equal(a, b)
    assert_grads_equal(ahead, ref, rtol=RTOL if compress is None else 1e-9)
    assert on.disk_reads == off.disk_reads > 0 and on.step_evaluations == off.step_evaluations
    assert 0 < on.prefetched_reads <= on.disk_reads and off.prefetched_reads == 0
    assert on.peak_bytes >= off.peak_bytes
    assert not [t for t in threading.enumerate() if t.name.startswith("checkpointing-disk")]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".ckpt")], "snapshot files left behind"


def test_a_snapshot_corrupted_before_its_read_ahead_raises_at_its_read(tmp_path):
    """A file damaged after its write and before the backward reads it
    ahead: the read lane's error is the same typed error naming the step,
    raised at the action that needs the state, and the lanes stop."""
    loss, files = _forward_with_snapshot_files(tmp_path)
    victim = files[-1]  # the last saved: read ahead from the backward's first actions
    path = tmp_path / victim
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotCorruptedError, match=rf"step {_step_of(victim)}\b"):
        loss.backward()
    assert not [t for t in threading.enumerate() if t.name.startswith("checkpointing-disk")]


def test_a_byte_disk_store_reads_while_another_thread_writes(tmp_path):
    """The store is borrowed only to begin and commit a file's I/O, not
    while the file is written or read (and a removal keeps the GIL): a
    read lane and a write lane that saves and removes share it without
    colliding (a borrow held through the I/O raised "Already borrowed"
    here)."""
    from concurrent.futures import ThreadPoolExecutor

    from adjoint_checkpoints._native import ByteDiskStore

    store = ByteDiskStore(str(tmp_path), prefix="lanes-")
    payload = bytes(range(256)) * 4096  # 1 MiB: long enough to overlap
    store.save(0, [payload])

    def write(step):
        store.save(step, [payload])
        if step > 1:
            store.remove(step - 1)

    def read(_):
        return bytes(store.load(0)) == payload

    with ThreadPoolExecutor(1) as writes, ThreadPoolExecutor(1) as reads:
        written = [writes.submit(write, step) for step in range(1, 41)]
        read_ok = [reads.submit(read, k) for k in range(40)]
        for f in written:
            f.result()
        assert all(f.result() for f in read_ok)
    assert store.steps() == [0, 40]


@pytest.mark.parametrize("codec", ["zfp", "sz3"])
def test_compressed_disk_level(codec, tmp_path):
    """Error-bounded snapshots on the DISK level: the gradient moves by
    about the bound (not bitwise), the files hold fewer bytes, and the
    tensors that are not float32/float64 pass through unchanged."""
    from adjoint_checkpoints import codecs

    if codec not in codecs.available():
        pytest.skip(f"{codec} not in this build")
    problem = Heat()
    # A field large enough for the codecs to work on (Heat's step is
    # periodic on any length).
    x = torch.linspace(0, 1, 4096, dtype=torch.float64)
    problem.x0 = (torch.sin(6 * math.pi * x) + 0.5 * torch.cos(20 * math.pi * x)).requires_grad_()
    _, ref = reference(problem, N)
    _, got, stats = ours(
        problem, N, lambda n: cp.DiskRevolve(n, 1), disk=str(tmp_path), compress=f"{codec}:abs=1e-6"
    )
    assert stats.disk_writes > 0 and stats.disk_reads > 0
    assert_grads_equal(got, ref, rtol=1e-4)
    exact = all(torch.equal(g, r) for g, r in zip(got, ref))
    assert not exact, "a lossy bound of 1e-9 should move the gradient's last bits"
    assert 0 < stats.disk_bytes_stored < stats.disk_bytes_written, stats


def test_compress_needs_files_and_a_valid_codec(tmp_path):
    from adjoint_checkpoints import codecs

    problem = Heat()
    with pytest.raises(ValueError, match="disk=.files."):
        checkpointed_loop(problem.step, problem.x0, N, schedule=lambda n: cp.DiskRevolve(n, 1),
                          params=problem.params, compress="zfp:abs=1e-6")
    with pytest.raises(codecs.CodecError, match="unknown codec"):
        checkpointed_loop(problem.step, problem.x0, N, schedule=lambda n: cp.DiskRevolve(n, 1),
                          params=problem.params, disk=str(tmp_path), compress="gzip:abs=1")


def _forward_with_snapshot_files(tmp_path):
    problem = Heat()
    x = checkpointed_loop(
        problem.step, problem.x0, N, schedule=lambda n: cp.DiskRevolve(n, 1), params=problem.params, disk=str(tmp_path)
    )
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".ckpt"))
    assert files, "DiskRevolve stored nothing on disk"
    return problem.loss(x), files


def _step_of(name):
    return int(name.split("-")[1].split(".")[0])


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupted_snapshot_raises_naming_the_step(damage, tmp_path):
    loss, files = _forward_with_snapshot_files(tmp_path)
    victim = files[len(files) // 2]
    path = tmp_path / victim
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-3] ^= 0x40
    else:
        data = data[: len(data) - 5]
    path.write_bytes(bytes(data))
    step = _step_of(victim)
    with pytest.raises(SnapshotCorruptedError, match=rf"step {step}\b") as info:
        loss.backward()
    assert info.value.step == step
    assert isinstance(info.value, SnapshotError) and isinstance(info.value, OSError)


def test_missing_snapshot_file_raises(tmp_path):
    loss, files = _forward_with_snapshot_files(tmp_path)
    os.remove(tmp_path / files[0])
    with pytest.raises(SnapshotError, match=rf"step {_step_of(files[0])}\b"):
        loss.backward()


def test_byte_disk_store_roundtrip_and_corruption(tmp_path):
    from adjoint_checkpoints._native import ByteDiskStore

    store = ByteDiskStore(str(tmp_path), prefix="t-")
    store.save(5, [b"abc", bytes(range(256))])
    assert 5 in store and len(store) == 1 and store.steps() == [5]
    assert bytes(store.load(5)) == b"abc" + bytes(range(256))
    with pytest.raises(SnapshotError, match="step 5"):
        store.save(5, [b"x"])
    path = store.path_of(5)
    raw = bytearray(open(path, "rb").read())
    raw[40] ^= 1
    open(path, "wb").write(bytes(raw))
    with pytest.raises(SnapshotCorruptedError, match="step 5.*checksum") as info:
        store.load(5)
    assert info.value.step == 5
    store.remove(5)
    assert len(store) == 0 and not os.path.exists(path)
    assert store.stats()["writes"] == 1


def test_byte_disk_store_saves_array_parts_as_they_are_and_refuses_others(tmp_path):
    """Parts may be NumPy arrays, whose memory the store copies with the
    GIL released (the torch write lane's states): the file holds their
    bytes in order with the ``bytes`` parts; a part of another kind, or an
    array that is not C-contiguous, is refused before anything is written."""
    import numpy as np
    from adjoint_checkpoints._native import ByteDiskStore

    store = ByteDiskStore(str(tmp_path), prefix="a-")
    values = np.linspace(-1.0, 1.0, 1000)
    store.save(1, [values.view(np.uint8), b"\x00" * 3, np.arange(5, dtype=np.int32)])
    assert bytes(store.load(1)) == values.tobytes() + b"\x00" * 3 + np.arange(5, dtype=np.int32).tobytes()
    with pytest.raises(TypeError, match="numpy.ndarray"):
        store.save(2, [b"x", [1, 2, 3]])
    with pytest.raises(ValueError, match="C-contiguous"):
        store.save(2, [np.arange(10.0)[::2]])
    assert store.steps() == [1]


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float32, torch.bfloat16, torch.complex128, torch.int64, torch.bool]
)
@pytest.mark.parametrize("shape", [(), (7,), (3, 0), (2, 3, 4)])
def test_file_snapshots_of_every_dtype_and_shape_read_back_bitwise(dtype, shape, tmp_path):
    """A state saved to a file (the write lane's view of its memory, no
    copy under the GIL) reads back bit for bit, 0-d and empty included."""
    from types import SimpleNamespace

    from adjoint_checkpoints._native import ByteDiskStore
    from adjoint_checkpoints.torch._storage import _Files

    gen = torch.Generator().manual_seed(1)
    if dtype == torch.bool:
        t = torch.rand(shape, generator=gen) > 0.5
    elif dtype.is_complex or dtype.is_floating_point:
        t = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    else:
        t = torch.randint(-(2**40), 2**40, shape, generator=gen, dtype=dtype)
    store, done = ByteDiskStore(str(tmp_path), prefix="d-"), SimpleNamespace(result=lambda: None)
    _Files._write(store, 3, [t], [None], None, SimpleNamespace(disk_bytes_stored=0))
    (back,) = _Files._load(store, 3, [(t.dtype, tuple(t.shape), t.device)], done, None)
    assert back.dtype == t.dtype and back.shape == t.shape

    def raw(x):
        return x.reshape(-1).view(torch.uint8).numpy().tobytes()

    assert raw(back) == raw(t)


# --- online schedules with a stop condition ---------------------------------------


@pytest.mark.parametrize(
    "factory",
    [lambda n: cp.OnlineR2(3), lambda n: cp.TwoLevel(4, 2), lambda n: cp.SingleMemory()],
    ids=["OnlineR2", "TwoLevel", "SingleMemory"],
)
def test_online_stop_function(factory):
    problem = Heat()
    stop_at = 37

    def stop(i, u):
        assert not u.requires_grad
        return i >= stop_at

    ref_loss, ref = reference(problem, stop_at)
    stats = LoopStats()
    x = checkpointed_loop(problem.step, problem.x0, stop, schedule=factory, params=problem.params, stats=stats)
    loss = problem.loss(x)
    got = torch.autograd.grad(loss, [problem.x0] + problem.params)
    assert torch.equal(loss.detach(), ref_loss)
    assert_grads_equal(got, ref)
    assert stats.steps == stop_at and stats.adjoint_steps == stop_at


def test_state_dict_float32_and_unused_leaf():
    """A dict state in float32 with an integer counter leaf and a leaf the
    loss does not use."""
    torch.manual_seed(3)
    w = torch.randn(5, 5, dtype=torch.float32, requires_grad=True)

    def step(i, s):
        return {"u": torch.tanh(s["u"] @ w) + 0.1 * s["v"], "v": s["v"] * 0.9, "k": s["k"] + 1}

    x0 = {"u": torch.randn(5, requires_grad=True), "v": torch.randn(5, requires_grad=True), "k": torch.tensor(0)}
    x = x0
    for i in range(N):
        x = step(i, x)
    ref = torch.autograd.grad(x["u"].sum(), [x0["u"], x0["v"], w])
    out = checkpointed_loop(step, x0, N, schedule=lambda n: cp.Revolve(n, 3), params=[w])
    assert int(out["k"]) == N and not out["k"].requires_grad
    got = torch.autograd.grad(out["u"].sum(), [x0["u"], x0["v"], w])
    assert_grads_equal(got, ref, rtol=1e-6)


def test_no_gradient_needed_runs_the_plain_loop():
    problem = Heat()
    x0 = problem.x0.detach()
    stats = LoopStats()
    with torch.no_grad():
        x = checkpointed_loop(problem.step, x0, N, schedule=lambda n: cp.Revolve(n, 2), stats=stats)
        ref = x0
        for i in range(N):
            ref = problem.step(i, ref)
    assert torch.equal(x, ref) and stats.forward_steps == N and stats.peak_ram == 0


# --- misuse ----------------------------------------------------------------------


def test_in_place_step_is_detected():
    def step(i, x):
        if not torch.is_grad_enabled():
            x.mul_(0.5)  # modifies a stored snapshot (autograd itself catches taped runs)
        return x * 1.0

    x0 = torch.ones(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified in place"):
        checkpointed_loop(step, x0 * 1, 6, schedule=lambda n: cp.Revolve(n, 2)).sum().backward()


def test_backward_twice_raises():
    problem = Heat()
    x = checkpointed_loop(problem.step, problem.x0, 5, schedule=lambda n: cp.Revolve(n, 2), params=problem.params)
    loss = problem.loss(x)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="only once"):
        loss.backward()


def test_bad_arguments():
    problem = Heat()
    with pytest.raises(ValueError, match="is for 10 steps"):
        checkpointed_loop(problem.step, problem.x0, 5, schedule=cp.Revolve(10, 2))
    used = cp.Revolve(5, 2)
    list(used)
    with pytest.raises(ValueError, match="used already"):
        checkpointed_loop(problem.step, problem.x0, 5, schedule=used)
    with pytest.raises(ValueError, match="online schedule"):
        checkpointed_loop(problem.step, problem.x0, lambda i, x: i > 3, schedule=lambda n: cp.Revolve(5, 2))
    with pytest.raises(TypeError):
        checkpointed_loop(problem.step, [1.0], 5, schedule=lambda n: cp.Revolve(n, 2))
    with pytest.raises(ValueError, match="structure"):
        checkpointed_loop(lambda i, x: (x, x), problem.x0, 5, schedule=lambda n: cp.Revolve(n, 2))


# --- torch.compile ------------------------------------------------------------------


def test_torch_compile():
    """A compiled function calling checkpointed_loop runs the loop eagerly
    (graph break); a compiled step works inside the loop."""
    problem = Heat()
    _, ref = reference(problem, N)

    def f(x0, kappa, a):
        return problem.loss(
            checkpointed_loop(problem.step, x0, N, schedule=lambda n: cp.Revolve(n, 3), params=[kappa, a])
        )

    loss = torch.compile(f, backend="eager")(problem.x0, problem.kappa, problem.a)
    assert_grads_equal(torch.autograd.grad(loss, [problem.x0] + problem.params), ref)
    compiled_step = torch.compile(problem.step, backend="eager")
    x = checkpointed_loop(compiled_step, problem.x0, N, schedule=lambda n: cp.Revolve(n, 3), params=problem.params)
    assert_grads_equal(torch.autograd.grad(problem.loss(x), [problem.x0] + problem.params), ref)


# --- CUDA (when present) ---------------------------------------------------------------


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("disk", ["host", "files"])
def test_cuda_snapshots(disk):
    problem = NeuralODE(device="cuda")
    _, ref = reference(problem, N)
    _, got, stats = ours(problem, N, lambda n: cp.HRevolve(n, 2, 3), disk=disk)
    # 1e-10: the same kernels as plain autograd, but cuBLAS may pick another
    # algorithm (summation order) for a call.
    assert_grads_equal(got, ref, rtol=1e-10)
    assert all(g.is_cuda for g in got)
    assert stats.peak_ram <= 2 and stats.peak_disk <= 3 and stats.disk_writes > 0


@pytest.mark.parametrize("how", ["schedule", "memory"])
def test_a_tensor_requiring_grad_outside_params_is_named_in_a_warning(how):
    """A step closing over a tensor that requires grad, not given in
    params: the loop computes no gradient for it (plain autograd would), and
    says so, naming its shape (from the forward when the plan tapes there,
    else from the backward); x0's gradient is right all the same. Given in
    params, no warning, and its gradient equals plain autograd's."""
    import warnings

    from adjoint_checkpoints.torch import UnlistedTensorsWarning

    w = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    x0 = torch.ones(3, dtype=torch.float64, requires_grad=True)
    step = lambda i, x: torch.tanh(w * x)  # noqa: E731
    kwargs = {"schedule": lambda n: cp.Revolve(n, 2)} if how == "schedule" else {"memory": "1MiB"}
    with pytest.warns(UnlistedTensorsWarning, match=r"1 tensor\(s\) that require grad but are not in params \(shapes \(\)\)"):
        (alone,) = torch.autograd.grad(checkpointed_loop(step, x0, 10, **kwargs).sum(), [x0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpointed_loop(step, x0, 10, params=[w], **kwargs).sum().backward()
    ours = (w.grad.clone(), x0.grad.clone())
    w.grad = x0.grad = None
    x = x0
    for i in range(10):
        x = step(i, x)
    x.sum().backward()
    assert torch.equal(ours[0], w.grad) and torch.equal(ours[1], x0.grad) and torch.equal(alone, x0.grad)


@pytest.mark.parametrize("how", ["schedule", "memory"])
def test_autocast_holds_for_recomputed_steps(how):
    """Under torch.autocast (CPU, bfloat16) the loop's steps, recomputed ones
    included (the backward runs outside the caller's autocast), run in the
    caller's autocast mode, as torch.utils.checkpoint does: before, the
    first recomputation failed on a bfloat16 state meeting a float32
    weight. Each step casts the weights afresh (no cast cache across
    steps, wherever the schedule runs it): gradients bitwise those of plain
    autograd with autocast entered per step, and within bfloat16 rounding
    of plain autograd with autocast around the whole loop (whose cached
    casts sum the weights' gradients in bfloat16)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16)
    x0 = torch.randn(4, 16, requires_grad=True)
    step = lambda i, x: torch.tanh(lin(x))  # noqa: E731
    kwargs = {"schedule": lambda n: cp.Revolve(n, 2)} if how == "schedule" else {"memory": "64KiB"}

    def grads(run):
        lin.zero_grad()
        x0.grad = None
        run().float().sum().backward()
        return [t.clone() for t in (lin.weight.grad, lin.bias.grad, x0.grad)]

    def ours():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = checkpointed_loop(step, x0, 12, params=lin.parameters(), **kwargs)
        assert out.dtype == torch.bfloat16
        return out

    def per_step():
        x = x0
        for i in range(12):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                x = step(i, x)
        return x

    def whole():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = x0
            for i in range(12):
                x = step(i, x)
        return x

    got = grads(ours)
    ref = grads(per_step)
    assert all(torch.equal(a, b) for a, b in zip(got, ref))
    for a, b in zip(got, grads(whole)):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-3)
