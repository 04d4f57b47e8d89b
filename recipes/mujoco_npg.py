"""NPG on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_npg.py`` settings.

    python recipes/mujoco_npg.py --task Hopper-v5 --seed 0
    python recipes/mujoco_npg.py --help       # every hyperparameter, with its default

Natural policy gradient: the actor steps along ``F^-1 g`` (conjugate gradient on the
Fisher matrix of the policy's KL), scaled to ``trust_region_size``; the critic takes
``optim_critic_iters`` Adam steps per update. The defaults are tdrl's ``mujoco`` preset
(``tdrl train npg Hopper-v5``).

The algorithm is ``tdrl.presets.mujoco.build_npg``'s: ``mujoco_ppo.py``'s networks
(``mujoco_actor_critic``) and decaying Adam (the critic's), and ``NPG(...,
optim_critic_iters=p.optim_critic_iters, trust_region_size=p.trust_region_size)``.
"""

from __future__ import annotations

from common import make_normalized_envs, train_on_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.mujoco import build_npg

ALGO, TASK = "npg", "Hopper-v5"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # observations normalized by the training envs' running mean/std, shared frozen
    train_on_policy(ALGO, args, p, build_npg, envs=make_normalized_envs)
