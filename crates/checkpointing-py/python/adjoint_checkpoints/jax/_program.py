"""The program of the compiled path of
:func:`adjoint_checkpoints.jax.checkpointed_scan`: a schedule turned, at trace
time, into two small programs of int32 records, which the XLA loops of
:mod:`adjoint_checkpoints.jax._compiled` interpret.

At trace time the number of steps is static: the schedule's actions (from
:func:`adjoint_checkpoints.action_arrays`, computed in Rust) are replayed once in
Python by :class:`Plan`, which

- gives every stored carry a *slot* in a preallocated buffer (one buffer
  for the ``RAM`` level and the ``WORK`` adjoint dependencies, one for the
  ``DISK`` level), reusing freed slots, so that a buffer holds as many
  carries as the schedule stores at once, no more;
- advances the live carry lazily: a ``Forward`` only moves a target, and
  steps run when a state is needed (to store it, or to differentiate a
  step). The step that a schedule runs only to produce the adjoint
  dependencies of a ``Reverse`` of one step (``Forward(i, i+1, ...,
  WORK)``; ``Reverse(i+1, i)``) is not run at all: ``jax.vjp`` of the step
  from the live carry ``x_i`` recomputes it anyway;
- emits the records ``(op, a, b, buffer, slot, buffer2, slot2)``: advance
  the live carry from step ``a`` to ``b``, save it to a slot, load it from
  a slot, differentiate step ``a`` from the live carry or from a slot, copy
  a slot between buffers, and with ``tapes=True`` tape step ``a`` (run it
  under ``jax.vjp`` and keep its residuals in a slot of a third buffer).

With ``tapes=True`` (what ``memory=`` plans) the ``WORK`` adjoint
dependencies that a schedule keeps for later (``Forward(i, j, False, True,
WORK)`` over several steps, as the tape-aware ``HeterogeneousRevolve``
emits) are the steps' VJP residuals (:mod:`._residuals`), recorded when the
step runs, instead of the carries before them: the adjoint of a taped step
applies its stored pullback and runs nothing forward.

The forward program holds the actions up to ``EndForward``, the backward
program the rest. Consecutive records are packed into fused records
(:func:`fuse`: transfer, load, advance, save, adjoint step), one loop
iteration each.

The last step's adjoint dependency (the carry before the last step) is
handed from the forward to the backward as its initial live carry rather
than stored beside the snapshots, so Revolve with ``s`` snapshots compiles
to a program holding ``s + 2`` carries (snapshots, live carry, adjoint)
plus one step's VJP workspace.
"""

import heapq

import numpy as np

from .. import _arrays

ADVANCE, SAVE, LOAD, VJP_LIVE, VJP_SLOT, TRANSFER, TAPE = range(7)
"""Op codes of the compiled records."""

OP_NAMES = ("advance", "save", "load", "vjp_live", "vjp_slot", "transfer", "tape")

RAM, DISK, WORK, NONE = 0, 1, -1, -2
"""Storage codes of the native records (``_arrays.STORAGE_CODES``)."""

READ_AHEAD_TAPES = 2
"""Tapes a backward that reads its tapes ahead holds besides its tape
buffer (:func:`._compiled.pull_back_tapes`: the tape being pulled back and
the next one, each in the loop's carry), as XLA's CPU backend allocates
them (measured with ``memory_analysis``)."""


def reads_ahead(tapes):
    """Whether a backward whose buffer holds ``tapes`` tapes (a scratch slot
    for a step reversed from a carry not counted) reads them ahead of their
    pullbacks, at :data:`READ_AHEAD_TAPES` more tapes' bytes: where it holds
    two or more, so that the least budgets (one tape) stay what they are.

    >>> reads_ahead(1), reads_ahead(2)
    (False, True)
    """
    return tapes >= 2


def held_tapes(tapes):
    """The tapes' bytes, in tapes, that a backward holding ``tapes`` tapes
    takes: those and, where it reads them ahead (:func:`reads_ahead`), the
    tapes read ahead.

    >>> held_tapes(0), held_tapes(1), held_tapes(2)
    (0, 1, 4)
    """
    return tapes + (READ_AHEAD_TAPES if reads_ahead(tapes) else 0)


