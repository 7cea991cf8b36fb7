"""Timings of a Revolver's actions, with ``pyrevolve.profiling``'s names: a
:class:`Profiler` adds up milliseconds and counts per section
(``"forward"``, ``"reverse"``, ``"storage"``) and action (``"advance"``,
``"takeshot"``, ``"restore"``, ``"reverse"``, ...).

>>> from adjoint_checkpoints.pyrevolve.profiling import Profiler
>>> profiler = Profiler()
>>> with profiler.get_timer("forward", "advance"):
...     pass
>>> profiler.counts, sorted(profiler.get_dict())
({'forward': {'advance': 1}}, ['forward_advance_counts', 'forward_advance_timing'])
"""

from timeit import default_timer

__all__ = ["Timer", "Profiler"]


class Timer:
    """A context manager that adds its elapsed time (milliseconds) to
    ``profiler``'s ``section``/``action`` on exit; ``elapsed`` (ms) and
    ``elapsed_secs`` hold it afterwards."""

    def __init__(self, profiler, section, action):
        self.profiler = profiler
        self.section = section
        self.action = action
        self.timer = default_timer

    def __enter__(self):
        self.start = self.timer()
        return self

    def __exit__(self, *exc):
        self.elapsed_secs = self.timer() - self.start
        self.elapsed = 1000.0 * self.elapsed_secs
        self.profiler.increment(self.section, self.action, self.elapsed)
        return False


class Profiler:
    """Milliseconds (``timings``) and counts (``counts``), each a dict of
    sections of dicts of actions."""

    def __init__(self):
        self.timings = {}
        self.counts = {}

    def get_timer(self, section, action):
        """A :class:`Timer` for ``section``/``action``."""
        return Timer(self, section, action)

    def increment(self, section, action, elapsed):
        """Adds ``elapsed`` milliseconds and one count."""
        timings = self.timings.setdefault(section, {})
        timings[action] = timings.get(action, 0) + elapsed
        counts = self.counts.setdefault(section, {})
        counts[action] = counts.get(action, 0) + 1

    def summary(self):
        """A text table of the timings (ms) and counts."""
        lines = ["****************"]
        for section, actions in self.timings.items():
            lines.append(f"In section {section}:")
            for action, elapsed in actions.items():
                lines.append(f"\tAction {action}: {elapsed:f} ({self.counts[section][action]})")
        lines.append("****************")
        return "\n".join(lines)

    def get_dict(self):
        """Flat ``{"<section>_<action>_timing": "<ms, 2 decimals>",
        "<section>_<action>_counts": count}``, as pyrevolve's."""
        out = {}
        for section, actions in self.timings.items():
            for action, elapsed in actions.items():
                out[f"{section}_{action}_timing"] = f"{elapsed:.2f}"
        for section, actions in self.counts.items():
            for action, count in actions.items():
                out[f"{section}_{action}_counts"] = count
        return out
