"""TRPO on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_trpo.py`` settings.

    python recipes/mujoco_trpo.py --task Hopper-v5 --seed 0
    python recipes/mujoco_trpo.py --help       # every hyperparameter, with its default

NPG's natural-gradient direction, then a backtracking line search that keeps the KL
below ``max_kl`` and the surrogate improving; the critic takes ``optim_critic_iters`` Adam
steps per update. The defaults are tdrl's ``mujoco`` preset (``tdrl train trpo
Hopper-v5``).

The algorithm is ``tdrl.presets.mujoco.build_trpo``'s: ``mujoco_ppo.py``'s networks and
decaying Adam (the critic's), and ``TRPO(..., max_kl=p.max_kl,
backtrack_coeff=p.backtrack_coeff, max_backtracks=p.max_backtracks)``.
"""

from __future__ import annotations

from common import make_normalized_envs, train_on_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.mujoco import build_trpo

ALGO, TASK = "trpo", "Hopper-v5"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # observations normalized by the training envs' running mean/std, shared frozen
    train_on_policy(ALGO, args, p, build_trpo, envs=make_normalized_envs)
