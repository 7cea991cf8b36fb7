"""The reference, checkpoint_schedules 1.0.4, which the test_reference_*.py
files run side by side with the drop-in."""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Numba not available"
    import checkpoint_schedules as ref  # noqa: F401 (what the tests import)
