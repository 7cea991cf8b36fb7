"""``checkpoint_schedules.hrevolve_sequences.basic_functions``: the objects
the H-Revolve sequence builders produce: :class:`Operation` (one operation,
such as ``F_0->3`` or ``WD_0``), :class:`Function` (the name and arguments of
a sub-sequence), :class:`Sequence` (a tree of operations and sub-sequences,
with its makespan and the checkpoints it writes) and :class:`Table` (a row
of a dynamic program), with the helpers ``beta``, ``argmin`` and
``from_list_to_string``.

They behave as those of ``checkpoint_schedules`` 1.0.4 do: the same
attributes, ``repr``, costs, and mutating methods (``shift``, ``insert``,
``remove``...), so that code written for the reference cannot tell them
apart.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.basic_functions import Operation
>>> op = Operation("Forward", [0, 3], {"uf": 2})
>>> op, op.cost()
(F_0->3, 6)
>>> op.shift(2); op
F_2->5
"""

import math

#: The operation types and their short names, as printed.
official_names = {
    "Forward": "F",
    "Backward": "B",
    "Checkpoint": "C",
    "Read_disk": "RD",
    "Write_disk": "WD",
    "Read_memory": "RM",
    "Write_memory": "WM",
    "Discard_disk": "DD",
    "Discard_memory": "DM",
    "Read": "R",
    "Write": "W",
    "Discard": "D",
    "Discard_Forward": "DF",
    "Forward_branch": "F",
    "Backward_branch": "B",
    "Turn": "T",
    "Write_Forward": "WF",
    "Write_Forward_memory": "WFM",
    "Discard_branch": "DB",
    "Discard_Forward_branch": "DFB",
    "Checkpoint_branch": "C",
    "Discard_Forward_disk": "DFD",
    "Discard_Forward_memory": "DFM",
}

# Names of the sequences over a storage hierarchy (``storage`` per level
# instead of ``memory`` and ``disk``).
_HIERARCHIC = ("HRevolve", "hrevolve_aux")

# Operation types whose index list starts with a branch number.
_BRANCH_TYPES = (
    "Forward_branch",
    "Discard_branch",
    "Discard_Forward_branch",
    "Checkpoint_branch",
    "Backward_branch",
)


# Operation types costing one parameter.
_PRICED = {
    "Backward": "ub",
    "Backward_branch": "cbwd",
    "Turn": "up",
    "Read_disk": "rd",
    "Write_disk": "wd",
}


def beta(x, y):
    """The binomial coefficient ``(x + y)! / (x! y!)`` as a float (``0``
    for ``y < 0``): the number of steps that ``x`` snapshots reverse with
    ``y`` recomputations of each step at most."""
    if y < 0:
        return 0
    return math.factorial(x + y) / (math.factorial(x) * math.factorial(y))


def argmin(list):  # noqa: A002 (the reference's parameter name)
    """One plus the position of the last smallest item of ``list`` (a split
    point, counted from 1)."""
    best = list[0]
    position = 0
    for i, _ in enumerate(list):
        if list[i] <= best:
            best = list[i]
            position = i
    return position + 1


def from_list_to_string(list):  # noqa: A002
    """``(a, b; c)`` for ``[a, b, c]``: the items but the last, separated by
    commas, then a semicolon and the last one."""
    head = ", ".join(str(x) for x in list[:-1])
    return "(" + head + "; " + str(list[-1]) + ")"


def _is(obj, class_name):
    # The reference tells operations, sequences and functions apart by the
    # name of their class.
    return obj.__class__.__name__ == class_name


