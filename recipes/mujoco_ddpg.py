"""DDPG on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_ddpg.py`` settings.

    python recipes/mujoco_ddpg.py --task Hopper-v5 --seed 0
    python recipes/mujoco_ddpg.py --help       # every hyperparameter, with its default

Deterministic actor with Gaussian exploration noise and one critic: target
``r + gamma * Q'(s', mu'(s'))``, actor loss ``-Q(s, mu(s))``, soft target updates (ReLU
MLPs 256-256).

One env, one env step per collect and one gradient step per env step, a 1M replay
buffer, a random warm-up (at most half of a short run). The defaults are tdrl's
``mujoco`` preset (``tdrl train ddpg Hopper-v5``): 50 epochs of 5000 steps.

The networks, policy and algorithm are ``tdrl.presets.ddpg.build``'s:
``classic_td3.py``'s deterministic actor and exploration noise with a single critic
(``DDPG(policy, policy_optim, critic, critic_optim, tau, gamma, n_step)``).
"""

from __future__ import annotations

from common import train_off_policy

from tdrl.cli import parse_recipe_args
from tdrl.presets.ddpg import build

ALGO, TASK = "ddpg", "Hopper-v5"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=True)
