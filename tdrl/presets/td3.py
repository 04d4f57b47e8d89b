"""TD3 presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1, threshold -250) starts from Tianshou's
``test/continuous/test_td3.py``: gamma 0.99, exploration noise 0.1, policy noise 0.2
clipped at 0.5, an actor step every 2 critic steps, n-step 3, batch 128, 128x128 networks,
critic lr 1e-3. Changed for speed on a CPU, as in the SAC preset: one gradient step per env
step over 10 envs after 1000 random warm-up steps (Tianshou: 0.125 over 8 envs), actor lr
1e-3 (Tianshou: 1e-4) and tau 0.01 (Tianshou: 0.005; TD3 moves its targets on actor steps
only). Seed sweep (seeds 0-4, ``scripts/seed_sweep.py``): all five reach -250, after 2k,
2k, 3k, 3k, 3k env steps (with tau 0.005: 3k, 3k, 4k, 6k, 5k).

>>> p = TD3Preset()
>>> p.policy_noise, p.noise_clip, p.update_actor_freq
(0.2, 0.5, 2)
>>> p.replace(update_actor_freq=0)
Traceback (most recent call last):
...
tdrl.errors.PresetError: td3 preset field 'update_actor_freq': expected an int >= 1, got 0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import OffPolicyFields
from tdrl.presets.ddpg import NOISE_RULES, make_noise
from tdrl.presets.registry import register

__all__ = ["TD3Preset", "build"]


@dataclass(frozen=True)
class TD3Preset(OffPolicyFields):
    """TD3 hyperparameters and trainer settings (defaults: Pendulum-v1).

    The exploration noise fields are :class:`~tdrl.presets.ddpg.DDPGPreset`'s;
    ``policy_noise``/``noise_clip`` smooth the target action (raw action units, ``[-1,
    1]``; ``noise_clip = 0``: unclipped) and ``update_actor_freq`` delays the actor.

    >>> TD3Preset().replace(noise_clip=-1.0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: td3 preset field 'noise_clip': expected a float >= 0, got -1.0
    """

    algo: ClassVar[str] = "td3"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        **NOISE_RULES,
        "policy_noise": (">= 0", lambda v: v >= 0),
        "noise_clip": (">= 0", lambda v: v >= 0),
        "update_actor_freq": (">= 1", lambda v: v >= 1),
    }

    task: str = "Pendulum-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (128, 128)
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.01
    exploration_noise: str = "gaussian"
    noise_sigma: float = 0.1
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    update_actor_freq: int = 2
    n_step: int = 3


def build(p: TD3Preset, observation_space: Any, action_space: Any) -> Any:
    """Create the actor, twin critics, policy and :class:`~tdrl.algorithm.modelfree.td3.TD3`.

    >>> import gymnasium as gym
    >>> alg = build(TD3Preset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, len(alg.critics), alg.update_actor_freq
    ('TD3', 2, 2)
    """
    import numpy as np

    from tdrl.algorithm.modelfree.td3 import TD3, ContinuousDeterministicPolicy
    from tdrl.utils.net import DeterministicActor, QCritic

    d = int(np.prod(observation_space.shape))
    a = int(np.prod(action_space.shape))
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=action_space,
        exploration_noise=make_noise(p.exploration_noise, p.noise_sigma),
    )
    return TD3(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        critic2=QCritic(d, a, p.hidden_sizes),
        tau=p.tau,
        gamma=p.gamma,
        policy_noise=p.policy_noise,
        noise_clip=p.noise_clip,
        update_actor_freq=p.update_actor_freq,
        n_step=p.n_step,
    )


register(
    "td3",
    "classic",
    TD3Preset(),
    builder="tdrl.presets.td3:build",
    trainer="offpolicy",
    exploration_noise=True,  # the policy adds its noise inside training steps only
    action_space="continuous",
)
