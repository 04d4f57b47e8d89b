"""C51 presets (plain data; the builder imports torch when called).

``classic`` (tuned on CartPole-v1, threshold 195) is Tianshou's
``test/discrete/test_c51.py``: a 4 x 128 ReLU trunk, 51 atoms on ``[-10, 10]``, gamma 0.9,
3-step returns, Adam 1e-3, batch 64, 8 training envs collecting 8 steps at a time, epsilon
0.1 in training and 0.05 in tests, a 20k buffer, 100 test episodes; with two changes for
speed: 0.2 gradient steps per env step (Tianshou: 0.125) and a target sync every 160
gradient steps (Tianshou: 320). Seeds 0-4 then reach 195 after 3.4k-4.4k env steps (~900
gradient steps) instead of 5.8k-6.9k. Epochs of 2000 steps (Tianshou: 8000) only test more
often; the budget stays 80k steps. Tianshou anneals epsilon from env step 10k on; CartPole
is solved before that, so it stays fixed here.

>>> p = C51Preset()
>>> p.num_atoms, p.v_min, p.v_max, p.n_step
(51, -10.0, 10.0, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_2, EPSILON_GREEDY, QLearningFields, Rules, register_classic

__all__ = ["C51Preset", "build"]


@dataclass(frozen=True)
class C51Preset(QLearningFields):
    """C51 hyperparameters and trainer settings (defaults: CartPole-v1).

    Network: an MLP trunk of ``hidden_sizes`` with ``num_atoms`` probabilities per action
    on ``[v_min, v_max]`` (``dueling``: a dueling head per atom). Warm up with
    ``collect(n_step=warmup_steps, random=True)``; both collectors add epsilon-greedy noise
    (``eps_train`` inside training steps, ``eps_test`` outside).

    >>> C51Preset().replace(num_atoms=1)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: c51 preset field 'num_atoms': expected an int >= 2, got 1
    """

    algo: ClassVar[str] = "c51"
    rules: ClassVar[Rules] = {"num_atoms": AT_LEAST_2}

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (128, 128, 128, 128)
    dueling: bool = False
    num_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    target_update_freq: int = 160
    training_num: int = 8
    warmup_steps: int = 512
    max_epochs: int = 40
    step_per_epoch: int = 2000
    step_per_collect: int = 8
    update_per_step: float = 0.2

    def __post_init__(self) -> None:
        super().__post_init__()
        common.check_support(self)


def build(p: C51Preset, observation_space: Any, action_space: Any) -> Any:
    """Create the :class:`~tdrl.utils.net_distributional.DistributionalQNet`, the policy and
    the algorithm.

    >>> import gymnasium as gym
    >>> alg = build(C51Preset(hidden_sizes=(8,), num_atoms=11),
    ...             gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, alg.policy.support.shape
    ('C51', 3, torch.Size([11]))
    """
    from tdrl.algorithm.modelfree.c51 import C51, C51Policy
    from tdrl.utils.net_distributional import DistributionalQNet

    d, n = common.space_dim(observation_space), common.space_dim(action_space)
    model = DistributionalQNet(d, n, p.num_atoms, p.hidden_sizes, softmax=True, dueling=p.dueling)
    return common.q_learner(
        p, C51Policy, C51, model, action_space, policy_args=common.support_args(p)
    )


register_classic(__name__, C51Preset(), **EPSILON_GREEDY)
