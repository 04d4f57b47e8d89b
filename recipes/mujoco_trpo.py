"""TRPO on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_trpo.py`` settings.

    python recipes/mujoco_trpo.py --task Hopper-v5 --seed 0
    python recipes/mujoco_trpo.py --help       # every hyperparameter, with its default

NPG's natural-gradient direction, then a backtracking line search that keeps the KL
below ``max_kl`` and the surrogate improving; the critic takes ``optim_critic_iters`` Adam
steps per update. The defaults are tdrl's ``mujoco`` preset (``tdrl train trpo
Hopper-v5``).
"""

from __future__ import annotations

from common import make_envs, seed_everything, train_on_policy

from tdrl.algorithm import AdamOptimizerFactory
from tdrl.algorithm.modelfree.trpo import TRPO
from tdrl.cli import parse_recipe_args
from tdrl.presets.mujoco import lr_decay_updates, mujoco_actor_critic
from tdrl.utils.schedule import linear_lr_decay

ALGO, TASK = "trpo", "Hopper-v5"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments; observations normalized by a running mean/std of the training envs'
    # observations, shared frozen with the test envs (as `tdrl train` makes them)
    train_envs, test_envs = make_envs(p, normalize_obs=True)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]

    # Tianshou's MuJoCo networks (tanh MLPs, orthogonal init, the mean's last layer x 0.01,
    # a free log std at -0.5), the library's builder: the policy and the critic
    policy, critic = mujoco_actor_critic(p, obs_space, act_space)
    optim = AdamOptimizerFactory(lr=p.lr)  # the critic's; the actor takes natural-gradient steps
    if p.lr_decay:  # linearly to 0 over the run's updates (one per collect)
        optim = optim.with_lr_scheduler(linear_lr_decay(lr_decay_updates(p)))
    algorithm = TRPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        return_scaling=p.return_scaling,
        advantage_normalization=p.advantage_normalization,
        optim_critic_iters=p.optim_critic_iters,
        max_kl=p.max_kl,
        backtrack_coeff=p.backtrack_coeff,
        max_backtracks=p.max_backtracks,
    )

    train_on_policy(ALGO, args, p, algorithm, (train_envs, test_envs))


if __name__ == "__main__":
    main()
