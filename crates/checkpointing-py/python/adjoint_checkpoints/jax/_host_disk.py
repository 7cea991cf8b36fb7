"""The ``DISK`` level of ``checkpointed_scan(mode="host")``: carries in host
memory (NumPy arrays), copied off the devices in the background and put
back on them ahead of the read that needs them.

A save (:class:`HostCarry`) starts each leaf's device-to-host copy
(``jax.Array.copy_to_host_async``) and returns at once, so that the copy
runs while the steps after it are dispatched and computed; instead of
``jax.device_get`` at the save, which waits for the step that made the
carry and for the copy before the next step is even dispatched. The carry
is *settled* (:meth:`HostCarry.settle`: fetched into NumPy arrays,
compressed with ``compress=``, its device buffers dropped) by the run once
the next ``Forward`` action has dispatched its steps, at the end of the
forward sweep at the latest, or when it is read.

A read announced ahead (:meth:`HostCarry.prefetch`) starts the copy back to
the devices with ``jax.device_put``, which also returns at once; the read
then takes those arrays (:meth:`HostCarry.unpack`). The run announces the
reads of the schedule's next ``LOOK_AHEAD`` actions (the Rust executor's
count; :class:`adjoint_checkpoints._prefetch.ReadAhead`), and further,
while the actions ahead are predicted from measured step times to take
less than twice the measured read
(:meth:`adjoint_checkpoints._prefetch.Pace.measured`: JAX returns from a
step before the device has run it, so the run cannot time its own
actions): with ``memory=`` the plan's measurements, with a ``schedule``
the same measurements made for the pace alone (at the first gradient,
cached), one stored carry at a time, and not across the end of the
forward sweep: at most one carry is on the devices ahead of its read.
``ADJOINT_CHECKPOINTS_PREFETCH=0`` in the environment turns the
announcements off (:func:`adjoint_checkpoints._prefetch.prefetch_on`);
``ADJOINT_CHECKPOINTS_BACKGROUND=0`` settles each carry at its save, the
caller waiting for its copy (the blocking level, to compare;
:func:`adjoint_checkpoints._prefetch.background_on`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import codecs


class HostCarry:
    """A carry as the ``DISK`` level keeps it: in host memory (a sharded
    leaf gathered whole), its float32/float64 leaves compressed with the
    codec ``spec`` if given, and the shardings to put it back on the
    devices with. Until :meth:`settle`, its device arrays are held and
    their copies to the host are in flight."""

    __slots__ = ("treedef", "shardings", "spec", "leaves", "compressed", "pending", "fetched")

    def __init__(self, carry, spec=None):
        leaves, self.treedef = jax.tree_util.tree_flatten(carry)
        self.shardings = [getattr(leaf, "sharding", None) for leaf in leaves]
        self.spec = spec
        for leaf in leaves:
            if isinstance(leaf, jax.Array):
                leaf.copy_to_host_async()
        #: The device arrays whose copies are in flight (``None`` once settled).
        self.pending = leaves
        self.leaves, self.compressed = None, None
        #: The carry put back on the devices ahead of its read, or ``None``.
        self.fetched = None

    def settle(self):
        """Waits for the copies to the host, compresses, and drops the
        device arrays. Idempotent."""
        if self.pending is None:
            return
        leaves, self.pending = jax.device_get(self.pending), None
        self.compressed = [self.spec is not None and _compressible(leaf) for leaf in leaves]
        self.leaves = [codecs.compress(leaf, self.spec) if c else leaf for leaf, c in zip(leaves, self.compressed)]

    def prefetch(self):
        """Starts putting the carry back on the devices (asynchronous in
        JAX); :meth:`unpack` then returns it."""
        if self.fetched is None:
            self.fetched = self._restored()

    def forget_prefetch(self):
        """Drops the devices' copy made by :meth:`prefetch`, if any."""
        self.fetched = None

    def unpack(self):
        """The carry back on the devices, each leaf with its sharding: the
        prefetched copy if there is one (handed over), else put now."""
        carry, self.fetched = self.fetched, None
        return carry if carry is not None else self._restored()

    def _restored(self):
        self.settle()
        leaves = [
            codecs.decompress(leaf) if packed else leaf for leaf, packed in zip(self.leaves, self.compressed)
        ]
        leaves = [_restore(leaf, sharding) for leaf, sharding in zip(leaves, self.shardings)]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


def _restore(leaf, sharding):
    """A leaf from host memory on the devices: with its sharding (a
    ``NamedSharding`` over a mesh...), or as ``jnp.asarray`` puts it (on the
    default device, uncommitted) for a leaf that was on one device."""
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return jnp.asarray(leaf)
    return jax.device_put(leaf, sharding)


def _compressible(leaf):
    return isinstance(leaf, np.ndarray) and leaf.dtype in (np.float32, np.float64) and leaf.size > 0
