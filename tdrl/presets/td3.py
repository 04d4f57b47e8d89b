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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import AT_LEAST_1, NONNEG, Rules, pick, register_classic
from tdrl.presets.ddpg import NOISE_RULES, DDPGPreset, build_deterministic

__all__ = ["TD3_ARGS", "TD3_RULES", "TD3Preset", "build"]

TD3_RULES: Rules = {"policy_noise": NONNEG, "noise_clip": NONNEG, "update_actor_freq": AT_LEAST_1}
"""Range checks of TD3's target smoothing and actor delay (shared with TD3+BC)."""
TD3_ARGS = ("policy_noise", "noise_clip", "update_actor_freq")
"""The TD3 arguments beyond DDPG's, from the preset's fields of the same names."""


@dataclass(frozen=True)
class TD3Preset(DDPGPreset):
    """TD3 hyperparameters and trainer settings (defaults: Pendulum-v1).

    :class:`~tdrl.presets.ddpg.DDPGPreset`'s fields plus ``policy_noise``/``noise_clip``,
    which smooth the target action (raw action units, ``[-1, 1]``; ``noise_clip = 0``:
    unclipped), and ``update_actor_freq``, which delays the actor.

    >>> TD3Preset().replace(noise_clip=-1.0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: td3 preset field 'noise_clip': expected a float >= 0, got -1.0
    """

    algo: ClassVar[str] = "td3"
    rules: ClassVar[Rules] = {**NOISE_RULES, **TD3_RULES}

    policy_noise: float = 0.2
    noise_clip: float = 0.5
    update_actor_freq: int = 2


def build(p: TD3Preset, observation_space: Any, action_space: Any) -> Any:
    """Create the actor, twin critics, policy and :class:`~tdrl.algorithm.modelfree.td3.TD3`.

    >>> import gymnasium as gym
    >>> alg = build(TD3Preset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, len(alg.critics), alg.update_actor_freq
    ('TD3', 2, 2)
    """
    from tdrl.algorithm.modelfree.td3 import TD3

    args = pick(p, TD3_ARGS)
    return build_deterministic(TD3, p, observation_space, action_space, twin=True, **args)


register_classic(
    __name__,
    TD3Preset(),
    trainer="offpolicy",
    exploration_noise=True,  # the policy adds its noise inside training steps only
    action_space="continuous",
)
