"""A bounded, thread-safe cache, least recently used out first: the plan
caches of the PyTorch bridge (:mod:`adjoint_checkpoints.torch._cache`) and
of JAX's host mode (:mod:`adjoint_checkpoints.jax._host_plan`)."""

import threading
from collections import OrderedDict

#: Entries a cache keeps by default (least recently used out first).
MAX_ENTRIES = 32


class LRU:
    """A bounded mapping, least recently used out first; thread-safe.

    >>> cache = LRU(max_entries=2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
    1
    >>> cache.get("b") is None, len(cache)
    (True, 2)
    """

    def __init__(self, max_entries=MAX_ENTRIES):
        self.max_entries = max_entries
        self._data = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key):
        """The entry of ``key`` (now the most recent), or ``None``."""
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key, value):
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def get_or_make(self, key, make):
        """The entry of ``key``, or ``make()`` put there on a miss.

        >>> cache = LRU()
        >>> cache.get_or_make("a", lambda: 1), cache.get_or_make("a", lambda: 2)
        (1, 1)
        """
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def clear(self):
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self):
        return len(self._data)

    def items(self):
        with self._lock:
            return list(self._data.items())
