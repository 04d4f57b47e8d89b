"""QR-DQN presets (plain data; the builder imports torch when called).

``classic`` (tuned on CartPole-v1, threshold 195) is Tianshou's
``test/discrete/test_qrdqn.py``: a 4 x 128 ReLU trunk, gamma 0.9, 3-step returns, Adam 1e-3,
batch 64, 10 training envs collecting 10 steps at a time, epsilon 0.1 in training and 0.05 in
tests, a 20k buffer, 100 test episodes; with three changes for speed: 50 quantiles per
action (Tianshou: 200; the loss compares every pair, ``[B, N, N]``, about 18 times cheaper
at 50), 0.2 gradient steps per env step (Tianshou: 0.1) and a target sync every 160 gradient
steps (Tianshou: 320). Seeds 0-4 then reach 195 after 4k-6k env steps (800-1200 gradient
steps) instead of 10k-11.6k. Epochs of 2000 steps (Tianshou: 10000) only test more often;
the budget stays 100k steps. Tianshou anneals epsilon from env step 10k on; CartPole is
solved before that, so it stays fixed here.

>>> p = QRDQNPreset()
>>> p.num_quantiles, p.n_step, p.target_update_freq
(50, 3, 160)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_2, EPSILON_GREEDY, QLearningFields, Rules, register_classic

__all__ = ["QRDQNPreset", "build"]


@dataclass(frozen=True)
class QRDQNPreset(QLearningFields):
    """QR-DQN hyperparameters and trainer settings (defaults: CartPole-v1).

    Network: an MLP trunk of ``hidden_sizes`` with ``num_quantiles`` quantile values per
    action (``dueling``: a dueling head per quantile). Warm up with
    ``collect(n_step=warmup_steps, random=True)``; both collectors add epsilon-greedy noise
    (``eps_train`` inside training steps, ``eps_test`` outside).
    """

    algo: ClassVar[str] = "qrdqn"
    rules: ClassVar[Rules] = {"num_quantiles": AT_LEAST_2}

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (128, 128, 128, 128)
    dueling: bool = False
    num_quantiles: int = 50
    target_update_freq: int = 160
    max_epochs: int = 50
    step_per_epoch: int = 2000
    update_per_step: float = 0.2


def build(p: QRDQNPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the :class:`~tdrl.utils.net_distributional.DistributionalQNet`, the policy and
    the algorithm.

    >>> import gymnasium as gym
    >>> alg = build(QRDQNPreset(hidden_sizes=(8,), num_quantiles=16),
    ...             gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, alg.num_quantiles
    ('QRDQN', 3, 16)
    """
    from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
    from tdrl.utils.net_distributional import DistributionalQNet

    d, n = common.space_dim(observation_space), common.space_dim(action_space)
    model = DistributionalQNet(d, n, p.num_quantiles, p.hidden_sizes, dueling=p.dueling)
    return common.q_learner(
        p, QRDQNPolicy, QRDQN, model, action_space, num_quantiles=p.num_quantiles
    )


register_classic(__name__, QRDQNPreset(), **EPSILON_GREEDY)
