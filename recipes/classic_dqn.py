"""DQN on CartPole: a Q-network, epsilon-greedy exploration, n-step targets, a target net.

    python recipes/classic_dqn.py --task CartPole-v1 --seed 0
    python recipes/classic_dqn.py --help       # every hyperparameter, with its default

The defaults are tdrl's registry preset for the task (``tdrl train dqn CartPole-v1`` trains
the same thing); any flag changes one (``--lr 3e-4 --hidden-sizes 64 64``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_off_policy

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import QNet

ALGO, TASK = "dqn", "CartPole-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> DQN:
    """The Q-network, the epsilon-greedy policy and the algorithm (Adam, n-step, target net)."""
    d = int(np.prod(obs_space.shape))
    net = QNet(d, int(act_space.n), p.hidden_sizes, dueling=p.dueling)
    policy = DQNPolicy(
        model=net, action_space=act_space, eps_training=p.eps_train, eps_inference=p.eps_test
    )
    return DQN(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=True)