DEVICE_BUFFER, DISK_BUFFER, TAPE_BUFFER = 0, 1, 2
"""Buffer 0 holds ``RAM`` snapshots and spilled ``WORK`` dependencies;
buffer 1 the ``DISK`` level's snapshots; buffer 2 the tapes (steps' VJP
residuals) of a plan with ``tapes=True``."""


class ScheduleError(ValueError):
    """A schedule whose actions cannot be executed (e.g. it restores a
    checkpoint that was never stored)."""


class _Slots:
    """Slots of one buffer, reference counted (a ``Copy`` within a buffer
    shares the slot), the smallest free slot reused first."""

    def __init__(self):
        self.size = 0
        self.free = []
        self.refs = {}

    def take(self):
        slot = heapq.heappop(self.free) if self.free else self.size
        self.size = max(self.size, slot + 1)
        self.refs[slot] = 1
        return slot

    def share(self, slot):
        self.refs[slot] += 1

    def release(self, slot):
        self.refs[slot] -= 1
        if self.refs[slot] == 0:
            del self.refs[slot]
            heapq.heappush(self.free, slot)

    def held(self):
        return len(self.refs)


class Plan:
    """A schedule of ``length`` steps compiled into a forward and a backward
    program (``int32`` arrays of shape ``(records, 7)``).

    Attributes: ``forward`` and ``backward`` (the programs), ``fused``
    (both as the fused records that the loops run, see :func:`fuse`),
    ``slots`` (the number of carries of each buffer: device, disk level),
    ``forward_steps`` (step evaluations outside ``jax.vjp``, both halves),
    ``schedule_forward_steps`` (the schedule's own count, which includes the
    steps that the lazy advance skips), ``adjoint_steps``,
    ``peak_stored`` (most carries stored at once, both buffers),
    ``tape_slots`` (tapes in the tape buffer, the last one for the
    residuals of a step reversed from a carry; 0 unless the plan tapes),
    ``read_ahead`` (whether the backward reads its tapes ahead,
    :func:`reads_ahead`),
    ``taped_steps`` (steps run under ``jax.vjp`` to record their tape),
    ``handoff`` (the step whose carry the forward hands to the backward as
    its live carry: the last step's adjoint dependency, or ``None``) and
    ``backward_reads_final`` (whether the backward program starts from the
    forward's final carry, which then becomes a residual).

    >>> import adjoint_checkpoints
    >>> plan = Plan(adjoint_checkpoints.Revolve(8, 3), 8)
    >>> plan.slots, plan.adjoint_steps, plan.handoff
    ((3, 0), 8, 7)
    >>> [OP_NAMES[op] for op in plan.forward[:, 0]][:3]
    ['save', 'advance', 'save']
    """

    def __init__(self, schedule, length, prefix=None, tapes=False):
        """``prefix``: the columns of the actions already read from
        ``schedule`` (``_revolve.identify``), which come first. ``tapes``:
        keep ``WORK`` adjoint dependencies as tapes (see the module)."""
        if schedule.max_n is not None and schedule.max_n != length:
            raise ValueError(f"the schedule is for {schedule.max_n} steps, the scan has {length}")
        columns = _arrays.action_arrays(schedule, steps=None if schedule.max_n is not None else length)
        if prefix is not None:
            columns = {key: np.concatenate([prefix[key], columns[key]]) for key in columns}
        self.length = length
        self.tapes = tapes
        self.slots_of = (_Slots(), _Slots(), _Slots())
        self.store = {RAM: {}, DISK: {}}
        self.deps = {}  # step -> (buffer, slot), or "live": the live carry
        self.pos = 0  # the step of the live carry
        self.target = 0  # the step where the schedule believes it is
        self.final_live = False  # the live carry is the forward's output
        self.mirror = None  # a slot released by a Move that still equals the live carry
        self.handoff = None  # the step of the carry that the forward hands to the backward
        self.backward_reads_final = False
        self.forward_steps = 0
        self.schedule_forward_steps = 0
        self.adjoint_steps = 0
        self.taped_steps = 0
        self.peak_stored = 0
        self.out = []
        forward = None
        ended = False
        kinds = columns["kind"]
        for k in range(len(kinds)):
            kind = int(kinds[k])
            n0, n1 = int(columns["n0"][k]), int(columns["n1"][k])
            if kind == _arrays.FORWARD:
                self._forward(
                    n0,
                    min(n1, length),
                    bool(columns["write_ics"][k]),
                    bool(columns["write_adj_deps"][k]),
                    int(columns["storage"][k]),
                )
            elif kind == _arrays.REVERSE:
                if forward is None:
                    raise ScheduleError(f"Reverse({n1}, {n0}) before EndForward")
                self._reverse(n0, n1, bool(columns["clear_adj_deps"][k]))
            elif kind in (_arrays.COPY, _arrays.MOVE):
                self._transfer(
                    n0, int(columns["from_storage"][k]), int(columns["to_storage"][k]), kind == _arrays.MOVE
                )
            elif kind == _arrays.END_FORWARD:
                if self.target != length:
                    raise ScheduleError(f"EndForward at step {self.target} of {length}")
                self._end_forward()
                forward, self.out = self.out, []
            elif kind == _arrays.END_REVERSE:
                ended = True
                break
            carries = self.slots_of[DEVICE_BUFFER].held() + self.slots_of[DISK_BUFFER].held()
            self.peak_stored = max(self.peak_stored, carries)
        if forward is None or not ended:
            raise ScheduleError("the schedule ended before its EndForward and EndReverse")
        if self.adjoint_steps != length:
            raise ScheduleError(f"the schedule reverses {self.adjoint_steps} steps of {length}")
        self._drop_mirror()
        self.forward = _table(forward)
        self.backward = _table(self.out)
        self.fused = (fuse(self.forward), fuse(self.backward))
        self.slots = (self.slots_of[DEVICE_BUFFER].size, self.slots_of[DISK_BUFFER].size)
        tapes = self.slots_of[TAPE_BUFFER].size
        # A plan that tapes keeps one slot more: the residuals of a step
        # reversed from a carry are recorded there before its pullback
        # (the programme counts that tape in its budget too).
        self.tape_slots = tapes + 1 if tapes else 0
        self.read_ahead = reads_ahead(tapes)
        del self.out, self.store, self.deps

    def buffer_bytes(self, carry_bytes, tape_bytes):
        """The bytes of the plan's buffers (allocated once, for the whole
        gradient): every slot of carries and of tapes, and the tapes read
        ahead (:func:`reads_ahead`)."""
        tapes = max(self.tape_slots - 1, 0)  # the scratch slot not counted
        return sum(self.slots) * carry_bytes + (self.tape_slots - tapes + held_tapes(tapes)) * tape_bytes

    # -- emitted records ------------------------------------------------

    def _emit(self, op, a=0, b=0, buf=0, slot=0, buf2=0, slot2=0):
        self.out.append((op, a, b, buf, slot, buf2, slot2))

    def _reads_live(self):
        if self.final_live:
            self.backward_reads_final = True

    def _take(self, buf):
        if self.mirror is not None and self.mirror[0] == buf:
            self._drop_mirror()  # never grow a buffer to keep a mirror
        return self.slots_of[buf].take()

    def _drop_mirror(self):
        if self.mirror is not None:
            self._release(self.mirror)
            self.mirror = None

    def _save_live(self, buf):
        if self.mirror is not None and self.mirror[0] == buf:
            ref, self.mirror = self.mirror, None  # the slot holds the live carry already
            return ref
        self._reads_live()
        slot = self._take(buf)
        self._emit(SAVE, buf=buf, slot=slot)
        return buf, slot

    def _spill_live_dep(self):
        """The live carry is about to change: a dependency held lazily in it
        goes to a slot (with ``tapes``: the step is taped, which advances
        the live carry by that step)."""
        if self.deps.get(self.pos) != "live":
            return
        if not self.tapes:
            self.deps[self.pos] = self._save_live(DEVICE_BUFFER)
            return
        self._drop_mirror()
        self._reads_live()
        slot = self.slots_of[TAPE_BUFFER].take()
        self._emit(TAPE, self.pos, self.pos + 1, buf=TAPE_BUFFER, slot=slot)
        self.deps[self.pos] = (TAPE_BUFFER, slot)
        self.taped_steps += 1
        self.pos += 1

    def _materialize(self, step):
        """Runs the live carry up to ``step``."""
        if step < self.pos:
            raise ScheduleError(f"the live carry is at step {self.pos}, past {step}")
        if step > self.pos:
            self._spill_live_dep()
            self._drop_mirror()
        if step > self.pos:
            self._reads_live()
            self._emit(ADVANCE, self.pos, step)
            self.forward_steps += step - self.pos
            self.pos = step

    def _release(self, ref):
        self.slots_of[ref[0]].release(ref[1])

    @staticmethod
    def _buffer(level):
        if level == RAM:
            return DEVICE_BUFFER
        if level == DISK:
            return DISK_BUFFER
        raise ScheduleError(f"no snapshot level {_arrays.STORAGE_CODES.get(level, level)}")

    # -- actions -----------------------------------------------------------

    def _forward(self, n0, n1, write_ics, write_adj_deps, storage):
        if n0 != self.target:
            raise ScheduleError(f"Forward({n0}, {n1}) while the forward is at step {self.target}")
        self.schedule_forward_steps += n1 - n0
        if write_ics and storage != WORK:
            self._materialize(n0)
            entry = self.store[storage].setdefault(n0, {"ics": None, "deps": {}})
            if entry["ics"] is not None:
                self._release(entry["ics"])
            entry["ics"] = self._save_live(self._buffer(storage))
        if write_adj_deps:
            for i in range(n0, n1):
                self._materialize(i)
                if storage == WORK:
                    self._set_dep(i, "live")
                else:
                    entry = self.store[storage].setdefault(n0, {"ics": None, "deps": {}})
                    if i in entry["deps"]:
                        self._release(entry["deps"][i])
                    entry["deps"][i] = self._save_live(self._buffer(storage))
        self.target = n1

    def _set_dep(self, i, ref):
        old = self.deps.get(i)
        if old is not None and old != "live":
            self._release(old)
        self.deps[i] = ref

    def _end_forward(self):
        """Runs the live carry to the end. The last step's dependency (the
        carry before it, held lazily in the live carry) is handed over to
        the backward as its initial live carry (``handoff``: the forward
        keeps it aside while it computes the final carry) instead of taking
        a slot beside the snapshots."""
        i = self.pos
        if i < self.length and self.deps.get(i) == "live":
            self.handoff = i
            self.forward_steps += self.length - i
            return
        self._materialize(self.length)
        self.final_live = True

    def _reverse(self, n0, n1, clear):
        for i in range(n1 - 1, n0 - 1, -1):
            ref = self.deps.get(i)
            if ref is None:
                raise ScheduleError(f"Reverse of step {i} without its adjoint dependencies")
            if ref == "live":
                if self.pos != i:
                    raise ScheduleError(f"internal: dependency of step {i} lost")
                self._reads_live()
                self._emit(VJP_LIVE, i)
            else:
                self._emit(VJP_SLOT, i, buf=ref[0], slot=ref[1])
            self.adjoint_steps += 1
            if clear:
                if ref != "live":
                    self._release(ref)
                del self.deps[i]

    def _transfer(self, n, source, dest, move):
        level = self.store.get(source)
        if level is None:
            raise ScheduleError(f"no snapshot level {_arrays.STORAGE_CODES.get(source, source)}")
        entry = level.get(n)
        if entry is None:
            raise ScheduleError(f"no checkpoint of step {n} in {_arrays.STORAGE_CODES[source]}")
        refs = ([entry["ics"]] if entry["ics"] is not None else []) + list(entry["deps"].values())
        if dest == WORK:
            if entry["ics"] is not None:
                if self.pos != n or self.final_live:
                    self._spill_live_dep()
                    self._drop_mirror()
                    buf, slot = entry["ics"]
                    self._emit(LOAD, buf=buf, slot=slot)
                    self.final_live = False
                    self.pos = n
                    if move:
                        # The slot keeps a copy of the live carry until the
                        # carry changes: a save of it in the meantime (a
                        # dependency, or the same snapshot again) is free.
                        self.mirror = entry["ics"]
                        entry["ics"] = None
                self.target = n
            for i, ref in entry["deps"].items():
                if not move:
                    self.slots_of[ref[0]].share(ref[1])
                self._set_dep(i, ref)
            if move and entry["ics"] is not None:
                self._release(entry["ics"])
        elif dest == NONE:
            for ref in refs:
                self._release(ref)
        elif dest in (RAM, DISK):
            buf = self._buffer(dest)

            def place(ref):
                if ref[0] == buf:
                    if not move:
                        self.slots_of[buf].share(ref[1])
                    return ref
                slot = self._take(buf)
                self._emit(TRANSFER, buf=ref[0], slot=ref[1], buf2=buf, slot2=slot)
                if move:
                    self._release(ref)
                return buf, slot

            new = {
                "ics": None if entry["ics"] is None else place(entry["ics"]),
                "deps": {i: place(ref) for i, ref in entry["deps"].items()},
            }
            old = self.store[dest].get(n)
            if old is not None:
                for ref in ([old["ics"]] if old["ics"] is not None else []) + list(old["deps"].values()):
                    self._release(ref)
            self.store[dest][n] = new
        else:
            raise ScheduleError(f"a transfer to {_arrays.STORAGE_CODES.get(dest, dest)}")
        if move or dest == NONE:
            del level[n]


