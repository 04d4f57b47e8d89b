"""IQN presets (plain data; the builder imports torch when called).

``classic`` (tuned on CartPole-v1, threshold 195) is Tianshou's ``test/discrete/test_iqn.py``
(a 64x64x64 feature MLP, 64 cosines, 32 fractions to act, 8 online and 8 target fractions
per sample, Adam lr 3e-3, gamma 0.9, 3-step returns, a target net synced every 320 gradient
steps, epsilon 0.1 (0.05 when testing), 10 training envs, batches of 64, 100 test episodes,
640 warm-up steps, random here) with two changes: 0.2 gradient steps per env step instead of
0.1 (the threshold in about half the env steps, at the same number of gradient steps), and
epochs of 1000 env steps instead of 10000 (a test every 1000 steps; at most 20k steps).

Seed sweep: seeds 0-4 reach 195 after 4000, 4000, 3000, 4880, 5380 env steps
(600-1074 gradient steps; ``scripts/seed_sweep.py``, 3-9 s each on one core).

>>> p = IQNPreset()
>>> p.sample_size, p.online_sample_size, p.target_sample_size
(32, 8, 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_1, AT_LEAST_2, QLearningFields, Rules

__all__ = ["IQN_RULES", "IQN_SAMPLES", "IQNPreset", "build"]

IQN_SAMPLES = ("sample_size", "online_sample_size", "target_sample_size")
"""The IQN policy's fraction counts, from the preset's fields of the same names."""
IQN_RULES: Rules = {**dict.fromkeys(IQN_SAMPLES, AT_LEAST_2), "num_cosines": AT_LEAST_1}
"""Range checks of the IQN fields (shared with the Atari preset)."""


@dataclass(frozen=True)
class IQNPreset(QLearningFields):
    """IQN hyperparameters and trainer settings (defaults: CartPole-v1).

    ``hidden_sizes`` are the feature MLP's widths (the last is the embedding width);
    ``sample_size`` fractions are drawn per state to act, ``online_sample_size`` and
    ``target_sample_size`` per sample in the loss.

    >>> IQNPreset().replace(num_cosines=0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: iqn preset field 'num_cosines': expected an int >= 1, got 0
    """

    algo: ClassVar[str] = "iqn"
    rules: ClassVar[Rules] = IQN_RULES

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (64, 64, 64)
    num_cosines: int = 64
    sample_size: int = 32
    online_sample_size: int = 8
    target_sample_size: int = 8
    lr: float = 3e-3
    max_epochs: int = 20
    step_per_epoch: int = 1000
    update_per_step: float = 0.2


def build(p: IQNPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the implicit quantile network, policy and :class:`~tdrl.algorithm.modelfree.iqn.IQN`.

    >>> import gymnasium as gym
    >>> alg = build(IQNPreset(hidden_sizes=(8,), num_cosines=4),
    ...             gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, alg.policy.online_sample_size
    ('IQN', 3, 8)
    """
    from tdrl.algorithm.modelfree.iqn import IQN, IQNPolicy
    from tdrl.utils.net_quantile import ImplicitQuantileNetwork

    model = ImplicitQuantileNetwork(
        common.space_dim(observation_space),
        common.space_dim(action_space),
        hidden_sizes=p.hidden_sizes,
        num_cosines=p.num_cosines,
    )
    samples = common.pick(p, IQN_SAMPLES)
    return common.q_learner(p, IQNPolicy, IQN, model, action_space, policy_args=samples)


common.register_classic(__name__, IQNPreset(), **common.EPSILON_GREEDY)
