"""The classic NChain MDP (Strens 2000), registered with gymnasium as ``tdrl/NChain-v0``.

Five states in a row, two actions: ``0`` moves *forward* along the chain (reward 0; at
the last state it stays there and pays ``large`` = 10), ``1`` moves *back* to state 0 and
pays ``small`` = 2. With probability ``slip`` = 0.2 the env takes the other action. The
agent that always moves forward earns about 3660 per 1000-step episode; moving back pays
at once, so a myopic or undirected learner settles on always-back, about 1600. Episodes
never terminate and are truncated after 1000 steps (``max_episode_steps``), as in the
classic gym NChain-v0.

Importing this module registers the id (``import tdrl.env`` does); the registered
``reward_threshold`` is the stop threshold of ``tdrl train psrl tdrl/NChain-v0``
(:data:`NCHAIN_THRESHOLD`, which a uniform-random policy and an epsilon-greedy tabular
Q-learner with PSRL's budget both miss; see ``tests/modelbased/test_psrl.py``).

>>> import gymnasium as gym
>>> env = gym.make("tdrl/NChain-v0")
>>> obs, info = env.reset(seed=0)
>>> obs, env.observation_space, env.action_space, env.spec.max_episode_steps
(0, Discrete(5), Discrete(2), 1000)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "NCHAIN_ID",
    "NCHAIN_THRESHOLD",
    "NChainEnv",
    "expected_return",
    "register_nchain",
    "wrap",
]

NCHAIN_ID = "tdrl/NChain-v0"
"""The gymnasium id of :class:`NChainEnv` with 1000-step episodes."""

NCHAIN_THRESHOLD = 3400.0
"""Stop threshold (mean test return per 1000-step episode), Tianshou's for NChain: only the
optimal always-forward policy (~3660) reaches it; the next best deterministic policy
(back at the end of the chain only) earns ~3040, always-back ~1600 (:func:`expected_return`)."""


class NChainEnv(gym.Env[Any, Any]):
    """The n-state chain: forward (``0``) or back to the start (``1``), slipping to the
    other action with probability ``slip``.

    :param n: number of states.
    :param slip: probability that the other action is taken.
    :param small: reward for moving back to state 0.
    :param large: reward for moving forward at the last state (which stays there).

    >>> env = NChainEnv()
    >>> _ = env.reset(seed=0)
    >>> [env.step(0)[0] for _ in range(6)]  # forward; the third step slipped back
    [1, 2, 0, 0, 1, 2]
    >>> NChainEnv(slip=1.5)
    Traceback (most recent call last):
    ...
    ValueError: slip: expected a value in [0, 1], got 1.5
    """

    def __init__(
        self, n: int = 5, slip: float = 0.2, small: float = 2.0, large: float = 10.0
    ) -> None:
        if not isinstance(n, int) or n < 2:
            raise ValueError(f"n: expected an int >= 2, got {n!r}")
        if not 0.0 <= slip <= 1.0:
            raise ValueError(f"slip: expected a value in [0, 1], got {slip}")
        self.n, self.slip, self.small, self.large = n, float(slip), float(small), float(large)
        self.observation_space = gym.spaces.Discrete(n)
        self.action_space = gym.spaces.Discrete(2)
        self.state = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Start at state 0."""
        super().reset(seed=seed)
        self.state = 0
        return self.state, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        """Take ``action`` (or, with probability ``slip``, the other one)."""
        a = int(action)
        if a not in (0, 1):
            raise ValueError(f"action: expected 0 (forward) or 1 (back), got {action!r}")
        if self.np_random.random() < self.slip:
            a = 1 - a
        if a == 1:
            reward, self.state = self.small, 0
        elif self.state < self.n - 1:
            reward, self.state = 0.0, self.state + 1
        else:
            reward = self.large
        return self.state, reward, False, False, {}


def register_nchain() -> None:
    """Register :data:`NCHAIN_ID` with gymnasium (once; later calls do nothing)."""
    if NCHAIN_ID not in gym.registry:
        gym.register(
            id=NCHAIN_ID,
            entry_point="tdrl.env.nchain:NChainEnv",
            max_episode_steps=1000,
            reward_threshold=NCHAIN_THRESHOLD,
            nondeterministic=False,
        )


register_nchain()


def wrap(env: gym.Env, preset: Any = None) -> gym.Env:
    """The env unchanged: the registry's ``env_wrapper`` for PSRL, named so that making an
    env for the entry imports this module (which registers :data:`NCHAIN_ID`) first.

    >>> wrap(gym.make(NCHAIN_ID)).spec.id
    'tdrl/NChain-v0'
    """
    return env


def expected_return(policy: np.ndarray, steps: int = 1000, slip: float = 0.2) -> float:
    """Exact expected return of a deterministic policy ``policy[state]`` over ``steps``
    steps from state 0 on the 5-state chain (rewards 2 and 10).

    >>> round(expected_return(np.zeros(5, dtype=int)))  # always forward
    3664
    >>> round(expected_return(np.ones(5, dtype=int)))  # always back
    1603
    """
    n = len(policy)
    dist = np.zeros(n)
    dist[0] = 1.0
    total = 0.0
    for _ in range(steps):
        new = np.zeros(n)
        for s in range(n):
            p_back = slip if policy[s] == 0 else 1.0 - slip
            total += dist[s] * (p_back * 2.0 + (1 - p_back) * (10.0 if s == n - 1 else 0.0))
            new[0] += dist[s] * p_back
            new[min(s + 1, n - 1)] += dist[s] * (1 - p_back)
        dist = new
    return total