def _table(records):
    return np.asarray(records, dtype=np.int32).reshape(-1, 7)


# -- fused records -----------------------------------------------------------

# Columns of a fused record: one loop iteration runs, in this order, an
# optional transfer between buffers, an optional load, optional tapes
# (TP_COUNT steps from TP_STEP into slots from TP_SLOT up), an advance
# (a == b: none), an optional save, optional adjoint steps (V_STEP < 0:
# none; V_BUF: -1 from the live carry, else the buffer of its slot; from
# tapes, V_COUNT steps from V_STEP down, their slots from V_SLOT down).
(T_DIR, T_SRC, T_DST, L_BUF, L_SLOT, A_FROM, A_TO, S_BUF, S_SLOT, V_STEP, V_BUF, V_SLOT, TP_STEP, TP_SLOT, TP_COUNT,
 V_COUNT) = range(16)
_PHASE = {TRANSFER: 0, LOAD: 1, TAPE: 2, ADVANCE: 3, SAVE: 4, VJP_LIVE: 5, VJP_SLOT: 5}
_EMPTY = (-1, 0, 0, -1, 0, 0, 0, -1, 0, -1, -1, 0, -1, 0, 0, 0)


def fuse(table):
    """Packs a program's records (``Plan.forward``/``Plan.backward``) into
    fused records of 16 int32 columns, each a transfer, load, tapes,
    advance, save and adjoint steps, any of them absent (-1, or an empty
    advance): a sequence such as load, advance, save, advance, adjoint
    step takes two loop iterations instead of five. Consecutive tapes of
    consecutive steps into consecutive slots are one record, and so are
    consecutive adjoint steps from such tapes, in reverse: with
    ``lax.scan``'s memory, the forward is one record and the backward
    two.

    >>> import adjoint_checkpoints
    >>> plan = Plan(adjoint_checkpoints.Revolve(8, 3), 8)
    >>> len(plan.backward), len(fuse(plan.backward))
    (21, 10)
    """
    fused, row, last = [], None, 99
    for op, a, b, buf, slot, buf2, slot2 in (tuple(int(v) for v in r) for r in table):
        phase = _PHASE[op]
        if op == TAPE and last == phase and (a, slot) == (row[TP_STEP] + row[TP_COUNT], row[TP_SLOT] + row[TP_COUNT]):
            row[TP_COUNT] += 1
            continue
        if (
            op == VJP_SLOT
            and buf == TAPE_BUFFER
            and last == phase
            and row[V_BUF] == TAPE_BUFFER
            and (a, slot) == (row[V_STEP] - row[V_COUNT], row[V_SLOT] - row[V_COUNT])
        ):
            row[V_COUNT] += 1
            continue
        if phase <= last:
            row = list(_EMPTY)
            fused.append(row)
        last = phase
        if op == TRANSFER:
            row[T_DIR:T_DST + 1] = [0 if buf == DEVICE_BUFFER else 1, slot, slot2]
        elif op == LOAD:
            row[L_BUF], row[L_SLOT] = buf, slot
        elif op == TAPE:
            row[TP_STEP], row[TP_SLOT], row[TP_COUNT] = a, slot, 1
        elif op == ADVANCE:
            row[A_FROM], row[A_TO] = a, b
        elif op == SAVE:
            row[S_BUF], row[S_SLOT] = buf, slot
        else:
            row[V_STEP], row[V_COUNT] = a, 1
            if op == VJP_SLOT:
                row[V_BUF], row[V_SLOT] = buf, slot
    if not fused:
        fused.append(list(_EMPTY))
    return np.asarray(fused, dtype=np.int32)
