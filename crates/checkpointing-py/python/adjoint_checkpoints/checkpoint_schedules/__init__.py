"""The module layout of ``checkpoint_schedules`` 1.0.4, on this package.

``adjoint_checkpoints.install_as_checkpoint_schedules()`` makes this package
``checkpoint_schedules`` and its submodules ``checkpoint_schedules.schedule``,
``.hrevolve``, ``.multistage``, ``.mixed``, ``.basic_schedules`` and
``.twolevel_binomial``: each has the public names of the reference's module
of the same name (those of its ``__all__``, the functions and classes it
defines, and the package's names it imports), so code written for the
reference imports unchanged. The classes are ``adjoint_checkpoints``'s own: the
same objects under both names.

The reference's ``hrevolve_sequences`` subpackage (the Revolve family as
trees of operations) is :mod:`.hrevolve_sequences`, installed with its
submodules, and the functions it exports at the top level are here too
(``revolve``, ``revolve_1d``, ``disk_revolve``, ``periodic_disk_revolve``
and ``hrevolve``, the function, as there; the module
``checkpoint_schedules.hrevolve`` is installed under its name).

>>> from adjoint_checkpoints.checkpoint_schedules import Revolve, mixed
>>> import adjoint_checkpoints
>>> Revolve is adjoint_checkpoints.Revolve, mixed.optimal_steps_mixed(10, 3)
(True, 19)
"""

import sys as _sys

from . import schedule, hrevolve, multistage, basic_schedules, mixed, twolevel_binomial  # noqa: F401
from .schedule import *  # noqa: F401, F403
from .hrevolve import *  # noqa: F401, F403
from .multistage import *  # noqa: F401, F403
from .basic_schedules import *  # noqa: F401, F403
from .mixed import *  # noqa: F401, F403
from .twolevel_binomial import *  # noqa: F401, F403

_hrevolve_module = hrevolve

from . import hrevolve_sequences  # noqa: E402
from .hrevolve_sequences import basic_functions, utils  # noqa: E402, F401
from .hrevolve_sequences import revolve, revolve_1d, disk_revolve, periodic_disk_revolve  # noqa: E402, F401

# As in the reference: the package's attribute ``hrevolve`` is the function;
# the module ``checkpoint_schedules.hrevolve`` is reached through
# ``sys.modules`` (MODULES below).
from .hrevolve_sequences import hrevolve  # noqa: E402, F811

#: The submodules, by their dotted name below ``checkpoint_schedules``:
#: what ``install_as_checkpoint_schedules()`` puts in ``sys.modules``.
MODULES = {
    "schedule": schedule,
    "hrevolve": _hrevolve_module,
    "multistage": multistage,
    "basic_schedules": basic_schedules,
    "mixed": mixed,
    "twolevel_binomial": twolevel_binomial,
    "hrevolve_sequences": hrevolve_sequences,
    **{
        f"hrevolve_sequences.{name}": _sys.modules[f"{hrevolve_sequences.__name__}.{name}"]
        for name in hrevolve_sequences._SUBMODULES
    },
}

__all__ = (
    schedule.__all__
    + _hrevolve_module.__all__
    + multistage.__all__
    + basic_schedules.__all__
    + mixed.__all__
    + twolevel_binomial.__all__
    + ["revolve", "revolve_1d", "disk_revolve", "periodic_disk_revolve", "hrevolve"]
)
