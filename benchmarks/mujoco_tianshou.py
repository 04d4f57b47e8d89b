"""Tianshou 2.0.1 on the benchmark's tasks, with tdrl's presets and budget, in the same layout.

``tdrl bench`` writes ``OUT/ALGO/TASK/seedS/``; this script trains the same algorithm x
task x seed runs with Tianshou 2.0.1 into ``OUT/tianshou/ALGO/TASK/seedS/`` (``test.csv``
with the same columns, ``done.json``, ``progress.json``, ``run.json``), so that
``tdrl report OUT`` puts both side by side::

    python benchmarks/mujoco_tianshou.py --algos sac,td3,ppo --tasks Hopper-v5,HalfCheetah-v5 \\
        --seeds 3 --env-steps 100000 --out benchmarks/results/mujoco-2026-11-23 [--workers K]

Same hyperparameters: every value comes from tdrl's preset of the algorithm for the task
(:func:`tdrl.presets.preset`: Tianshou 2.0.1's ``examples/mujoco/mujoco_<algo>.py``
values), and the networks are built as those scripts build them (SAC: a Gaussian actor with
a state-conditioned sigma, twin ReLU critics; TD3: a deterministic tanh actor, Gaussian
exploration noise, target smoothing; PPO: tanh MLPs, orthogonal init, the mean's last layer
scaled by 0.01, log std -0.5, observation normalization ``VectorEnvNormObs``, linear LR
decay). Same budget: the env steps become epochs with tdrl's own rule
(:func:`tdrl.benchmark.plan.epochs_for_budget`), the random warm-up is capped as tdrl's
launcher caps it (:func:`tdrl.experiment.warmup_steps`), no early stop, one test of
``test_num`` episodes after every epoch and one before training. Both sides step their envs
in-process (``DummyVectorEnv``; Tianshou's example scripts default to subprocess envs),
seed ``random``/NumPy/torch with the run's seed, training env ``i`` with ``seed + i`` and
test env ``i`` with ``seed + 100000 + i``, and use one torch thread.

Resumable: a finished run (``done.json``) is skipped; an interrupted one continues from
the checkpoint this script saves after every epoch's training (:func:`train_one`; Tianshou
2.0.1's trainer has no full-state checkpoint of its own). Unlike tdrl's, the resumed run
is not bit-identical to an uninterrupted one: its envs start new episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

LIBRARY = "tianshou"
TEST_SEED_OFFSET = 100_000


def _budget(algo: str, task: str, env_steps: int, overrides: dict[str, Any]) -> Any:
    """tdrl's preset with the benchmark's budget (epochs, no threshold)."""
    from tdrl import presets
    from tdrl.benchmark.plan import epochs_for_budget

    base: Any = presets.preset(algo, task, **overrides)
    epochs, per_epoch = epochs_for_budget(int(base.step_per_epoch), env_steps)
    return base.replace(max_epochs=epochs, step_per_epoch=per_epoch, threshold=None)


def _envs(p: Any, seed: int, obs_norm: bool) -> tuple[Any, Any]:
    import gymnasium as gym
    from tianshou.env import DummyVectorEnv, VectorEnvNormObs

    train: Any = DummyVectorEnv([lambda: gym.make(p.task)] * p.training_num)
    test: Any = DummyVectorEnv([lambda: gym.make(p.task)] * p.test_num)
    train.seed(seed)  # env i: seed + i
    test.seed(seed + TEST_SEED_OFFSET)
    if obs_norm:
        train = VectorEnvNormObs(train)
        test = VectorEnvNormObs(test, update_obs_rms=False)
        test.set_obs_rms(train.get_obs_rms())
    return train, test


def _sac(p: Any, env: Any) -> Any:
    import numpy as np
    from tianshou.algorithm import SAC
    from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

    obs, act = env.observation_space.shape, env.action_space.shape
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs, hidden_sizes=list(p.hidden_sizes)),
        action_shape=act,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> Any:
        net = Net(state_shape=obs, action_shape=act, hidden_sizes=list(p.hidden_sizes), concat=True)
        return ContinuousCritic(preprocess_net=net)

    alpha: Any = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha(
            -float(np.prod(act)), float(np.log(p.alpha)), AdamOptimizerFactory(lr=p.alpha_lr)
        )
    return SAC(
        policy=SACPolicy(actor=actor, action_space=env.action_space),
        policy_optim=AdamOptimizerFactory(lr=p.actor_lr),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=p.critic_lr),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=p.critic_lr),
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step_return_horizon=p.n_step,
    )


def _td3(p: Any, env: Any) -> Any:
    from tianshou.algorithm import TD3
    from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.exploration import GaussianNoise
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic

    obs, act = env.observation_space.shape, env.action_space.shape
    max_action = float(env.action_space.high[0])
    if p.exploration_noise != "gaussian":
        raise ValueError(
            f"exploration_noise: this script has 'gaussian', got {p.exploration_noise!r}"
        )
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs, hidden_sizes=list(p.hidden_sizes)),
        action_shape=act,
        max_action=max_action,
    )

    def critic() -> Any:
        net = Net(state_shape=obs, action_shape=act, hidden_sizes=list(p.hidden_sizes), concat=True)
        return ContinuousCritic(preprocess_net=net)

    return TD3(
        policy=ContinuousDeterministicPolicy(
            actor=actor,
            exploration_noise=GaussianNoise(sigma=p.noise_sigma * max_action),
            action_space=env.action_space,
        ),
        policy_optim=AdamOptimizerFactory(lr=p.actor_lr),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=p.critic_lr),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=p.critic_lr),
        tau=p.tau,
        gamma=p.gamma,
        policy_noise=p.policy_noise * max_action,
        update_actor_freq=p.update_actor_freq,
        noise_clip=p.noise_clip,
        n_step_return_horizon=p.n_step,
    )


def _ppo(p: Any, env: Any) -> Any:
    import numpy as np
    import torch
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
    from tianshou.utils.net.common import ActorCritic, Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
    from torch.distributions import Independent, Normal

    obs, act = env.observation_space.shape, env.action_space.shape
    sizes = list(p.hidden_sizes)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs, hidden_sizes=sizes, activation=torch.nn.Tanh),
        action_shape=act,
        unbounded=True,
    )
    critic = ContinuousCritic(
        preprocess_net=Net(state_shape=obs, hidden_sizes=sizes, activation=torch.nn.Tanh)
    )
    torch.nn.init.constant_(actor.sigma_param, -0.5)
    for m in ActorCritic(actor, critic).modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
            torch.nn.init.zeros_(m.bias)
    for m in actor.mu.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.zeros_(m.bias)
            m.weight.data.copy_(0.01 * m.weight.data)
    optim = AdamOptimizerFactory(lr=p.lr)
    if p.lr_decay:
        optim.with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=p.max_epochs,
                epoch_num_steps=p.step_per_epoch,
                collection_step_num_env_steps=p.step_per_collect,
            )
        )

    def dist(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Any:
        loc, scale = loc_scale
        return Independent(Normal(loc, scale), 1)

    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=dist,
        action_scaling=True,
        action_bound_method=p.action_bound_method,
        action_space=env.action_space,
        deterministic_eval=p.deterministic_eval,
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        max_grad_norm=p.max_grad_norm,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        return_scaling=p.return_scaling,
        eps_clip=p.eps_clip,
        value_clip=p.value_clip,
        dual_clip=p.dual_clip,
        advantage_normalization=p.advantage_normalization,
        recompute_advantage=p.recompute_advantage,
    )


BUILDERS = {"sac": _sac, "td3": _td3, "ppo": _ppo}
ON_POLICY = {"ppo"}


CHECKPOINT = "checkpoint.pt"


def _csv_logger(
    run_dir: Path, start: float, wall_offset: float, position: tuple[int, int, int], save: Any
) -> Any:
    """A Tianshou logger writing tdrl's CSV layout (``test.csv``, ``train.csv``),
    ``progress.json`` after every test, and a checkpoint at every epoch's end (``save``)."""
    from tianshou.utils.logger.logger_base import BaseLogger

    from tdrl.benchmark.plan import PROGRESS_FILE, write_json
    from tdrl.utils.logger import CSVLogger, flatten_scalars

    class TdrlCSV(BaseLogger):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(training_interval=1000, test_interval=1, update_interval=1000)
            self.csv = CSVLogger(run_dir)

        def wall(self) -> float:
            return wall_offset + time.perf_counter() - start

        def prepare_dict_for_logging(self, log_data: dict) -> dict:
            return log_data

        def write(self, step_type: str, step: int, data: dict) -> None:
            scope = {"training": "train"}.get(step_type.split("/")[0], step_type.split("/")[0])
            if scope not in ("train", "test"):
                return
            self.csv.write(scope, step, flatten_scalars(data, prefix=scope))
            if scope == "test":
                write_json(run_dir / PROGRESS_FILE, {"env_step": step, "wall_s": self.wall()})

        def finalize(self) -> None:
            pass

        def save_data(self, epoch: int, env_step: int, update_step: int, fn: Any = None) -> None:
            # called at the end of each epoch's training, before its test
            save(epoch, env_step, update_step, self.wall())

        def restore_data(self) -> tuple[int, int, int]:
            return position

        @staticmethod
        def restore_logged_data(log_path: str) -> dict:
            return {}

    return TdrlCSV()


