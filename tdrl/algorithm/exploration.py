"""Exploration helpers: action noise for deterministic actors, and epsilon schedules.

Action noise (DDPG, TD3, ...) is a callable ``noise(size) -> np.ndarray`` with ``reset()``:
:class:`GaussianNoise` and the Ornstein-Uhlenbeck :class:`OUNoise`. They draw from numpy's
global RNG by default, exactly as Tianshou's ``tianshou.exploration`` classes do (same seed, same
numbers), or from an ``rng`` passed in.

Schedules map a step count to a value, ``schedule(step) -> float``: typically the DQN family's
epsilon against the environment step, set from the trainer's ``train_fn(epoch, env_step)``::

    eps = LinearSchedule(1.0, 0.05, 1_000_000)
    train_fn = lambda epoch, env_step: policy.set_eps(eps(env_step))

Tianshou's examples anneal epsilon linearly over environment steps: the Atari DQN family goes
from 1.0 to 0.05 over the first 1M env steps and then stays at 0.05 (``LinearSchedule(1.0,
0.05, 1_000_000)`` gives the same numbers), and the classic-control DQN tests hold ``eps_train``
for 10k steps, fall to ``0.1 * eps_train`` by step 50k and stay there (``PiecewiseLinearSchedule
([(10_000, e), (50_000, 0.1 * e)])``).

>>> noise = GaussianNoise(sigma=0.1, rng=np.random.default_rng(0))
>>> noise((2,)).shape
(2,)
>>> LinearSchedule(1.0, 0.05, 1_000_000)(500_000)
0.525
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

__all__ = [
    "BaseNoise",
    "ExponentialSchedule",
    "GaussianNoise",
    "LinearSchedule",
    "OUNoise",
    "PiecewiseLinearSchedule",
    "Schedule",
]

RNG = np.random.Generator | np.random.RandomState


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def _nonneg(name: str, value: float) -> float:
    value = _finite(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def _shape(size: int | Sequence[int]) -> tuple[int, ...]:
    return (int(size),) if isinstance(size, int | np.integer) else tuple(int(s) for s in size)


# --------------------------------------------------------------------------- action noise


class BaseNoise(ABC):
    """Action noise: ``noise(size)`` returns an array of that shape; ``reset()`` restarts it."""

    @abstractmethod
    def __call__(self, size: int | Sequence[int]) -> np.ndarray:
        """Draw noise of shape ``size``."""

    def reset(self) -> None:  # noqa: B027 (stateless noises keep the default)
        """Restart the process (no-op for stateless noise)."""


class GaussianNoise(BaseNoise):
    """Independent Gaussian noise ``N(mu, sigma^2)``: DDPG's and TD3's default.

    :param mu: mean.
    :param sigma: standard deviation, ``>= 0``.
    :param rng: numpy ``Generator`` or ``RandomState`` to draw from; ``None``: numpy's global
        RNG (``np.random.seed`` makes it reproducible, and it matches Tianshou's
        ``GaussianNoise`` draw for draw).

    >>> np.random.seed(0)
    >>> GaussianNoise(0.0, 0.5)((3,)).round(4)
    array([0.882 , 0.2001, 0.4894])
    """

    def __init__(self, mu: float = 0.0, sigma: float = 1.0, *, rng: RNG | None = None) -> None:
        self.mu = _finite("mu", mu)
        self.sigma = _nonneg("sigma", sigma)
        self.rng = rng

    def __call__(self, size: int | Sequence[int]) -> np.ndarray:
        """Draw ``N(mu, sigma^2)`` noise of shape ``size``."""
        rng = np.random if self.rng is None else self.rng
        return np.asarray(rng.normal(self.mu, self.sigma, _shape(size)))

    def __repr__(self) -> str:
        return f"GaussianNoise(mu={self.mu}, sigma={self.sigma})"


class OUNoise(BaseNoise):
    """Ornstein-Uhlenbeck process, DDPG's original exploration noise (arXiv:1509.02971).

    Each call advances the process one Euler-Maruyama step and returns its state::

        x <- x + theta * dt * (mu - x) + sigma * sqrt(dt) * N(0, I)

    starting from ``x0`` (``None``: 0) after construction and after :meth:`reset`; the state also
    restarts at 0 when ``size`` changes shape. Matches Tianshou's ``OUNoise`` number for number
    on numpy's global RNG. One difference: ``size`` is normalised to a tuple (an int or a list is
    the same shape), whereas Tianshou compares it as given with the state's ``shape`` tuple and so
    restarts the process at 0 on every call when ``size`` is a list or an int.

    :param mu: long-run mean the process reverts to.
    :param sigma: volatility, ``>= 0``.
    :param theta: mean-reversion rate, ``>= 0``.
    :param dt: time step, ``> 0``.
    :param x0: initial state (a float or an array of the drawn shape); ``None``: 0.
    :param rng: numpy ``Generator`` or ``RandomState``; ``None``: numpy's global RNG.

    >>> ou = OUNoise(sigma=0.3, theta=0.15, dt=0.01, x0=1.0, rng=np.random.default_rng(0))
    >>> ou((2,)).round(4)
    array([1.0023, 0.9945])
    """

    def __init__(
        self,
        mu: float = 0.0,
        sigma: float = 0.3,
        theta: float = 0.15,
        dt: float = 1e-2,
        x0: float | np.ndarray | None = None,
        *,
        rng: RNG | None = None,
    ) -> None:
        self.mu = _finite("mu", mu)
        self.sigma = _nonneg("sigma", sigma)
        self.theta = _nonneg("theta", theta)
        self.dt = _finite("dt", dt)
        if self.dt <= 0:
            raise ValueError(f"dt must be > 0, got {dt!r}")
        self.x0 = x0
        self.rng = rng
        self._alpha = self.theta * self.dt
        self._beta = self.sigma * np.sqrt(self.dt)
        self._x: float | np.ndarray | None = None
        self.reset()

    def reset(self) -> None:
        """Restart the process at ``x0``."""
        self._x = self.x0

    def __call__(self, size: int | Sequence[int], mu: float | None = None) -> np.ndarray:
        """Advance one step and return the new state, of shape ``size``.

        :param size: shape of the noise.
        :param mu: mean to revert to for this step (``None``: the constructor's ``mu``).
        """
        shape = _shape(size)
        x = self._x
        if x is None or (isinstance(x, np.ndarray) and x.shape != shape):
            x = 0.0
        rng = np.random if self.rng is None else self.rng
        r = self._beta * rng.normal(size=shape)
        self._x = x + self._alpha * ((self.mu if mu is None else mu) - x) + r
        return np.array(self._x)  # a copy: callers may modify it without touching the state

    def __repr__(self) -> str:
        return (
            f"OUNoise(mu={self.mu}, sigma={self.sigma}, theta={self.theta}, dt={self.dt}, "
            f"x0={self.x0!r})"
        )


# ------------------------------------------------------------------------------ schedules


def _step(step: float) -> float:
    return _nonneg("step", step)


def _lerp(v0: float, v1: float, frac: float) -> float:
    # Tianshou's examples write the decay as ``v0 - frac * (v0 - v1)``; keep it to match them
    return v0 - frac * (v0 - v1)


class Schedule(ABC):
    """A value as a function of a step count: ``schedule(step) -> float``, ``step >= 0``."""

    @abstractmethod
    def __call__(self, step: float) -> float:
        """The value at ``step``."""


class LinearSchedule(Schedule):
    """Linear from ``start`` (step 0) to ``end`` (step ``steps``), then constant at ``end``.

    ``value(t) = start - t / steps * (start - end)`` for ``t < steps``, exactly ``end`` from
    ``steps`` on: the formula of Tianshou's Atari DQN ``train_fn`` (``LinearSchedule(1.0, 0.05,
    1_000_000)``), bit for bit except at ``t == steps``, where that formula rounds to
    ``0.050000000000000044``.

    :param start: value at step 0.
    :param end: value from step ``steps`` on.
    :param steps: length of the ramp, ``>= 1``.

    >>> eps = LinearSchedule(1.0, 0.1, 100)
    >>> [eps(t) for t in (0, 50, 100, 1000)]
    [1.0, 0.55, 0.1, 0.1]
    """

    def __init__(self, start: float, end: float, steps: int) -> None:
        self.start = _finite("start", start)
        self.end = _finite("end", end)
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
            raise ValueError(f"steps must be an int >= 1, got {steps!r}")
        self.steps = int(steps)

    def __call__(self, step: float) -> float:
        """The value at ``step``."""
        t = _step(step)
        if t >= self.steps:
            return self.end
        return _lerp(self.start, self.end, t / self.steps)

    def __repr__(self) -> str:
        return f"LinearSchedule(start={self.start}, end={self.end}, steps={self.steps})"


class ExponentialSchedule(Schedule):
    """Exponential approach from ``start`` to ``end``: ``end + (start - end) * exp(-t / decay)``.

    The gap to ``end`` shrinks by a factor ``e`` every ``decay_steps`` steps (the epsilon decay
    of PyTorch's DQN tutorial); ``end`` is approached but never crossed.

    :param start: value at step 0.
    :param end: asymptotic value.
    :param decay_steps: the e-folding time in steps, ``> 0``.

    >>> eps = ExponentialSchedule(1.0, 0.0, 1000)
    >>> round(eps(1000), 6), eps(0)
    (0.367879, 1.0)
    """

    def __init__(self, start: float, end: float, decay_steps: float) -> None:
        self.start = _finite("start", start)
        self.end = _finite("end", end)
        self.decay_steps = _finite("decay_steps", decay_steps)
        if self.decay_steps <= 0:
            raise ValueError(f"decay_steps must be > 0, got {decay_steps!r}")

    def __call__(self, step: float) -> float:
        """The value at ``step``."""
        return self.end + (self.start - self.end) * math.exp(-_step(step) / self.decay_steps)

    def __repr__(self) -> str:
        return (
            f"ExponentialSchedule(start={self.start}, end={self.end}, "
            f"decay_steps={self.decay_steps})"
        )


class PiecewiseLinearSchedule(Schedule):
    """Linear interpolation through ``(step, value)`` knots, constant outside them.

    Before the first knot the value is the first knot's, after the last knot the last knot's;
    at a knot it is exactly the knot's value.

    :param points: ``(step, value)`` pairs with strictly increasing steps ``>= 0``; at least one.

    >>> eps = PiecewiseLinearSchedule([(10_000, 1.0), (50_000, 0.1)])
    >>> [eps(t) for t in (0, 10_000, 30_000, 50_000, 90_000)]
    [1.0, 1.0, 0.55, 0.1, 0.1]
    """

    def __init__(self, points: Sequence[tuple[float, float]]) -> None:
        pts = [tuple(p) for p in points]
        if not pts:
            raise ValueError("points must hold at least one (step, value) pair, got none")
        for i, p in enumerate(pts):
            if len(p) != 2:
                raise ValueError(f"points[{i}] must be a (step, value) pair, got {p!r}")
        self.steps = [_nonneg(f"points[{i}] step", p[0]) for i, p in enumerate(pts)]
        self.values = [_finite(f"points[{i}] value", p[1]) for i, p in enumerate(pts)]
        for i in range(1, len(pts)):
            if not self.steps[i] > self.steps[i - 1]:
                raise ValueError(
                    f"points steps must be strictly increasing, got {self.steps[i - 1]!r} "
                    f"then {self.steps[i]!r} at points[{i}]"
                )

    def __call__(self, step: float) -> float:
        """The value at ``step``."""
        t = _step(step)
        if t <= self.steps[0]:
            return self.values[0]
        i = bisect.bisect_right(self.steps, t)  # steps[i - 1] <= t < steps[i]
        if i == len(self.steps):
            return self.values[-1]
        s0, s1 = self.steps[i - 1], self.steps[i]
        return _lerp(self.values[i - 1], self.values[i], (t - s0) / (s1 - s0))

    def __repr__(self) -> str:
        pairs = ", ".join(f"({s:g}, {v:g})" for s, v in zip(self.steps, self.values))
        return f"PiecewiseLinearSchedule([{pairs}])"
