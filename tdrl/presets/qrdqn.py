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
>>> p.replace(num_quantiles=1)
Traceback (most recent call last):
...
tdrl.errors.PresetError: qrdqn preset field 'num_quantiles': expected an int >= 2, got 1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import QLearningFields, eps_args
from tdrl.presets.registry import register

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
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "num_quantiles": (">= 2", lambda v: v >= 2),
    }

    task: str = "CartPole-v1"
    threshold: float | None = None
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
    import numpy as np

    from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
    from tdrl.utils.net_distributional import DistributionalQNet

    model = DistributionalQNet(
        int(np.prod(observation_space.shape)),
        int(action_space.n),
        p.num_quantiles,
        p.hidden_sizes,
        dueling=p.dueling,
    )
    policy = QRDQNPolicy(
        model=model,
        action_space=action_space,
        **eps_args(p),
    )
    return QRDQN(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        num_quantiles=p.num_quantiles,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )


register(
    "qrdqn",
    "classic",
    QRDQNPreset(),
    builder="tdrl.presets.qrdqn:build",
    trainer="offpolicy",
    exploration_noise=True,  # epsilon-greedy: eps_train in training, eps_test when testing
    action_space="discrete",
)
