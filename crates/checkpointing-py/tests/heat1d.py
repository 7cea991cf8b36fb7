"""The explicit 1-D heat equation with a cubic reaction, in NumPy, for the
tests that drive schedules by hand (test_numpy_heat.py, test_pyrevolve.py):
held boundaries, diffusion ``LAMBDA`` and reaction ``GAMMA``, whose adjoint
depends on the stored states (so a wrong restore changes the gradient)."""

import numpy as np

LAMBDA, GAMMA = 0.45, 1e-4


def step(t):
    """One explicit step: held boundaries, diffusion and a cubic reaction."""
    out = t.copy()
    out[1:-1] = t[1:-1] + LAMBDA * (t[:-2] - 2.0 * t[1:-1] + t[2:]) - GAMMA * t[1:-1] ** 3
    return out


def adjoint_step(t, mu):
    """(d step / d t)^T mu, given the state t before the step."""
    out = mu.copy()
    out[1:-1] = (1.0 - 2.0 * LAMBDA - 3.0 * GAMMA * t[1:-1] ** 2) * mu[1:-1]
    out[:-2] += LAMBDA * mu[1:-1]
    out[2:] += LAMBDA * mu[1:-1]
    return out


def initial(cells):
    """``T[0] = 20``, zero elsewhere."""
    t = np.zeros(cells)
    t[0] = 20.0
    return t


def store_all(cells, steps):
    """The gradient of ``sum(T_n^2)`` with respect to ``T_0``, every state
    kept."""
    states, t = [], initial(cells)
    for _ in range(steps):
        states.append(t)
        t = step(t)
    mu = 2.0 * t
    for s in reversed(states):
        mu = adjoint_step(s, mu)
    return mu
