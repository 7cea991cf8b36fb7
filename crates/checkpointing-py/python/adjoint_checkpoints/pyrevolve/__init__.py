"""A drop-in for pyrevolve 2.2.8 (the checkpointing behind Devito's
gradients), driven by this package's schedules.

The API is pyrevolve's, with its meanings: users implement
:class:`Operator` (``apply(t_start=, t_end=)`` runs steps ``t_start`` to
``t_end - 1``) and :class:`Checkpoint` (``get_data(t)`` and
``get_data_location(t)``: the arrays that make the state *before* step
``t``; ``size`` and ``dtype``); a :class:`Revolver` (also
:class:`MemoryRevolver`), :class:`DiskRevolver`,
:class:`SingleLevelRevolver` or :class:`MultiLevelRevolver` runs the
forward with :meth:`~BaseRevolver.apply_forward`, storing snapshots, then
the adjoint with :meth:`~BaseRevolver.apply_reverse`. The storages
(:class:`NumpyStorage`, :class:`BytesStorage`, :class:`DiskStorage`),
``compression_params`` (:mod:`.compression`), :class:`Profiler` and the
classic helpers ``adjust``, ``numforw``, ``expense`` and ``maxrange``
(:mod:`.crevolve`) are here too.

The index contract (pyrevolve's, which Devito relies on): the forward
sweep calls ``fwd.apply`` on ranges that cover ``[0, n_timesteps)`` in
order; reversing step ``i`` calls ``fwd.apply(t_start=i, t_end=i + 1)``
then ``rev.apply(t_start=i, t_end=i + 1)``, except the first reversed step
(``n_timesteps - 1``), whose forward has just run. Snapshots are the state
before a step, restored with ``get_data_location(t)`` and replayed. No
operator is ever called with a range outside ``[0, n_timesteps]``.

What differs from pyrevolve: the schedule. By default a Revolver follows
classic Revolve with ``n_checkpoints`` snapshots (``adjust(n)`` when
``None``), as pyrevolve does, with the same number of forward steps; any
of this package's schedules can replace it, per Revolver with the
keyword-only ``schedule=``, or for every Revolver made afterwards with
:func:`set_default_schedule` (so that Devito, which makes its Revolvers
itself, uses it unchanged). A schedule is one of:

- a schedule object (``adjoint_checkpoints.HRevolve(n, 3, 20)``,
  ``adjoint_checkpoints.OnlineR2(10)``, a :func:`adjoint_checkpoints.plan` result...):
  for one Revolver, whose ``n_timesteps`` must be its ``max_n`` (online
  schedules, ``max_n=None``, are finalized at ``n_timesteps``);
- a function ``f(n_timesteps, state_bytes)`` returning one, called for each
  Revolver (``state_bytes`` is ``checkpoint.nbytes``): e.g.
  ``lambda n, nbytes: adjoint_checkpoints.HRevolve(n, 3, 20)``;
- :func:`planned` (``planned(ram="2GiB", disk="100GB")``): each Revolver
  measures its forward step and its disk level, then plans with
  :func:`adjoint_checkpoints.plan`.

With a schedule that stores on disk, a :class:`MemoryRevolver` keeps its
RAM snapshots in memory and the disk ones in a :class:`DiskStorage` under
``filedir`` (the system's temporary directory by default).

Where snapshots go is a choice too, per Revolver with the keyword-only
``ram=`` and ``disk=``, or for every Revolver with
:func:`set_default_storage`: ``"numpy"`` (RAM, pyrevolve's
:class:`NumpyStorage`, the default), ``"ram"``, ``"disk"`` (checksummed
files, the default on disk) or ``"hdf5"``, each of the last three
optionally compressed by this project's Rust stores:
``"ram:zstd"``, ``"disk:lz4"``, ``"disk:zfp:abs=1e-6"`` (error-bounded,
the bound checked on every write), ``"hdf5:zstd"``
(:class:`~adjoint_checkpoints.pyrevolve.storage.ArrayStorage`,
:class:`adjoint_checkpoints.ArrayStore`).

Use it in place of pyrevolve with :func:`install_as_pyrevolve` before the
code that imports pyrevolve (Devito does at ``import devito``)::

    import adjoint_checkpoints, adjoint_checkpoints.pyrevolve
    adjoint_checkpoints.pyrevolve.install_as_pyrevolve(
        schedule=lambda n, nbytes: adjoint_checkpoints.HRevolve(n, 3, 20),
        disk="disk:zstd")
    import devito  # its Revolver is this module's, with that schedule

An example, with a time buffer as Devito's: ``state`` holds
``(u_t, u_{t+1})``; a forward step squares the newest value into the
buffer, the reverse operator (which pyrevolve runs right after the forward
of the same step) multiplies the adjoint ``lam`` by ``du_{t+1}/du_t = 2 u_t``.
The gradient is store-all's, bit for bit, whatever the schedule:

>>> import numpy as np
>>> import adjoint_checkpoints
>>> from adjoint_checkpoints.pyrevolve import Checkpoint, Operator, Revolver
>>> state, lam = np.array([0.0, 1.0001]), np.zeros(1)
>>> class Forward(Operator):
...     def apply(self, t_start, t_end):
...         for t in range(t_start, t_end):
...             state[:] = state[1], state[1] ** 2
>>> class Adjoint(Operator):
...     def apply(self, t_start, t_end):
...         lam[:] *= 2.0 * state[0]
>>> class State(Checkpoint):
...     size, dtype = 2, np.float64
...     def get_data(self, t):
...         return [state]
...     def get_data_location(self, t):
...         return [state]
>>> us = [1.0001]
>>> for t in range(9):
...     us.append(us[-1] ** 2)
>>> expected = 1.0
>>> for u in reversed(us):
...     expected *= 2.0 * u
>>> revolver = Revolver(State(), Forward(), Adjoint(), 3, 10)
>>> revolver.apply_forward()
>>> lam[:] = 1.0
>>> revolver.apply_reverse()
>>> bool(lam[0] == expected), revolver.forward_steps  # pyrevolve's 25 forward steps
(True, 25)
>>> state[:], lam[:] = (0.0, 1.0001), 0.0
>>> online = Revolver(State(), Forward(), Adjoint(), None, 10, schedule=adjoint_checkpoints.OnlineR2(3))
>>> online.apply_forward(); lam[:] = 1.0; online.apply_reverse()
>>> bool(lam[0] == expected)
True
"""

