"""The run of a schedule: the loop that turns each action into calls of
the user's operators and of the storages' slots (:class:`_Run`)."""

import time
from collections import deque

from adjoint_checkpoints import Copy, EndForward, EndReverse, Forward, Move, Reverse, StorageType
from adjoint_checkpoints._prefetch import Pace, ReadAhead, announce_saved, reads_from_disk

from ._errors import RevolverError
from .storage import Storage, StorageError


# -- the run of a schedule ----------------------------------------------------


class _Entry:
    """A snapshot held in a storage slot: the state before step ``step``."""

    __slots__ = ("step", "storage", "slot")

    def __init__(self, step, storage, slot):
        self.step, self.storage, self.slot = step, storage, slot


class _Slots:
    """The free slots of one storage object (lowest first)."""

    def __init__(self, storage):
        self.storage = storage
        self.used = set()

    def take(self, step):
        n = self.storage.n_ckp
        slot = 0
        while slot in self.used:
            slot += 1
        if n is not None and slot >= n:
            raise StorageError(
                f"{self.storage.name}: the schedule holds more than its {n} snapshot slot(s) "
                f"(storing the state before step {step}); give the storage more slots or pick a schedule for {n}"
            )
        self.used.add(slot)
        return slot

    def give(self, slot):
        self.used.discard(slot)