def _rng_state() -> dict[str, Any]:
    import numpy as np
    import torch

    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def train_one(run_dir: Path) -> dict[str, Any]:
    """Train the run described by ``run_dir/run.json`` with Tianshou; write ``done.json``.

    A checkpoint is saved at the end of every epoch's training (networks, optimizers, LR
    schedules, replay buffer, observation statistics, RNG states, counters); a run that
    finds one continues from it: its envs start new episodes there (Tianshou's env states
    are not saved), it tests again at that step (the epoch's test) and goes on.
    """
    import numpy as np
    import torch
    from tianshou.data import Collector, CollectStats, ReplayBuffer, VectorReplayBuffer
    from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

    from tdrl.benchmark.plan import DONE_FILE, PROGRESS_FILE, SPEC_FILE, read_json, write_json
    from tdrl.experiment import warmup_steps
    from tdrl.utils.logger.csv import truncate_csv_logs
    from tdrl.utils.plot import load_curve

    torch.set_num_threads(1)
    start = time.perf_counter()
    info = read_json(run_dir / SPEC_FILE) or {}
    spec = info["spec"]
    algo, task, seed = spec["algo"], spec["task"], int(spec["seed"])
    p = _budget(algo, task, int(spec["env_steps"]), spec.get("overrides", {}))
    ckpt = run_dir / CHECKPOINT
    state = torch.load(ckpt, weights_only=False) if ckpt.is_file() else None
    position, wall_offset = (0, 0, 0), 0.0
    if state is None:  # a fresh start (or one cut before its first checkpoint)
        for name in ("test.csv", "train.csv", PROGRESS_FILE):
            (run_dir / name).unlink(missing_ok=True)
    else:
        position, wall_offset = tuple(state["position"]), float(state["wall_s"])
        epoch, env_step, update_step = position
        # the epoch's test comes after the checkpoint: drop it (and later rows), redo it
        truncate_csv_logs(run_dir, epoch, env_step - 1, update_step)
        print(f"resuming {algo}-{task}-{seed} at epoch {epoch}", flush=True)
    info.update(
        preset=dataclasses.asdict(p), max_epochs=p.max_epochs, step_per_epoch=p.step_per_epoch
    )
    write_json(run_dir / SPEC_FILE, info)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    train_envs, test_envs = _envs(p, seed, obs_norm=bool(getattr(p, "obs_norm", False)))
    import gymnasium as gym

    env = gym.make(task)
    algorithm = BUILDERS[algo](p, env)
    buffer: Any = (
        VectorReplayBuffer(p.buffer_size, p.training_num)
        if p.training_num > 1
        else ReplayBuffer(p.buffer_size)
    )
    if state is not None:
        algorithm.load_state_dict(state["algorithm"])
        for scheduler, sd in zip(algorithm.lr_schedulers, state["schedulers"], strict=True):
            scheduler.load_state_dict(sd)
        buffer = state["buffer"]
        if state["obs_rms"] is not None:
            train_envs.set_obs_rms(state["obs_rms"])
            test_envs.set_obs_rms(state["obs_rms"])
    train = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    test = Collector[CollectStats](algorithm, test_envs)
    train.reset(reset_buffer=state is None)
    test.reset()
    warmup = warmup_steps(p, explicit="warmup_steps" in spec.get("overrides", {}))
    if warmup and state is None:
        train.collect(n_step=warmup, random=True)
    if state is not None:
        _set_rng_state(state["rng"])

    def save(epoch: int, env_step: int, update_step: int, wall: float) -> None:
        obs_rms = train_envs.get_obs_rms() if hasattr(train_envs, "get_obs_rms") else None
        data = {
            "algorithm": algorithm.state_dict(),
            "schedulers": [s.state_dict() for s in algorithm.lr_schedulers],
            "buffer": train.buffer,
            "obs_rms": obs_rms,
            "rng": _rng_state(),
            "position": (epoch, env_step, update_step),
            "wall_s": wall,
        }
        tmp = ckpt.with_name(ckpt.name + ".tmp")
        torch.save(data, tmp)
        os.replace(tmp, ckpt)

    common: dict[str, Any] = dict(
        training_collector=train,
        test_collector=test,
        max_epochs=p.max_epochs,
        epoch_num_steps=p.step_per_epoch,
        collection_step_num_env_steps=p.step_per_collect,
        test_step_num_episodes=p.test_num,
        batch_size=p.batch_size,
        logger=_csv_logger(run_dir, start, wall_offset, position, save),
        resume_from_log=state is not None,
        test_in_training=False,
        show_progress=False,
    )
    if algo in ON_POLICY:
        params: Any = OnPolicyTrainerParams(
            update_step_num_repetitions=p.repeat_per_collect, **common
        )
    else:
        params = OffPolicyTrainerParams(
            update_step_num_gradient_steps_per_sample=p.update_per_step, **common
        )
    result = algorithm.run_training(params)
    train_envs.close()
    test_envs.close()
    steps, returns = load_curve(run_dir)  # (InfoStats.train_step counts this session only)
    done = {
        "library": LIBRARY,
        "algo": algo,
        "task": task,
        "seed": seed,
        "env_steps_budget": int(spec["env_steps"]),
        "env_step": int(steps[-1]) if len(steps) else 0,
        "gradient_step": int(result.update_step),
        "epochs": int(p.max_epochs),
        "wall_s": wall_offset + time.perf_counter() - start,
        "best_reward": float(result.best_reward),
        "final_reward": float(returns[-1]) if len(returns) else float("nan"),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(run_dir / DONE_FILE, done)
    ckpt.unlink(missing_ok=True)
    print(f"tianshou {algo} on {task} seed {seed}: {done}", flush=True)
    return done


def main(argv: list[str] | None = None) -> int:
    """Run the sweep (``--one RUN_DIR``: one run in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algos", default="sac,td3,ppo")
    parser.add_argument("--tasks", default="Hopper-v5,HalfCheetah-v5")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--env-steps", type=int, required=False, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--set", action="append", default=None, metavar="FIELD=VALUE")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        from tdrl.benchmark.plan import BUSY_EXIT, run_lock

        with run_lock(args.one) as mine:
            if not mine:  # another sweep process runs it (tdrl.benchmark.plan.run_lock)
                print(f"{args.one}: another process is running this run; skipped", flush=True)
                return BUSY_EXIT
            train_one(Path(args.one))
        return 0
    if args.env_steps is None or args.out is None:
        parser.error("--env-steps and --out are required")
    from tdrl.benchmark.plan import BUSY_EXIT, SPEC_FILE, plan_sweep, read_json, write_json
    from tdrl.experiment import parse_overrides

    specs = plan_sweep(
        args.algos.split(","),
        args.tasks.split(","),
        args.seeds,
        args.env_steps,
        str(Path(args.out).resolve()),
        overrides=parse_overrides(args.set),
        library=LIBRARY,
    )
    todo = [s for s in specs if not s.finished()]
    print(f"tianshou sweep: {len(specs) - len(todo)} of {len(specs)} runs already done", flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))

    def run(spec: Any) -> int:
        d = spec.dir
        d.mkdir(parents=True, exist_ok=True)
        if read_json(d / SPEC_FILE) is None:
            write_json(d / SPEC_FILE, {"library": LIBRARY, "spec": spec.to_dict()})
        with open(d / "stdout.log", "ab") as log:
            cmd = [sys.executable, os.path.abspath(__file__), "--one", str(d)]
            code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        if code == BUSY_EXIT:
            print(f"{spec.name}: running in another process, skipped", flush=True)
            return 0
        print(f"{spec.name}: {'done' if code == 0 else f'failed ({code})'}", flush=True)
        return code

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        codes = list(pool.map(run, todo))
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