import sys
from types import ModuleType
from typing import Any, Optional

from . import compression, crevolve, profiling, storage
from ._defaults import get_default_schedule, get_default_storage, set_default_schedule, set_default_storage
from ._errors import RevolverError, RevolverStateError
from ._planned import Planned, planned
from ._revolvers import (
    BaseRevolver,
    Checkpoint,
    DiskRevolver,
    MemoryRevolver,
    MultiLevelRevolver,
    Operator,
    SingleLevelRevolver,
)
from .crevolve import RevolveError, adjust, expense, maxrange, numforw
from .profiling import Profiler
from .storage import ArrayStorage, BytesStorage, DiskStorage, NumpyStorage, Storage, StorageError

__all__ = [
    "Operator",
    "Checkpoint",
    "BaseRevolver",
    "SingleLevelRevolver",
    "MemoryRevolver",
    "Revolver",
    "DiskRevolver",
    "MultiLevelRevolver",
    "Storage",
    "NumpyStorage",
    "BytesStorage",
    "ArrayStorage",
    "DiskStorage",
    "StorageError",
    "Profiler",
    "RevolverError",
    "RevolverStateError",
    "RevolveError",
    "adjust",
    "numforw",
    "expense",
    "maxrange",
    "set_default_schedule",
    "get_default_schedule",
    "set_default_storage",
    "get_default_storage",
    "install_as_pyrevolve",
    "planned",
    "Planned",
    "compression",
    "crevolve",
    "profiling",
    "storage",
]

__version__ = "2.2.8"

# The classes defined in the private modules are this package's names: their
# reprs, tracebacks and pickles say ``adjoint_checkpoints.pyrevolve.X``.
for _cls in (RevolverError, RevolverStateError, Planned, Operator, Checkpoint, BaseRevolver, SingleLevelRevolver,
             MemoryRevolver, DiskRevolver, MultiLevelRevolver):
    _cls.__module__ = __name__
del _cls


#: pyrevolve's name for :class:`MemoryRevolver`.
Revolver = MemoryRevolver

#: pyrevolve's submodules, by their names under ``pyrevolve``.
MODULES = {
    "crevolve": crevolve,
    "compression": compression,
    "storage": storage,
    "profiling": profiling,
}


def install_as_pyrevolve(schedule: Any = None, *, ram: Optional[str] = None, disk: Optional[str] = None) -> ModuleType:
    """Make ``import pyrevolve`` give this module (and
    ``pyrevolve.pyrevolve``, ``.crevolve``, ``.compression``, ``.storage``
    and ``.profiling`` its modules), so that code written for pyrevolve
    2.2.8, Devito's included, runs on it unchanged; with ``schedule``, also
    :func:`set_default_schedule` (schedule); with ``ram`` or ``disk``,
    also :func:`set_default_storage` (ram, disk). Call it before that code
    imports pyrevolve (for Devito: before ``import devito``). Modules of a
    pyrevolve imported before are dropped from ``sys.modules``. Returns this
    module.

    >>> import sys
    >>> import adjoint_checkpoints.pyrevolve
    >>> saved = {k: v for k, v in sys.modules.items() if k == "pyrevolve" or k.startswith("pyrevolve.")}
    >>> adjoint_checkpoints.pyrevolve.install_as_pyrevolve()  # doctest: +ELLIPSIS
    <module 'adjoint_checkpoints.pyrevolve' ...>
    >>> from pyrevolve import Revolver, Checkpoint, Operator
    >>> from pyrevolve.crevolve import adjust
    >>> Revolver is adjoint_checkpoints.pyrevolve.MemoryRevolver, adjust(498)
    (True, 6)
    >>> for k in [k for k in sys.modules if k == "pyrevolve" or k.startswith("pyrevolve.")]:
    ...     del sys.modules[k]
    >>> sys.modules.update(saved)
    """
    package = sys.modules[__name__]
    if schedule is not None:
        set_default_schedule(schedule)
    if ram is not None or disk is not None:
        set_default_storage(ram=ram, disk=disk)
    for name in [name for name in sys.modules if name.startswith("pyrevolve.")]:
        del sys.modules[name]
    sys.modules["pyrevolve"] = package
    sys.modules["pyrevolve.pyrevolve"] = package
    for name, module in MODULES.items():
        sys.modules[f"pyrevolve.{name}"] = module
    return package