class _Run:
    """One pass of a schedule over a user's operators."""

    def __init__(self, revolver, schedule, levels):
        self.r = revolver
        self.schedule = schedule
        self.n = revolver.n_timesteps
        self.levels = levels  # StorageType -> storage object (created on first use when a callable)
        self.slots = {}  # id(storage) -> _Slots
        self.held = {StorageType.RAM: {}, StorageType.DISK: {}}  # level -> key -> {"ics": _Entry, "deps": {i: _Entry}}
        self.work_deps = {}  # step -> (_Entry, owned)
        self.position = 0
        self.fresh = False
        self.finalized = schedule.max_n is not None
        self.ended_forward = False
        self.ended_reverse = False
        self.forward_steps = 0
        self.reverse_steps = 0
        self.saves = 0
        self.loads = 0
        self.peak = {StorageType.RAM: 0, StorageType.DISK: 0}
        self.reader = None  # the schedule read ahead (_ahead), once finalized
        self.pace = Pace()  # the run's step times and reads' waits (_ahead)
        self.unsaved_reads = deque()  # DISK reads read ahead before their save (_announce)

    # storages and slots
    def storage(self, level):
        if level not in self.levels:
            raise RevolverError(f"the schedule stores in {level.name}, which this Revolver has no storage for")
        s = self.levels[level]
        if callable(s) and not isinstance(s, Storage):
            s = self.levels[level] = s()
        if id(s) not in self.slots:
            self.slots[id(s)] = _Slots(s)
        return s

    def save(self, level, step):
        s = self.storage(level)
        slot = self.slots[id(s)].take(step)
        with self.r.profiler.get_timer("checkpoint", "takeshot"):
            s.save(slot, self.r.checkpoint.get_data(step))
        self.saves += 1
        return _Entry(step, s, slot)

    def restore(self, entry):
        try:
            with self.r.profiler.get_timer("checkpoint", "restore"):
                entry.storage.load(entry.slot, self.r.checkpoint.get_data_location(entry.step))
        except OSError as e:
            error = type(e)(f"restoring the snapshot of time step {entry.step} ({entry.storage.name}, slot {entry.slot}): {e}")
            error.step = entry.step
            raise error from e
        self.loads += 1
        self.position, self.fresh = entry.step, False

    def free(self, entry):
        entry.storage.remove(entry.slot)
        self.slots[id(entry.storage)].give(entry.slot)

    def count_held(self):
        for level, records in self.held.items():
            count = sum((r["ics"] is not None) + len(r["deps"]) for r in records.values())
            self.peak[level] = max(self.peak[level], count)

    # the user's operators
    def fwd(self, t0, t1):
        if not (0 <= t0 < t1 <= self.n):
            raise AssertionError(f"internal error: forward range [{t0}, {t1}) outside [0, {self.n}]")
        with self.r.profiler.get_timer("forward" if not self.ended_forward else "reverse", "advance"):
            self.r.fwd_operator.apply(t_start=t0, t_end=t1)
        self.forward_steps += t1 - t0
        self.position, self.fresh = t1, True

    def rev(self, i):
        with self.r.profiler.get_timer("reverse", "reverse"):
            self.r.rev_operator.apply(t_start=i, t_end=i + 1)
        self.reverse_steps += 1

    # the actions
    def forward(self, a):
        n0, n1 = a.n0, min(a.n1, self.n)
        if n0 != self.position or n0 >= self.n:
            raise AssertionError(f"internal error: {a} with the forward at step {self.position} of {self.n}")
        level = a.storage
        if a.write_ics:
            record = self.held[level].setdefault(n0, {"ics": None, "deps": {}})
            record["ics"] = self.save(level, n0)
        if a.write_adj_deps:
            for i in range(n0, n1):
                if i < n1 - 1 or level != StorageType.WORK:
                    if level == StorageType.WORK:
                        self.work_deps[i] = (self.save(StorageType.RAM, i), True)
                    else:
                        self.held[level].setdefault(n0, {"ics": None, "deps": {}})["deps"][i] = self.save(level, i)
                self.fwd(i, i + 1)
        else:
            self.fwd(n0, n1)
        self.count_held()
        if not self.finalized and n1 == self.n:
            self.schedule.finalize(self.n)
            self.finalized = True

    def find_deps(self, i):
        if i in self.work_deps:
            return self.work_deps[i][0]
        for records in self.held.values():
            for record in records.values():
                if i in record["deps"]:
                    return record["deps"][i]
        return None

    def reverse(self, a):
        for i in range(a.n1 - 1, a.n0 - 1, -1):
            if not (self.position == i + 1 and self.fresh):
                if self.position != i:
                    entry = self.find_deps(i)
                    if entry is None:
                        raise AssertionError(f"internal error: {a} reverses step {i} with no data for it")
                    self.restore(entry)
                self.fwd(i, i + 1)
            self.rev(i)
            self.fresh = False
            if a.clear_adj_deps:
                if i in self.work_deps:
                    entry, owned = self.work_deps.pop(i)
                    if owned:
                        self.free(entry)
                else:
                    for records in self.held.values():
                        for key, record in list(records.items()):
                            entry = record["deps"].pop(i, None)
                            if entry is not None:
                                self.free(entry)
                                if record["ics"] is None and not record["deps"]:
                                    del records[key]

    def transfer(self, a, keep):
        records = self.held[a.from_storage]
        if a.n not in records:
            raise AssertionError(f"internal error: {a} with nothing stored for step {a.n} in {a.from_storage.name}")
        record = records[a.n]
        if a.to_storage == StorageType.WORK:
            if record["ics"] is not None:
                self.restore(record["ics"])
                if not keep:
                    self.free(record["ics"])
            for i, entry in record["deps"].items():
                self.work_deps[i] = (entry, not keep)
            if not keep:
                del records[a.n]
        elif a.to_storage == StorageType.NONE:
            if not keep:
                del records[a.n]
                for entry in [record["ics"], *record["deps"].values()]:
                    if entry is not None:
                        self.free(entry)
        else:
            target = self.held[a.to_storage].setdefault(a.n, {"ics": None, "deps": {}})
            dst = self.storage(a.to_storage)

            def copy(entry):
                slot = self.slots[id(dst)].take(entry.step)
                dst.save(slot, entry.storage._read(entry.slot))
                if not keep:
                    self.free(entry)
                return _Entry(entry.step, dst, slot)

            if record["ics"] is not None:
                target["ics"] = copy(record["ics"])
            for i, entry in record["deps"].items():
                target["deps"][i] = copy(entry)
            if not keep:
                del records[a.n]
        self.count_held()

    def step(self, a):
        """Carries out one action; returns it."""
        if isinstance(a, Forward):
            self.forward(a)
        elif isinstance(a, Reverse):
            self.reverse(a)
        elif isinstance(a, Copy):
            self.transfer(a, True)
        elif isinstance(a, Move):
            self.transfer(a, False)
        elif isinstance(a, EndForward):
            if self.position != self.n:
                raise AssertionError(f"internal error: the forward ended at step {self.position}, not {self.n}")
            self.ended_forward = True
        elif isinstance(a, EndReverse):
            self.ended_reverse = True
        else:
            raise AssertionError(f"internal error: unexpected action {a!r}")

    def run_until(self, end):
        pace = self.pace
        for a in self._ahead():
            start = time.perf_counter()
            self.step(a)
            pace.record(a, time.perf_counter() - start)
            if self.unsaved_reads:
                self.unsaved_reads = announce_saved(self.unsaved_reads, a, self._prefetch)
            if isinstance(a, end):
                return
        raise AssertionError(f"internal error: the schedule ended before {end.__name__}")

    def _ahead(self):
        """The schedule's actions, read ``LOOK_AHEAD`` ahead and further
        by the run's measured pace (:class:`adjoint_checkpoints._prefetch.ReadAhead`,
        the Rust executor's rule): each one read
        that restores from the disk level announces its snapshot to the
        storage (a background disk store starts reading it). An online
        schedule is read one action at a time (its next actions depend on
        when the forward ends). One reader serves every call, so that the
        actions it has read ahead carry over."""
        if not self.finalized:
            return iter(self.schedule)
        if self.reader is None:
            self.reader = ReadAhead(self.schedule, entered=self._announce, pace=self.pace)
        return self.reader

    def _announce(self, a):
        """Announces the disk read of ``a`` (an action joining those read
        ahead) to its storage; one whose snapshot is not saved yet waits
        for the save (:func:`~adjoint_checkpoints._prefetch.announce_saved`),
        as the Rust executor's reads behind a save in their window do."""
        n = reads_from_disk(a)
        if n is not None and not self._prefetch(n):
            self.unsaved_reads.append(n)

    def _prefetch(self, n):
        """Asks the storage of the disk snapshot of step ``n`` to read it
        ahead; whether one is held."""
        record = self.held[StorageType.DISK].get(n)
        if record is None:
            return False
        for entry in [record["ics"], *record["deps"].values()]:
            if entry is not None:
                entry.storage.prefetch(entry.slot)
        return True

    def release(self, settle=True):
        """Frees every snapshot held; with ``settle``, then waits for the
        storages' background work (the removals among it), so that nothing
        of the run is left on disk when it returns."""
        for records in self.held.values():
            for record in records.values():
                for entry in [record["ics"], *record["deps"].values()]:
                    if entry is not None:
                        self.free(entry)
            records.clear()
        for entry, owned in self.work_deps.values():
            if owned:
                self.free(entry)
        self.work_deps.clear()
        if settle:
            for storage in self.levels.values():
                if isinstance(storage, Storage):
                    storage.settle()
