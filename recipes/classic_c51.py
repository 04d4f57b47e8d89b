"""C51 on CartPole: a distributional Q-network (51 atoms of return probability per action).

    python recipes/classic_c51.py --task CartPole-v1 --seed 0
    python recipes/classic_c51.py --help       # every hyperparameter, with its default

The network outputs, for each action, a softmax over ``num_atoms`` returns evenly spaced on
``[v_min, v_max]``; the loss is the cross-entropy to the projected n-step target
distribution. The defaults are tdrl's registry preset (``tdrl train c51 CartPole-v1``).

The network, policy and algorithm are ``tdrl.presets.c51.build``'s: a
``DistributionalQNet`` of ``num_atoms`` logits per action, ``C51Policy`` and ``C51``, as
``classic_rainbow.py`` writes them out (Rainbow adds noisy, dueling layers and
prioritized replay).
"""

from __future__ import annotations

from common import train_off_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.c51 import build

ALGO, TASK = "c51", "CartPole-v1"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=True)
