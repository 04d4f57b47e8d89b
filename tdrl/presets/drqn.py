"""DRQN presets (plain data; the builder imports torch when called).

``classic`` (tuned on CartPole-v1, threshold 195) starts from Tianshou's
``test/discrete/test_drqn.py``: a :class:`~tdrl.utils.net_recurrent.RecurrentQNet` with a
128-wide embedding and 2 LSTM layers, frame stacks of 4 from the buffer (``stack_num``),
gamma 0.95, 3-step returns, Adam 1e-3, batch 128, 16 training envs collecting 16 steps
at a time, epsilon 0.1 in training and 0.05 in tests, a 20k buffer, 100 test episodes, a
warm-up of 2048 steps (Tianshou: batch size x training envs); with two changes for speed,
as in the C51 preset: 0.125 gradient steps per env step (Tianshou: 1/16) and a target sync
every 160 gradient steps (Tianshou: 320). Epochs of 2000 steps (Tianshou: 20000, stopping
early on training returns) test often enough to stop near the threshold; the budget is
100k steps (Tianshou: 100k). The launcher builds the replay buffer with the preset's
``stack_num``.

>>> p = DRQNPreset()
>>> p.stack_num, p.num_layers, p.n_step
(4, 2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_1, EPSILON_GREEDY, QLearningFields, Rules, register_classic

__all__ = ["DRQNPreset", "build"]


@dataclass(frozen=True)
class DRQNPreset(QLearningFields):
    """DRQN hyperparameters and trainer settings (defaults: CartPole-v1).

    Network: a linear embedding of ``hidden_size``, ``num_layers`` LSTM layers of the same
    width, a linear Q head on the last frame. The replay buffer returns the last
    ``stack_num`` observations of every sample. Warm up with ``collect(n_step=warmup_steps,
    random=True)``; both collectors add epsilon-greedy noise (``eps_train`` inside training
    steps, ``eps_test`` outside).

    >>> DRQNPreset().replace(hidden_size=0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: drqn preset field 'hidden_size': expected an int >= 1, got 0
    """

    algo: ClassVar[str] = "drqn"
    rules: ClassVar[Rules] = dict.fromkeys(("stack_num", "hidden_size", "num_layers"), AT_LEAST_1)

    task: str = "CartPole-v1"
    hidden_size: int = 128
    num_layers: int = 2
    stack_num: int = 4
    gamma: float = 0.95
    target_update_freq: int = 160
    training_num: int = 16
    warmup_steps: int = 2048
    max_epochs: int = 50
    step_per_epoch: int = 2000
    step_per_collect: int = 16
    update_per_step: float = 0.125
    batch_size: int = 128


def build(p: DRQNPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the :class:`~tdrl.utils.net_recurrent.RecurrentQNet`, the policy and the
    algorithm.

    >>> import gymnasium as gym
    >>> alg = build(DRQNPreset(hidden_size=8, num_layers=1),
    ...             gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, type(alg.policy.model).__name__
    ('DRQN', 3, 'RecurrentQNet')
    """
    from tdrl.algorithm.modelfree.drqn import DRQN, DRQNPolicy
    from tdrl.utils.net_recurrent import RecurrentQNet

    model = RecurrentQNet(
        observation_space.shape,
        int(action_space.n),
        hidden_size=p.hidden_size,
        num_layers=p.num_layers,
    )
    return common.q_learner(p, DRQNPolicy, DRQN, model, action_space)


register_classic(__name__, DRQNPreset(), **EPSILON_GREEDY)
