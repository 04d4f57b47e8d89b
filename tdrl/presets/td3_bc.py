"""TD3+BC presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1 from ``tdrl gather sac Pendulum-v1`` data, threshold
-300) starts from Tianshou's ``test/offline/test_td3_bc.py``: actor and critic lr 1e-3,
alpha 2.5, policy noise 0.2 clipped at 0.5, an actor step every 2 critic steps, tau 0.005,
gamma 0.99, n-step 3, 500 gradient steps per epoch. Changed: 128x128 networks and batch 256
(Tianshou: 64x64, batch 64, which missed -300 on one seed of five within 10k gradient
steps; these reach it within 500-1000). Observations are normalized with the dataset's
mean and std (``norm_obs``, as Tianshou's ``examples/offline/d4rl_td3_bc.py``); the
normalizer lives in the policy.

>>> p = TD3BCPreset()
>>> p.alpha, p.norm_obs, p.threshold
(2.5, True, -300.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import OfflineActorCriticFields, Rules, register_classic
from tdrl.presets.td3 import TD3_ARGS, TD3_RULES

__all__ = ["TD3BCPreset", "build"]


@dataclass(frozen=True)
class TD3BCPreset(OfflineActorCriticFields):
    """TD3+BC hyperparameters and offline-trainer settings (defaults: Pendulum-v1).

    ``step_per_epoch`` counts gradient steps; ``norm_obs`` normalizes observations with
    the dataset's statistics.
    """

    algo: ClassVar[str] = "td3_bc"
    rules: ClassVar[Rules] = TD3_RULES

    threshold: float | None = -300.0
    hidden_sizes: tuple[int, ...] = (128, 128)
    alpha: float = 2.5
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    update_actor_freq: int = 2
    n_step: int = 3
    norm_obs: bool = True


def build(p: TD3BCPreset, observation_space: Any, action_space: Any, dataset: Any = None) -> Any:
    """Create the networks, the normalizing policy and
    :class:`~tdrl.algorithm.imitation.td3_bc.TD3BC`; with ``norm_obs``, the normalizer's
    statistics come from ``dataset`` (without one, e.g. to load a checkpoint into, they are
    the identity until loaded).

    >>> import gymnasium as gym
    >>> alg = build(TD3BCPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.alpha, alg.policy.obs_rms.mean.tolist()
    ('TD3BC', 2.5, [0.0, 0.0, 0.0])
    """
    import math

    from tdrl.algorithm.imitation.td3_bc import TD3BC, TD3BCPolicy, dataset_obs_rms
    from tdrl.utils.net import DeterministicActor, QCritic
    from tdrl.utils.normalize import TIANSHOU_EPS, RunningNorm

    d, a = common.offline_dims(dataset, observation_space, action_space)
    obs_rms = None
    if p.norm_obs:
        if dataset is not None:
            obs_rms = dataset_obs_rms(dataset)
        else:  # (almost) the identity until a checkpoint's statistics are loaded
            obs_rms = RunningNorm(observation_space.shape, clip=math.inf, eps=TIANSHOU_EPS)
    policy = TD3BCPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=action_space,
        observation_space=observation_space,
        obs_rms=obs_rms,
    )
    return TD3BC(
        policy=policy,
        **common.actor_critic_args(p, lambda: QCritic(d, a, p.hidden_sizes), twin=True),
        **common.pick(p, (*TD3_ARGS, "alpha")),
    )


register_classic(
    __name__, TD3BCPreset(), trainer="offline", exploration_noise=False, action_space="continuous"
)
