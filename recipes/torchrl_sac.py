"""tdrl's SAC loss trained in a plain TorchRL loop: TorchRL's env, collector, replay buffer,
target updater and logger; no tdrl collector, buffer or trainer.

    python recipes/torchrl_sac.py --task Pendulum-v1 --seed 0
    python recipes/torchrl_sac.py --help       # every hyperparameter, with its default

A tdrl algorithm is a TorchRL ``LossModule``: after ``loss.set_keys(observation=
"observation", action="action")`` it reads TorchRL's layout (reward/done/terminated
``[B, 1]`` under ``"next"``), computes its own one-step targets and returns ``loss_*``
terms whose sum is the objective; ``loss.policy`` is a TensorDict module that samples
under TorchRL's ``ExplorationType.RANDOM`` and acts at the mean under ``DETERMINISTIC``.
See docs/torchrl.md. The defaults are tdrl's registry preset (``tdrl train sac
Pendulum-v1``): ``step_per_collect`` frames per batch, ``update_per_step`` gradient steps
per frame, a test every ``step_per_epoch`` frames.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import torch
from common import run_dir
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import GymEnv
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.objectives import SoftUpdate
from torchrl.record.loggers import get_logger

from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "sac", "Pendulum-v1"


def evaluate(env: GymEnv, policy: torch.nn.Module, episodes: int) -> np.ndarray:
    """Returns of ``episodes`` episodes acting at the policy's mean."""
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        rollouts = [env.rollout(100_000, policy) for _ in range(episodes)]
    return np.array([r["next", "reward"].sum().item() for r in rollouts])


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(
        ALGO, TASK, argv, description=__doc__, loggers=("csv", "tensorboard", "wandb")
    )
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env, test_env = GymEnv(p.task), GymEnv(p.task)
    env.set_seed(args.seed)
    test_env.set_seed(args.seed + 100_000)

    # tdrl's SAC: squashed Gaussian actor, twin critics, entropy temperature
    space = env.action_spec.space
    box = gym.spaces.Box(space.low.numpy(), space.high.numpy())
    d, a = env.observation_spec["observation"].shape[-1], box.shape[0]
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=box)
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    loss = SAC(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
    )
    loss.set_keys(observation="observation", action="action")  # TorchRL's layout

    # TorchRL from here on: one Adam (a learning rate per network), the target updater,
    # the collector (random actions for the warm-up frames), the replay buffer, the logger
    lrs = {"policy": p.actor_lr, "critics": p.critic_lr, "auto_alpha": p.alpha_lr}
    groups = [  # (auto_alpha only when alpha is tuned)
        {"params": list(getattr(loss, name).parameters()), "lr": lr}
        for name, lr in lrs.items()
        if hasattr(loss, name)
    ]
    optim = torch.optim.Adam(groups)
    target_updater = SoftUpdate(loss, tau=p.tau)
    total = p.max_epochs * p.step_per_epoch
    warmup = min(p.warmup_steps, max(p.step_per_epoch, total // 2))
    collector = Collector(
        env,
        loss.policy,
        frames_per_batch=p.step_per_collect,
        total_frames=total,
        init_random_frames=warmup,
    )
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(p.buffer_size), batch_size=p.batch_size
    )
    log_dir = run_dir(args, ALGO, p.task)
    kwargs = (
        {"wandb_kwargs": {"offline": True, "project": "tdrl"}} if args.logger == "wandb" else {}
    )
    logger = get_logger(args.logger, str(log_dir), "torchrl_sac", **kwargs)

    start, frames, epoch = time.perf_counter(), 0, 0
    best, best_std, best_epoch = -np.inf, 0.0, 0
    for data in collector:
        buffer.extend(data.reshape(-1))
        frames += data.numel()
        if frames >= warmup:
            for _ in range(round(p.update_per_step * data.numel())):
                out = loss(buffer.sample())
                objective = sum(v for k, v in out.items() if k.startswith("loss_"))
                optim.zero_grad()
                objective.backward()
                optim.step()
                target_updater.step()
            logger.log_scalar("train/loss_qvalue", out["loss_qvalue"].item(), step=frames)
        if frames // p.step_per_epoch > epoch:  # an epoch ended: test
            epoch = frames // p.step_per_epoch
            returns = evaluate(test_env, loss.policy, p.test_num)
            logger.log_scalar("test/return", returns.mean(), step=frames)
            print(f"epoch {epoch}: test return {returns.mean():.1f} ± {returns.std():.1f}")
            if returns.mean() > best:
                best, best_std, best_epoch = returns.mean(), returns.std(), epoch
            if p.threshold is not None and best >= p.threshold:
                break
    collector.shutdown()

    final = evaluate(test_env, loss.policy, p.test_num)
    print(f"final evaluation: {final.mean():.1f} ± {final.std():.1f} over {p.test_num} episodes")
    print(
        f"{ALGO} on {p.task}: best test return {best:.1f} ± {best_std:.1f} (epoch "
        f"{best_epoch}; the saved policy is epoch {epoch}'s), {frames} env steps, "
        f"{time.perf_counter() - start:.1f} s; logs in {log_dir}"
    )


if __name__ == "__main__":
    main()
