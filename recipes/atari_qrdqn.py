"""QR-DQN on Atari (default Pong) with Tianshou's ``examples/atari/atari_qrdqn.py`` settings.

    python recipes/atari_qrdqn.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_qrdqn.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_qrdqn.py --help       # every hyperparameter, with its default

The Nature CNN with 200 return quantiles per action, trained by the quantile
Huber loss.

The defaults are tdrl's ``atari`` preset (``tdrl train qrdqn PongNoFrameskip-v4``): 10 envs,
100 epochs of 100k env steps, 0.1 gradient steps per env step.
"""

from __future__ import annotations

from common import seed_everything, train_off_policy
from common_atari import cnn_input, epsilon_decay, frame_buffer, make_atari_envs

from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net_atari import qrdqn_net

ALGO, TASK = "qrdqn", "PongNoFrameskip-v4"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # DeepMind-wrapped envs (frame skip 4, 84x84 grayscale, stacked frames)
    train_envs, test_envs = make_atari_envs(p)
    act_space = train_envs.action_space[0]
    cnn = cnn_input(p, train_envs)  # frames' shape, number of actions, pixel scale

    # the Nature CNN with a quantile head, the policy and the algorithm
    net = qrdqn_net(**cnn, num_quantiles=p.num_quantiles, hidden_sizes=p.hidden_sizes)
    policy = QRDQNPolicy(
        model=net, action_space=act_space, eps_training=p.eps_train, eps_inference=p.eps_test
    )
    algorithm = QRDQN(
        policy=policy,
        num_quantiles=p.num_quantiles,
        optim=p.lr,
        gamma=p.gamma,
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
