"""DDPG presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1, threshold -250) starts from Tianshou's
``test/continuous/test_ddpg.py``: gamma 0.99, Gaussian exploration noise 0.1, n-step 3,
batch 128, 128x128 networks, critic lr 1e-3. Changed for speed on a CPU, as in the SAC
preset: one gradient step per env step over 10 envs after 1000 random warm-up steps
(Tianshou: 0.125 over 8 envs, no warm-up), actor lr 1e-3 (Tianshou: 1e-4) and tau 0.01
(Tianshou: 0.005). Seed sweep (seeds 0-4, ``scripts/seed_sweep.py``): all five reach -250,
after 2k, 2k, 3k, 2k, 2k env steps (with tau 0.005: 3k, 2k, 3k, 3k, 3k; Tianshou's test
budget: up to 100k).

>>> p = DDPGPreset()
>>> p.exploration_noise, p.noise_sigma
('gaussian', 0.1)
>>> p.replace(exploration_noise="uniform")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
tdrl.errors.PresetError: ddpg preset field 'exploration_noise': expected ... got 'uniform'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import OffPolicyFields
from tdrl.presets.registry import register

__all__ = ["NOISE_RULES", "DDPGPreset", "build", "make_noise"]

NOISE_RULES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "exploration_noise": ("'gaussian' or 'ou'", lambda v: v in ("gaussian", "ou")),
    "noise_sigma": (">= 0", lambda v: v >= 0),
}
"""Range checks of the exploration-noise fields (shared with :mod:`tdrl.presets.td3`)."""


@dataclass(frozen=True)
class DDPGPreset(OffPolicyFields):
    """DDPG hyperparameters and trainer settings (defaults: Pendulum-v1).

    ``exploration_noise`` picks the action noise, ``"gaussian"`` (``N(0, noise_sigma^2)``)
    or ``"ou"`` (Ornstein-Uhlenbeck with volatility ``noise_sigma``), in raw action units
    (``[-1, 1]``). Warm up with ``collect(n_step=warmup_steps, random=True)``.

    >>> DDPGPreset().replace(noise_sigma=0.2).noise_sigma
    0.2
    """

    algo: ClassVar[str] = "ddpg"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = NOISE_RULES

    task: str = "Pendulum-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (128, 128)
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.01
    exploration_noise: str = "gaussian"
    noise_sigma: float = 0.1
    n_step: int = 3


def make_noise(kind: str, sigma: float) -> Any:
    """The exploration noise a preset names: ``"gaussian"`` or ``"ou"``.

    >>> make_noise("ou", 0.2)
    OUNoise(mu=0.0, sigma=0.2, theta=0.15, dt=0.01, x0=None)
    """
    from tdrl.algorithm.exploration import GaussianNoise, OUNoise

    return GaussianNoise(sigma=sigma) if kind == "gaussian" else OUNoise(sigma=sigma)


def build(p: DDPGPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the actor, critic, policy and :class:`~tdrl.algorithm.modelfree.ddpg.DDPG`.

    >>> import gymnasium as gym
    >>> alg = build(DDPGPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.n_step, type(alg.policy.noise).__name__
    ('DDPG', 3, 'GaussianNoise')
    """
    import numpy as np

    from tdrl.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy
    from tdrl.utils.net import DeterministicActor, QCritic

    d = int(np.prod(observation_space.shape))
    a = int(np.prod(action_space.shape))
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=action_space,
        exploration_noise=make_noise(p.exploration_noise, p.noise_sigma),
    )
    return DDPG(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        n_step=p.n_step,
    )


register(
    "ddpg",
    "classic",
    DDPGPreset(),
    builder="tdrl.presets.ddpg:build",
    trainer="offpolicy",
    exploration_noise=True,  # the policy adds its noise inside training steps only
    action_space="continuous",
)
