"""``checkpoint_schedules.hrevolve_sequences``: the Revolve family as trees
of operations, as ``checkpoint_schedules`` 1.0.4 builds them: ``revolve``,
``revolve_1d``, ``disk_revolve``, ``periodic_disk_revolve`` and
``hrevolve`` return a :class:`~.basic_functions.Sequence` (printable,
iterable over its operations, with its ``makespan``) of
:class:`~.basic_functions.Operation` and sub-sequences, the same as the
reference's, operation for operation, with the same values and exceptions.
The submodules ``basic_functions``, ``utils``, ``revolve``, ``revolve_1d``,
``disk_revolve``, ``periodic_disk_revolve`` and ``hrevolve`` have every
public name of the reference's modules.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences import revolve
>>> s = revolve(2, 1, 2, 2, 1, 1)
>>> s, s.makespan
([WM_0, F_0->2, WFM_3, F_2->3, B_3->2, DFM_3, RM_0, F_0->1, WFM_2, F_1->2, B_2->1, DFM_2, RM_0, WFM_1, F_0->1, B_1->0, DFM_1, DM_0], 9)
"""

from . import basic_functions, utils  # noqa: F401
from .revolve import revolve  # noqa: F401
from .revolve_1d import revolve_1d  # noqa: F401
from .disk_revolve import disk_revolve  # noqa: F401
from .periodic_disk_revolve import periodic_disk_revolve  # noqa: F401
from .hrevolve import hrevolve  # noqa: F401

# The submodules (the package's attributes of the same names but the first
# two are the functions).
_SUBMODULES = ("basic_functions", "utils", "revolve", "revolve_1d", "disk_revolve", "periodic_disk_revolve", "hrevolve")
