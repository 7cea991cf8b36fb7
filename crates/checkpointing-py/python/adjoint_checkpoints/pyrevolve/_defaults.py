"""The defaults every Revolver made afterwards uses
(:func:`set_default_schedule`, :func:`set_default_storage`) and the checks
of the arguments that choose a schedule, a store or a compression."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

import adjoint_checkpoints
from adjoint_checkpoints import Schedule

from . import compression
from ._errors import RevolverError
from .compression import init_compression


# -- the default schedule ---------------------------------------------------

_default_schedule = None


def _check_schedule_choice(schedule, what):
    from ._planned import Planned

    if schedule is None or isinstance(schedule, Planned) or callable(schedule) and not isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, Schedule):
        if what == "default" and not hasattr(schedule, "plan"):
            raise TypeError(
                "a default schedule is used by every Revolver made afterwards, and a schedule object runs once: "
                "pass a function f(n_timesteps, state_bytes) returning a fresh schedule, "
                "e.g. lambda n, nbytes: adjoint_checkpoints.HRevolve(n, 3, 20)"
            )
        return schedule
    raise TypeError(
        f"schedule must be None, a checkpointing schedule, planned(...) or a function f(n_timesteps, state_bytes) "
        f"returning a schedule, "
        f"got {type(schedule).__name__}"
    )


def set_default_schedule(schedule: Any) -> Any:
    """The schedule of every Revolver made afterwards without ``schedule=``
    (:class:`MemoryRevolver`, :class:`DiskRevolver`,
    :class:`SingleLevelRevolver`; :class:`MultiLevelRevolver` keeps its
    storage list's H-Revolve): ``None`` (classic Revolve, pyrevolve's), a
    function ``f(n_timesteps, state_bytes)`` returning a schedule, or a
    :func:`adjoint_checkpoints.plan` result (a fresh copy for each Revolver; its
    ``max_n`` must be theirs). Returns the previous default.

    >>> import adjoint_checkpoints
    >>> from adjoint_checkpoints import pyrevolve
    >>> previous = pyrevolve.set_default_schedule(lambda n, nbytes: adjoint_checkpoints.Revolve(n, 5))
    >>> pyrevolve.set_default_schedule(previous) is not None
    True
    >>> pyrevolve.set_default_schedule(adjoint_checkpoints.Revolve(10, 2))
    Traceback (most recent call last):
    ...
    TypeError: a default schedule is used by every Revolver made afterwards, and a schedule object runs once: pass a function f(n_timesteps, state_bytes) returning a fresh schedule, e.g. lambda n, nbytes: adjoint_checkpoints.HRevolve(n, 3, 20)
    """
    global _default_schedule
    schedule = _check_schedule_choice(schedule, "default")
    previous, _default_schedule = _default_schedule, schedule
    return previous


def get_default_schedule() -> Any:
    """The current default (see :func:`set_default_schedule`)."""
    return _default_schedule


# -- the default storages ---------------------------------------------------

#: The stores each level accepts in ``ram=`` / ``disk=`` specs.
_STORES = {"ram": ("numpy", "ram"), "disk": ("disk", "hdf5")}
_default_storage = {"ram": None, "disk": None}


class _StorageSpec:
    """A parsed ``ram=`` / ``disk=`` choice: ``store`` and ``codec``."""

    __slots__ = ("store", "codec", "text")

    def __init__(self, level, text):
        if not isinstance(text, str):
            raise TypeError(f"{level}= must be a string such as 'disk:zstd', got {type(text).__name__}")
        store, _, codec = text.partition(":")
        if store not in _STORES[level]:
            raise RevolverError(
                f"{level}={text!r}: the {level.upper()} level's store is "
                + " or ".join(repr(s) for s in _STORES[level])
                + ", optionally with a codec ('ram:zstd', 'disk:zfp:abs=1e-6')"
            )
        if store == "numpy" and codec:
            raise RevolverError(f"{level}={text!r}: 'numpy' takes no codec (pyrevolve's compression_params do)")
        self.store, self.codec, self.text = store, codec or None, text
        if self.codec is not None:
            adjoint_checkpoints.ArrayStore("ram", codec=self.codec)  # a bad or unavailable codec fails here

    def __repr__(self):
        return repr(self.text)


def _storage_choice(level, value):
    """The spec for ``level`` from an argument (``None``: the default)."""
    if value is None:
        return _default_storage[level]
    return value if isinstance(value, _StorageSpec) else _StorageSpec(level, value)


def set_default_storage(ram: Optional[str] = None, disk: Optional[str] = None) -> dict[str, Optional[str]]:
    """Where every Revolver made afterwards without ``ram=`` / ``disk=``
    keeps its snapshots: ``ram`` is ``"numpy"`` (pyrevolve's
    :class:`NumpyStorage`) or ``"ram"``, ``disk`` is ``"disk"`` or
    ``"hdf5"``, each but ``"numpy"`` optionally with a codec after a colon
    (``"ram:zstd"``, ``"disk:lz4"``, ``"disk:zfp:abs=1e-6"``,
    ``"hdf5:sz3:rel=1e-5"``); ``None`` restores pyrevolve's choice for that
    level. Returns the previous defaults as a dict.

    >>> from adjoint_checkpoints import pyrevolve
    >>> previous = pyrevolve.set_default_storage(disk="disk:zstd")
    >>> pyrevolve.get_default_storage()
    {'ram': None, 'disk': 'disk:zstd'}
    >>> pyrevolve.set_default_storage(**previous)["disk"]
    'disk:zstd'
    >>> pyrevolve.set_default_storage(disk="ram:zstd")
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.pyrevolve.RevolverError: disk='ram:zstd': the DISK level's store is 'disk' or 'hdf5', optionally with a codec ('ram:zstd', 'disk:zfp:abs=1e-6')
    """
    global _default_storage
    new = {
        level: None if value is None else _StorageSpec(level, value)
        for level, value in (("ram", ram), ("disk", disk))
    }
    previous, _default_storage = get_default_storage(), new
    return previous


def get_default_storage() -> dict[str, Optional[str]]:
    """The current defaults (see :func:`set_default_storage`), as a dict
    of specs (``None``: pyrevolve's)."""
    return {level: None if spec is None else spec.text for level, spec in _default_storage.items()}


def _compression_choice(compression_params, spec):
    """``(codec, compression)`` for an :class:`ArrayStorage`: the spec's
    codec, or pyrevolve's ``compression_params`` (its ``"zfp"`` scheme is
    the Rust codec ``zfp:abs=tolerance``; ``"blosc"`` and ``"custom"`` run
    in Python)."""
    scheme = None if compression_params is None else compression_params.get("scheme")
    if spec is not None and spec.codec is not None and scheme is not None:
        raise RevolverError(
            f"compression_params {{'scheme': {scheme!r}}} and the codec of {spec.text!r}: give one, not both"
        )
    if spec is not None and spec.codec is not None:
        return spec.codec, None
    if scheme is None:
        return None, None
    if scheme == "zfp":
        tolerance = compression_params.get("tolerance", compression.DEFAULTS["zfp"]["tolerance"])
        return f"zfp:abs={float(tolerance)!r}", None
    return None, init_compression(compression_params)


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise RevolverError(f"{name} must be at least 1, got {value}")
    return int(value)