class Operation:
    """One operation of a sequence.

    ``type`` is a key of :data:`official_names`; ``index`` the step
    (an ``int``), a ``[start, end]`` pair for ``Forward`` and ``Backward``,
    or ``[level, step]`` in H-Revolve sequences (``[branch, ...]`` for
    branch operations); ``params`` the costs (see
    :func:`~adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.utils.revolver_parameters`).
    An unknown ``type`` raises ``ValueError``.
    """

    def __init__(self, operation_type, operation_index, params):
        if operation_type not in official_names:
            raise ValueError("Unreconized operation name: " + operation_type)
        self.type = operation_type
        self.index = operation_index
        self.params = params

    def __repr__(self):
        index = self.index
        if index is None:
            return official_names[self.type]
        if isinstance(index, int):
            return official_names[self.type] + "_" + str(index)
        if not isinstance(index, list):
            return None  # as the reference: repr() then raises TypeError
        short = official_names[self.type]
        if self.type in ("Forward", "Backward"):
            return short + "_" + str(index[0]) + "->" + str(index[1])
        if self.type == "Forward_branch":
            return short + "^" + str(index[0]) + "_" + str(index[1]) + "->" + str(index[2])
        return short + "^" + str(index[0]) + "_" + str(index[1])

    def cost(self):
        """The cost of the operation: ``uf`` per forward step, ``ub`` per
        adjoint step, ``wd``/``rd`` for disk (or level) writes and reads,
        ``up`` for a turn, 0 for the rest."""
        kind = self.type
        if kind == "Forward":
            return (self.index[1] - self.index[0]) * self.params["uf"]
        if kind == "Forward_branch":
            return (self.index[2] - self.index[1]) * self.params["uf"]
        if kind in _PRICED:
            return self.params[_PRICED[kind]]
        if kind == "Read":
            return self.params["rd"][self.index[0]]
        if kind in ("Write", "Write_Forward"):
            return self.params["wd"][self.index[0]]
        if kind in official_names:
            return 0
        raise ValueError("Unknown cost for operation type " + kind)

    def shift(self, size, branch=-1):
        """Moves the operation ``size`` steps later, in place (a branch
        operation only if it is on ``branch``)."""
        index = self.index
        if isinstance(index, int):
            self.index = index + size
        elif isinstance(index, list):
            if self.type in ("Forward", "Backward"):
                index[0] += size
                index[1] += size
            elif self.type == "Forwards_multi":
                index[1] += size
                index[2] += size
            elif self.type in _BRANCH_TYPES:
                if index[0] == branch:
                    for i in range(1, len(index)):
                        index[i] += size
            else:
                index[1] += size


class Function:
    """The name and arguments of a (sub-)sequence: ``name`` (such as
    ``"Revolve"``), ``list`` (its number of steps) and ``index`` (its
    snapshots, or ``[level, slots]`` for H-Revolve)."""

    def __init__(self, name, list, index):  # noqa: A002
        self.name = name
        self.list = list
        self.index = index

    def __repr__(self):
        if self.name in _HIERARCHIC:
            return self.name + "_" + str(self.index[0]) + "(" + str(self.list) + ", " + str(self.index[1]) + ")"
        return self.name + "(" + str(self.list) + ", " + str(self.index) + ")"


