"""Rainbow on Atari (default Pong) with Tianshou's ``examples/atari/atari_rainbow.py`` settings.

    python recipes/atari_rainbow.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_rainbow.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_rainbow.py --help       # every hyperparameter, with its default

C51 with dueling noisy streams, 3-step targets and prioritized replay (beta annealed
to 1).

The defaults are tdrl's ``atari`` preset (``tdrl train rainbow PongNoFrameskip-v4``): 10 envs,
100 epochs of 100k env steps, 0.1 gradient steps per env step.
"""

from __future__ import annotations

from common import seed_everything, train_off_policy
from common_atari import cnn_input, epsilon_decay, frame_stacking, make_atari_envs

from tdrl.algorithm.exploration import LinearSchedule
from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tdrl.utils.net_atari import rainbow_net

ALGO, TASK = "rainbow", "PongNoFrameskip-v4"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # DeepMind-wrapped envs (frame skip 4, 84x84 grayscale, stacked frames)
    train_envs, test_envs = make_atari_envs(p)
    act_space = train_envs.action_space[0]
    cnn = cnn_input(p, train_envs)  # frames' shape, number of actions, pixel scale

    # dueling noisy distributional head on the Nature CNN, the policy and the algorithm
    net = rainbow_net(
        **cnn,
        num_atoms=p.num_atoms,
        hidden_sizes=p.hidden_sizes,
        noisy_std=p.noisy_std,
        noisy=p.noisy,
        dueling=p.dueling,
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
    algorithm = Rainbow(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # replay buffer (each frame stored once, the stacks of 4 rebuilt when it samples) and
    # collectors; a random warm-up fills the buffer first
    frames = frame_stacking(p)
    buffer = (
        PrioritizedVectorReplayBuffer(
            p.buffer_size,
            p.training_num,
            alpha=p.alpha,
            beta=p.beta,
            weight_norm=p.weight_norm,
            **frames,
        )
        if p.prioritized_replay
        else VectorReplayBuffer(p.buffer_size, p.training_num, **frames)
    )

    # epsilon decays linearly from eps_train to eps_train_final over eps_decay_steps, and
    # the importance-sampling exponent beta to beta_final over beta_anneal_steps
    decay_eps = epsilon_decay(policy, p)
    beta = LinearSchedule(p.beta, p.beta_final, p.beta_anneal_steps)

    def train_fn(epoch: int, env_step: int) -> None:
        decay_eps(epoch, env_step)
        if isinstance(buffer, PrioritizedVectorReplayBuffer):
            buffer.set_beta(beta(env_step))

    train_off_policy(
        ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=True, train_fn=train_fn
    )


if __name__ == "__main__":
    main()
