"""A2C on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_a2c.py`` settings.

    python recipes/mujoco_a2c.py --task Hopper-v5 --seed 0
    python recipes/mujoco_a2c.py --help       # every hyperparameter, with its default

One RMSprop step per 80-step rollout of 16 envs over the whole batch, GAE, normalized
observations and a linearly decaying learning rate. The defaults are tdrl's ``mujoco``
preset (``tdrl train a2c Hopper-v5``).

The algorithm is ``tdrl.presets.mujoco.build_a2c``'s: ``mujoco_ppo.py``'s networks
(``mujoco_actor_critic``), ``OptimizerFactory(torch.optim.RMSprop, lr=p.lr, eps=1e-5,
alpha=0.99)`` with the same linear decay, and ``A2C(..., vf_coef, ent_coef,
max_grad_norm)``.
"""

from __future__ import annotations

from common import make_normalized_envs, train_on_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.mujoco import build_a2c

ALGO, TASK = "a2c", "Hopper-v5"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # observations normalized by the training envs' running mean/std, shared frozen
    train_on_policy(ALGO, args, p, build_a2c, envs=make_normalized_envs)
