"""FQF on Atari (default Pong) with Tianshou's ``examples/atari/atari_fqf.py`` settings.

    python recipes/atari_fqf.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_fqf.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_fqf.py --help       # every hyperparameter, with its default

Fully parameterized quantiles: a fraction proposal network (RMSprop) picks the
fractions, IQN's quantile function values them.

The defaults are tdrl's ``atari`` preset (``tdrl train fqf PongNoFrameskip-v4``): 10 envs,
100 epochs of 100k env steps, 0.1 gradient steps per env step.
"""

from __future__ import annotations

import torch
from common import seed_everything, train_off_policy
from common_atari import cnn_input, epsilon_decay, frame_buffer, make_atari_envs

from tdrl.algorithm.base import OptimizerFactory
from tdrl.algorithm.modelfree.fqf import FQF, FQFPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net_atari import fqf_net

ALGO, TASK = "fqf", "PongNoFrameskip-v4"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # DeepMind-wrapped envs (frame skip 4, 84x84 grayscale, stacked frames)
    train_envs, test_envs = make_atari_envs(p)
    act_space = train_envs.action_space[0]
    cnn = cnn_input(p, train_envs)  # frames' shape, number of actions, pixel scale

    # quantile function and fraction proposal on the Nature CNN, the policy, the algorithm
    net, fractions = fqf_net(
        **cnn,
        num_fractions=p.num_fractions,
        num_cosines=p.num_cosines,
        hidden_sizes=p.hidden_sizes,
    )
    policy = FQFPolicy(
        model=net,
        fraction_model=fractions,
        action_space=act_space,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    algorithm = FQF(
        policy=policy,
        optim=p.lr,
        fraction_optim=OptimizerFactory(torch.optim.RMSprop, lr=p.fraction_lr),
        gamma=p.gamma,
        ent_coef=p.ent_coef,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # each frame stored once, the stacks rebuilt when the buffer samples; epsilon decays
    # linearly from eps_train to eps_train_final over eps_decay_steps
    buffer, train_fn = frame_buffer(p), epsilon_decay(policy, p)
    train_off_policy(
        ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=True, train_fn=train_fn
    )


if __name__ == "__main__":
    main()
