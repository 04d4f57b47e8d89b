"""A2C on CartPole: synchronous advantage actor-critic, one gradient step per rollout.

    python recipes/classic_a2c.py --task CartPole-v1 --seed 0
    python recipes/classic_a2c.py --help       # every hyperparameter, with its default

Loss: ``-log pi(a|s) * A + vf_coef * (V(s) - R)^2 - ent_coef * H[pi]`` over the whole
rollout, with GAE advantages. The defaults are tdrl's registry preset (``tdrl train a2c
CartPole-v1``).

The networks, policy and algorithm are ``tdrl.presets.a2c.build``'s: ``classic_ppo.py``'s
actor (categorical or Gaussian), critic and ``ActorPolicy``, with
``A2C(..., vf_coef, ent_coef, max_grad_norm)`` in place of PPO.
"""

from __future__ import annotations

from common import train_on_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.a2c import build

ALGO, TASK = "a2c", "CartPole-v1"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), collectors over one rollout at a time, the on-policy trainer,
    # a final evaluation and tdrl train's summary line (common.py)
    train_on_policy(ALGO, args, p, build)