class Sequence:
    """A sequence of operations and sub-sequences, built by a function
    (``function``, a :class:`Function`).

    ``sequence`` holds the items in order, ``makespan`` the sum of their
    costs; ``memory`` and ``disk`` (or, for H-Revolve, ``storage``, one list
    per level of ``levels``) the steps whose checkpoints the sequence
    writes. ``type`` is ``"Function"``. ``concat`` chooses how the sequence
    prints and iterates: 0 flat (every operation), 1 or 2 with Revolve (and
    1D-Revolve) sub-sequences as their function, and, for H-Revolve, ``k``
    with the sub-sequences of levels below ``k`` as their function.
    """

    def __init__(self, function, levels=None, concat=0):
        self.sequence = []
        self.function = function
        self.levels = levels
        self.concat = concat
        self.makespan = 0
        if self._hierarchic():
            self.storage = [[] for _ in range(self.levels)]
        else:
            self.memory = []
            self.disk = []
        self.type = "Function"

    def _hierarchic(self):
        return self.function.name in _HIERARCHIC

    def __repr__(self):
        if self._hierarchic():
            return repr(self.concat_sequence_hierarchic(self.concat))
        if self.concat == 3:
            return from_list_to_string(self.canonical())
        return repr(self.concat_sequence(self.concat))

    def __iter__(self):
        return iter(self.concat_sequence(self.concat))

    def canonical(self):
        """The numbers of snapshots plus one of the Revolve sub-sequences,
        last first."""
        name = self.function.name
        if name == "Disk-Revolve":
            concat = 2
        if name in ("1D-Revolve", "Revolve"):
            concat = 1
        items = self.concat_sequence(concat=concat)
        out = [x.l + 1 for x in items if _is(x, "Function")]
        out.reverse()
        return out

    def concat_sequence(self, concat):
        """The items as a flat list: the operations, and the sub-sequences
        expanded, but those of Revolve (``concat`` 1), or of Revolve and
        1D-Revolve (``concat`` 2), which are given by their function."""
        out = []
        for x in self.sequence:
            if _is(x, "Operation"):
                out.append(x)
            elif _is(x, "Sequence"):
                if self.concat == 0:
                    out.extend(x.concat_sequence(concat=concat))
                elif concat == 1:
                    if x.function.name == "Revolve":
                        out.append(x.function)
                    else:
                        out.extend(x.concat_sequence(concat=concat))
                elif concat == 2:
                    if x.function.name in ("Revolve", "1D-Revolve"):
                        out.append(x.function)
                    else:
                        out.extend(x.concat_sequence(concat=concat))
                else:
                    raise ValueError("Unknown concat value: " + str(concat))
            else:
                raise ValueError("Unknown class name: " + x.__class__.__name__)
        return out

    def concat_sequence_hierarchic(self, concat):
        """The items as a flat list, the H-Revolve sub-sequences of levels
        below ``concat`` given by their function (``concat`` 0: all
        expanded)."""
        out = []
        for x in self.sequence:
            if _is(x, "Operation"):
                out.append(x)
            elif _is(x, "Sequence"):
                if concat == 0:
                    out.extend(x.concat_sequence_hierarchic(concat=concat))
                elif x.function.name == "HRevolve" and x.function.index[0] <= concat - 1:
                    out.append(x.function)
                else:
                    out.extend(x.concat_sequence_hierarchic(concat=concat))
            else:
                raise ValueError("Unknown class name: " + x.__class__.__name__)
        return out

    def _book(self, operation):
        # Where the checkpoint an operation writes is recorded (or None).
        kind = operation.type
        if kind in ("Write_memory", "Write_Forward_memory", "Checkpoint"):
            return self.memory, operation.index
        if kind == "Write_disk":
            return self.disk, operation.index
        if kind == "Write":
            return self.storage[operation.index[0]], operation.index[1]
        return None

    def insert(self, operation):
        """Appends an operation, adding its cost and the checkpoint it
        writes."""
        self.sequence.append(operation)
        self.makespan += operation.cost()
        booked = self._book(operation)
        if booked is not None:
            booked[0].append(booked[1])
        elif operation.type == "Checkpoint_branch":
            self.memory.append((operation.index[0], operation.index[1]))

    def remove(self, operation_index):
        """Deletes the operation at ``operation_index``, subtracting its
        cost and forgetting the checkpoint it writes."""
        operation = self.sequence[operation_index]
        self.makespan -= operation.cost()
        booked = self._book(operation)
        if booked is not None:
            booked[0].remove(booked[1])
        del self.sequence[operation_index]

    def insert_sequence(self, sequence):
        """Appends a sub-sequence, adding its makespan and checkpoints."""
        self.sequence.append(sequence)
        self.makespan += sequence.makespan
        if self._hierarchic():
            for level, steps in enumerate(self.storage):
                steps += sequence.storage[level]
        else:
            self.memory += sequence.memory
            self.disk += sequence.disk

    def shift(self, size, branch=-1):
        """Moves every operation ``size`` steps later, in place; returns the
        sequence."""
        for x in self.sequence:
            x.shift(size, branch=branch)
        if self._hierarchic():
            for level in range(len(self.storage)):
                self.storage[level] = [step + size for step in self.storage[level]]
        else:

            def moved(x):
                if type(x) is int:
                    return x + size
                if x[0] == branch:
                    return (x[0], x[1] + size)
                return (x[0], x[1])

            self.memory = [moved(x) for x in self.memory]
            self.disk = [moved(x) for x in self.disk]
        return self

    def remove_useless_wm(self, K=-1):
        """Drops a leading memory write (or checkpoint, or write into level
        ``K``); returns the sequence."""
        if self.sequence:
            first = self.sequence[0]
            if first.type in ("Write_memory", "Checkpoint") or (
                first.type == "Write" and first.index[0] == K
            ):
                self.remove(0)
        return self

    def remove_last_discard(self):
        """Drops the final discard operation (of the last sub-sequence
        too)."""
        if self.sequence[-1].type == "Function":
            self.sequence[-1].remove_last_discard()
        if self.sequence[-1].type in ("Discard_memory", "Discard_disk", "Discard", "Discard_branch"):
            self.remove(-1)

    def first_operation(self):
        """The first operation, looking into sub-sequences."""
        first = self.sequence[0]
        return first.first_operation() if first.type == "Function" else first

    def next_operation(self, i):
        """The operation after item ``i``, looking into sub-sequences."""
        after = self.sequence[i + 1]
        return after.first_operation() if after.type == "Function" else after

    def _branch_memory(self, index, is_step):
        for i, x in enumerate(self.memory):
            if is_step(x):
                self.memory[i] = (index, x)

    def _drop(self, positions):
        for removed, position in enumerate(positions):
            self.remove(position - removed)

    def convert_old_to_branch(self, index):
        """Rewrites the sequence's operations as those of branch ``index``
        (in place; returns the sequence). Two-level (memory and disk)
        sequences raise ``ValueError``."""
        self._branch_memory(index, lambda x: type(x) is int)
        dropped = []
        for i, op in enumerate(self.sequence):
            kind = op.type
            if kind == "Function":
                self.sequence[i] = self.sequence[i].convert_old_to_branch(index)
            elif kind == "Forward":
                op.type = "Forward_branch"
                op.index = [index] + op.index
            elif kind == "Backward":
                op.type = "Backward_branch"
                op.index = [index, op.index]
            elif kind in ("Read", "Read_memory"):
                if self.next_operation(i).type == "Backward":
                    dropped.append(i)
                else:
                    op.type = "Checkpoint_branch"
                    op.index = [index, op.index]
            elif kind in ("Write", "Write_memory"):
                op.type = "Checkpoint_branch"
                op.index = [index, op.index]
            elif kind in ("Discard", "Discard_memory"):
                dropped.append(i)
            elif kind in ("Read_disk", "Write_disk", "Discard_disk"):
                raise ValueError(_OLD_TWO_LEVEL)
            else:
                raise ValueError(_OLD_UNKNOWN + op.type)
        self._drop(dropped)
        return self

    def convert_new_to_branch(self, index):
        """Rewrites the sequence's forward, backward and checkpoint
        operations as those of branch ``index`` (in place; returns the
        sequence). Two-level sequences raise ``ValueError``."""
        self._branch_memory(index, lambda x: isinstance(x, int))
        for i, op in enumerate(self.sequence):
            kind = op.type
            if kind == "Function":
                self.sequence[i] = self.sequence[i].convert_new_to_branch(index)
            elif kind == "Forward":
                op.type = "Forward_branch"
                op.index = [index] + op.index
            elif kind == "Backward":
                op.type = "Backward_branch"
                op.index = [index, op.index]
            elif kind == "Checkpoint":
                op.type = "Checkpoint_branch"
                op.index = [index, op.index]
            elif kind in ("Forward_branch", "Turn", "Discard_branch", "Backward_branch"):
                continue
            elif kind in ("Read_disk", "Write_disk", "Discard_disk"):
                raise ValueError(_NEW_TWO_LEVEL)
            else:
                raise ValueError("Unknown data type: " + op.type)
        return self


