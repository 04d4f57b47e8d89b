"""DQN's ``classic`` preset (plain data; the builder imports torch when called).

Tuned on CartPole-v1 (threshold 195), from Tianshou's ``test/discrete/test_dqn.py``; with
tdrl's collector and a minimal Tianshou-style loop (3 seeds, 20 test episodes after each
epoch of 1k steps) the threshold was first reached after 9k, 9k and 8k env steps, plus 640
random warm-up steps. ``step_per_epoch`` is Tianshou's; smaller epochs only test more often.
The ``atari`` preset lives in :mod:`tdrl.presets.atari`.

>>> p = DQNPreset()
>>> p.lr, p.n_step, p.trainer_kwargs()["update_per_step"]
(0.001, 3, 0.1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import EPSILON_GREEDY, QLearningFields, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.dqn import DQN

__all__ = ["DQNPreset", "build"]


@dataclass(frozen=True)
class DQNPreset(QLearningFields):
    """DQN hyperparameters and trainer settings (defaults: CartPole-v1).

    Warm up with ``collect(n_step=warmup_steps, random=True)``; collect with
    ``exploration_noise=True`` for both the training and the test collector (the policy
    uses ``eps_train`` inside training steps and ``eps_test`` outside).
    """

    algo: ClassVar[str] = "dqn"

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (128, 128, 128)
    dueling: bool = False


def build(p: DQNPreset, observation_space: Any, action_space: Any) -> DQN:
    """Create the Q-network, policy and algorithm.

    >>> import gymnasium as gym
    >>> alg = build(DQNPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (4,)),
    ...             gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step
    ('DQN', 3)
    """
    from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    from tdrl.utils.net import QNet

    model = QNet(
        common.space_dim(observation_space),
        common.space_dim(action_space),
        p.hidden_sizes,
        dueling=p.dueling,
    )
    return common.q_learner(p, DQNPolicy, DQN, model, action_space)


register_classic(__name__, DQNPreset(), **EPSILON_GREEDY)
