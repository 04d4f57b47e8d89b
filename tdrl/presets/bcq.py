"""BCQ presets (plain data; the builder imports torch when called).

Offline (``tdrl train bcq Pendulum-v1 --dataset FILE.hdf5``), from the data that
``tdrl gather sac Pendulum-v1`` writes (threshold -400). The values start from Tianshou's
``test/offline/test_bcq.py`` (a 64-unit perturbation actor and critics, a 32x32 VAE with a
latent of twice the action size, lr 1e-3 everywhere, lmbda 0.75, phi 0.05, gamma 0.99,
tau 0.005, 10 target actions per next state, 100 candidates when acting, 10 test
episodes per epoch, 500 gradient steps per epoch) with one change: batches of 256 instead
of 32 (with 32, seed 0 first reached -400 after 1,500 steps, at -382 +- 508 over the test
episodes; with 256, seeds 0-2 reached -252 to -358 after 1,000 steps).

The threshold (-400, the issue's) is also the stop threshold of ``tdrl train``: the preset's
own threshold for its task wins over the task's online one (-250).

>>> p = BCQPreset()
>>> p.task, p.threshold, p.lmbda, p.phi
('Pendulum-v1', -400.0, 0.75, 0.05)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_1, NONNEG, POSITIVE, UNIT, OfflineActorCriticFields, Rules

__all__ = ["BCQPreset", "build"]


@dataclass(frozen=True)
class BCQPreset(OfflineActorCriticFields):
    """BCQ hyperparameters and offline-trainer settings (defaults: Pendulum-v1).

    ``hidden_sizes`` are the perturbation actor's and the critics' layers,
    ``vae_hidden_sizes`` the VAE's encoder and decoder layers; ``latent_dim`` ``None``
    means twice the action size. ``step_per_epoch`` counts gradient steps. Tuned: batch
    256 (Tianshou: 32).

    >>> BCQPreset().replace(num_sampled_action=0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: bcq preset field 'num_sampled_action': expected an int >= 1, got 0
    """

    algo: ClassVar[str] = "bcq"
    rules: ClassVar[Rules] = {
        "vae_lr": POSITIVE,
        "lmbda": UNIT,
        "phi": NONNEG,
        **dict.fromkeys(("latent_dim", "num_sampled_action", "forward_sampled_times"), AT_LEAST_1),
    }

    threshold: float | None = -400.0
    hidden_sizes: tuple[int, ...] = (64,)
    vae_hidden_sizes: tuple[int, ...] = (32, 32)
    latent_dim: int | None = None
    vae_lr: float = 1e-3
    lmbda: float = 0.75
    phi: float = 0.05
    num_sampled_action: int = 10
    forward_sampled_times: int = 100
    max_epochs: int = 5


def build(p: BCQPreset, observation_space: Any, action_space: Any, dataset: Any = None) -> Any:
    """Create the VAE, the perturbation actor, the critics, the policy and
    :class:`~tdrl.algorithm.imitation.bcq.BCQ`; a dataset whose observations or actions do
    not fit the spaces is a one-line error.

    >>> import gymnasium as gym
    >>> alg = build(BCQPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.policy.vae.latent_dim, alg.policy.forward_sampled_times
    ('BCQ', 2, 100)
    """
    from tdrl.algorithm.imitation.bcq import BCQ, BCQPolicy
    from tdrl.utils.net import QCritic
    from tdrl.utils.net_vae import VAE, Perturbation

    d, a = common.offline_dims(dataset, observation_space, action_space)
    policy = BCQPolicy(
        actor_perturbation=Perturbation(d, a, p.hidden_sizes, phi=p.phi),
        critic=QCritic(d, a, p.hidden_sizes),
        vae=VAE(d, a, p.vae_hidden_sizes, p.latent_dim),
        action_space=action_space,
        observation_space=observation_space,
        forward_sampled_times=p.forward_sampled_times,
    )
    return BCQ(
        policy=policy,
        actor_perturbation_optim=p.actor_lr,
        critic_optim=p.critic_lr,
        vae_optim=p.vae_lr,
        **common.pick(p, ("gamma", "tau", "lmbda", "num_sampled_action")),
    )


common.register_classic(
    __name__,
    BCQPreset(),
    trainer="offline",
    exploration_noise=False,  # the policy samples its candidates itself
    action_space="continuous",
)