# The reference's messages, spaces included (they continue a line inside a
# string literal).
_OLD_TWO_LEVEL = (
    "Cannot use convert_old_to_branch on " + " " * 33 + "sequences from two-memory architecture"
)
_NEW_TWO_LEVEL = (
    "Cannot use convert_new_to_branch on " + " " * 34 + "sequences from two-memory architecture"
)
_OLD_UNKNOWN = "Unknown data type %s in " + " " * 33 + "convert_old_to_branch"


class Table:
    """A growing row of a dynamic program: ``content`` (the values), ``size``
    (their number). Indexing out of ``0 <= i < len`` raises
    ``IndexError``."""

    def __init__(self, n=0, x=float("inf")):
        self.content = [x for _ in range(n)]
        self.size = n
        self.print_table = 0

    def set_to_print(self, file_name):
        """Also writes each appended value to the file ``file_name``."""
        self.print_table = 1
        self.file = open(file_name, "w")  # noqa: SIM115 (closed by __del__)
        self.file.write("#l\tvalue\n")

    def append(self, x):
        """Appends a value."""
        self.content.append(x)
        self.size += 1
        if self.print_table:
            self.file.write("%d\t%d\n" % (self.size - 1, x))
            if self.size % 10 == 0:
                self.file.flush()

    def remove(self, x):
        """Removes the first value equal to ``x``."""
        self.content.remove(x)
        self.size -= 1

    def __getitem__(self, i):
        if i < 0 or i >= len(self):
            raise IndexError("Index out of range. Table length: " + str(len(self)) + ",Index: " + str(i))
        return self.content[i]

    def __repr__(self):
        return repr(self.content)

    def __len__(self):
        return len(self.content)

    def __del__(self):
        if self.print_table == 1:
            self.file.flush()
            self.file.close()
