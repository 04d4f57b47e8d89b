"""Rainbow on CartPole: C51 with dueling noisy streams, n-step targets and prioritized replay.

    python recipes/classic_rainbow.py --task CartPole-v1 --seed 0
    python recipes/classic_rainbow.py --help       # every hyperparameter, with its default

Noisy linear layers (``noisy_std``) explore on top of epsilon-greedy; the replay buffer
samples transitions in proportion to ``priority ** alpha`` and corrects with importance
weights ``** beta``. The defaults are tdrl's registry preset (``tdrl train rainbow
CartPole-v1``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_off_policy

from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tdrl.utils.net_rainbow import RainbowNet

ALGO, TASK = "rainbow", "CartPole-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> Rainbow:
    """Dueling noisy distributional network, policy and algorithm."""
    d = int(np.prod(obs_space.shape))
    net = RainbowNet(
        d,
        int(act_space.n),
        p.num_atoms,
        p.hidden_sizes,
        head_hidden_sizes=p.head_hidden_sizes,
        noisy_std=p.noisy_std,
    )
    policy = RainbowPolicy(
        model=net,
        action_space=act_space,
        num_atoms=p.num_atoms,
        v_min=p.v_min,
        v_max=p.v_max,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    return Rainbow(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = (
        PrioritizedVectorReplayBuffer(  # importance weights divided by the batch maximum
            p.buffer_size, p.training_num, alpha=p.alpha, beta=p.beta, weight_norm=True
        )
        if p.prioritized_replay
        else VectorReplayBuffer(p.buffer_size, p.training_num)
    )

    train_off_policy(ALGO, args, p, build, buffer, noise=True)
