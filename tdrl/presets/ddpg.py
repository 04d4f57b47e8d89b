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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import NONNEG, OffPolicyFields, Rules, register_classic

__all__ = ["NOISE_RULES", "DDPGPreset", "build", "build_deterministic", "make_noise"]

NOISE_RULES: Rules = {"exploration_noise": common.either("gaussian", "ou"), "noise_sigma": NONNEG}
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
    rules: ClassVar[Rules] = NOISE_RULES

    task: str = "Pendulum-v1"
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


def build_deterministic(
    algo_cls: Any, p: Any, observation_space: Any, action_space: Any, twin: bool = False, **kw: Any
) -> Any:
    """``algo_cls`` (DDPG, TD3) on a deterministic actor with ``p``'s exploration noise and
    critics of ``p.hidden_sizes`` (two if ``twin``), plus the keyword arguments ``kw``."""
    from tdrl.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tdrl.utils.net import DeterministicActor, QCritic

    d, a = common.space_dim(observation_space), common.space_dim(action_space)
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=action_space,
        exploration_noise=make_noise(p.exploration_noise, p.noise_sigma),
    )
    critic_args = common.actor_critic_args(p, lambda: QCritic(d, a, p.hidden_sizes), twin)
    return algo_cls(policy=policy, **critic_args, **kw)


def build(p: DDPGPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the actor, critic, policy and :class:`~tdrl.algorithm.modelfree.ddpg.DDPG`.

    >>> import gymnasium as gym
    >>> alg = build(DDPGPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.n_step, type(alg.policy.noise).__name__
    ('DDPG', 3, 'GaussianNoise')
    """
    from tdrl.algorithm.modelfree.ddpg import DDPG

    return build_deterministic(DDPG, p, observation_space, action_space)


register_classic(
    __name__,
    DDPGPreset(),
    trainer="offpolicy",
    exploration_noise=True,  # the policy adds its noise inside training steps only
    action_space="continuous",
)
