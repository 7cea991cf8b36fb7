"""The errors of the pyrevolve drop-in: bad arguments
(:class:`RevolverError`) and calls out of order
(:class:`RevolverStateError`)."""


class RevolverError(ValueError):
    """Arguments that give no valid checkpointing run: ``n_timesteps`` or
    ``n_checkpoints`` below 1, a schedule for another number of steps, a
    storage list of more than two levels...

    >>> from adjoint_checkpoints.pyrevolve import Revolver
    >>> Revolver(None, None, None, 4, 0)
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.pyrevolve.RevolverError: n_timesteps must be at least 1, got 0
    """


class RevolverStateError(RuntimeError):
    """``apply_reverse`` before ``apply_forward``, either twice, or any of
    them after one that raised: a Revolver runs its schedule once; make a
    new one (its snapshots of the failed run are already freed)."""
