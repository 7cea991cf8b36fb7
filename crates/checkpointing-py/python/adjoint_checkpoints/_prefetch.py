"""The switch of the drivers' reads ahead: ``ADJOINT_CHECKPOINTS_PREFETCH=0``
in the environment makes the PyTorch driver (``host_memory=``) and
``checkpointed_scan(mode="host")`` read each snapshot back at the action
that needs it instead of ahead of it (to compare, or to hold no carry on
the device before its read). Read when a run starts."""

import os

#: The environment variable; ``"0"`` turns reads ahead off.
PREFETCH_ENV = "ADJOINT_CHECKPOINTS_PREFETCH"


def prefetch_on() -> bool:
    """Whether reads ahead are on (they are unless the variable is ``"0"``).

    >>> import os
    >>> from adjoint_checkpoints._prefetch import PREFETCH_ENV, prefetch_on
    >>> os.environ.get(PREFETCH_ENV) is not None or prefetch_on()
    True
    """
    return os.environ.get(PREFETCH_ENV, "1") != "0"
