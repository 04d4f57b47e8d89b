"""BDQN presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1, threshold -250) starts from Tianshou's
``test/discrete/test_bdqn.py``: a branching dueling network with a 64 x 64 shared trunk and
one 64-wide hidden layer in the value head and in each action branch, 40 bins per action
dimension, Adam 1e-3, gamma 0.9, batch 128, 10 training envs collecting 10 steps at a time,
epsilon 0.01 in tests, 1280 warm-up steps. Changed for speed: 5 gradient steps per collect
of 10 env steps (Tianshou: 1), a target sync every 100 gradient steps (200) and a fixed
training epsilon of 0.1 (Tianshou decays it from 0.76 by ``(1 - 1e-4) ** env_step`` in its
``train_fn``, which tdrl's launcher has no hook for); it reaches -250 after 4k-5k env steps
(Tianshou's epochs are 80k steps). Tianshou's BDQN bootstraps with gamma 0.99 whatever it is
given, so its test's "0.9" is really 0.99; 0.9 and 0.99 both work here.

The continuous action is split into ``action_bins`` evenly spaced values per dimension; the
policy keeps the bin indices and maps them to the values for the environment, so the task
needs no wrapper (the values are those of :class:`tdrl.env.discretize.DiscretizeAction`).

>>> p = BDQNPreset()
>>> p.action_bins, p.common_hidden_sizes
(40, (64, 64))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import AT_LEAST_2, OffPolicyFields, Rules, q_learner, register_classic

__all__ = ["BDQNPreset", "build"]


@dataclass(frozen=True)
class BDQNPreset(OffPolicyFields):
    """BDQN hyperparameters and trainer settings (defaults: Pendulum-v1).

    ``action_bins`` applies to a ``Box`` action space (bins per dimension); a
    ``MultiDiscrete`` space brings its own. Warm up with ``collect(n_step=warmup_steps,
    random=True)``; both collectors add epsilon-greedy noise (``eps_train`` inside training
    steps, ``eps_test`` outside).
    """

    algo: ClassVar[str] = "bdqn"
    rules: ClassVar[Rules] = {"action_bins": AT_LEAST_2}

    task: str = "Pendulum-v1"
    common_hidden_sizes: tuple[int, ...] = (64, 64)
    value_hidden_sizes: tuple[int, ...] = (64,)
    action_hidden_sizes: tuple[int, ...] = (64,)
    action_bins: int = 40
    lr: float = 1e-3
    gamma: float = 0.9
    n_step: int = 1
    target_update_freq: int = 100
    eps_train: float = 0.1
    eps_test: float = 0.01
    warmup_steps: int = 1280
    update_per_step: float = 0.5


def build(p: BDQNPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the :class:`~tdrl.utils.net_rainbow.BranchingQNet`, policy and algorithm for a
    ``Box`` (discretized into ``action_bins`` per dimension) or ``MultiDiscrete`` space.

    >>> import gymnasium as gym
    >>> alg = build(BDQNPreset(action_bins=5), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (2,)))
    >>> type(alg).__name__, alg.policy.num_branches, alg.policy.n_actions
    ('BDQN', 2, 5)
    """
    import gymnasium as gym
    import numpy as np

    from tdrl.algorithm.modelfree.bdqn import BDQN, BDQNPolicy
    from tdrl.utils.net_rainbow import BranchingQNet

    if isinstance(action_space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(action_space.nvec).reshape(-1)
        branches, bins, action_bins = int(nvec.size), int(nvec.max()), None
    else:
        branches, bins = int(np.prod(action_space.shape)), p.action_bins
        action_bins = p.action_bins
    model = BranchingQNet(
        int(np.prod(observation_space.shape)),
        branches,
        bins,
        p.common_hidden_sizes,
        p.value_hidden_sizes,
        p.action_hidden_sizes,
    )
    policy_args = {"action_bins": action_bins}
    return q_learner(p, BDQNPolicy, BDQN, model, action_space, policy_args=policy_args)


register_classic(
    __name__,
    BDQNPreset(),
    trainer="offpolicy",
    exploration_noise=True,  # epsilon-greedy: eps_train in training, eps_test when testing
    action_space="continuous",  # a Box, discretized by the policy (action_bins)
)
