"""End-to-end training of more algorithms: time to threshold, tdrl vs Tianshou 2.0.1.

The same protocol as :mod:`benchmarks.bench_train` (read its docstring: whole-run wall
time, phase timers, untimed warm-up runs, seeding, test-in-train early stopping), for the
remaining classic-control presets of :func:`tdrl.registry.preset`:

=======  ===========  =========
algo     task         threshold
=======  ===========  =========
C51      CartPole-v1  195
QRDQN    CartPole-v1  195
IQN      CartPole-v1  195
Rainbow  CartPole-v1  195
TD3      Pendulum-v1  -250
DDPG     Pendulum-v1  -250
A2C      CartPole-v1  195
TRPO     Pendulum-v1  -250
=======  ===========  =========

tdrl runs through :func:`tdrl.launch.run_experiment` (``bench_train.run_tdrl``); Tianshou
runs the same recipe built from its 2.0.1 classes with the preset's hyperparameters (the
builders in ``tdrl/presets/<algo>.py``):

* C51 / QRDQN: ``Net(num_atoms=..., softmax=True for C51)`` on the preset's trunk, the
  same atoms/quantiles, epsilons, n-step, target sync; QRDQN and IQN get the preset's
  quantile counts.
* IQN: ``ImplicitQuantileNetwork`` on a ``Net(obs -> hidden[:-1] -> hidden[-1])`` feature
  net (tdrl: the same ``psi``, a linear head, the same cosine embedding).
* Rainbow: ``Net`` with a dueling pair of ``NoisyLinear`` heads (no hidden layers, as
  tdrl's ``RainbowNet`` with ``head_hidden_sizes=()``), a ``PrioritizedVectorReplayBuffer``
  with the preset's ``alpha``/``beta`` (constant beta on both sides).
* TD3 / DDPG: ``ContinuousActorDeterministic`` (tanh, ``max_action=1``, scaled to the
  action space by the policy), ``ContinuousCritic`` on concatenated ``(obs, act)``,
  ``GaussianNoise(sigma)``.
* A2C: separate ReLU trunks (``DiscreteActor`` with logits, ``DiscreteCritic``),
  ``collection_step_num_episodes`` = the preset's ``episode_per_collect``,
  ``max_batchsize=1024`` (tdrl's default).
* TRPO: tanh ``ContinuousActorProbabilistic`` (free log-std, unbounded mean) and critic,
  orthogonal weights and zero biases on both sides, ``Independent(Normal)``.

Both sides use plain PyTorch initialisation otherwise; each learns from its own random
streams, so the env steps to threshold differ by luck; the per-step ratio (collect +
update seconds per training env step) separates the code's speed from that luck.
``BENCH_ZOO_SEEDS`` (default ``0``: one seed; e.g. ``0,1,2``) and ``BENCH_ZOO_ALGOS``
(comma-separated subset) select the runs.

Results (2026-11-23, 2-core AMD EPYC VM shared with a CI run, load average ~5, torch 1
thread; ``BENCH_ZOO_SEEDS=0,1,2 python -m benchmarks train_zoo``)::

    untimed warm-up (tiny runs of every config): tdrl 2.7 s, tianshou 13.2 s;
    seeds (0, 1, 2)
    mean over the seeds: wall s and env steps to threshold; ratio = tdrl / tianshou wall
    (goal <= 0.50x); per-step = the same for collect+update seconds per env step;
    reached = runs that hit the threshold (tdrl, tianshou)
    algo     task           thr |   tdrl   steps |  tshou   steps | ratio | per-step | reached
    C51      CartPole-v1    195 |    4.6    3485 |   10.8    4256 | 0.42x | 0.60x | 3/3 3/3
    QRDQN    CartPole-v1    195 |    8.0    4667 |   11.5    4667 | 0.70x | 0.83x | 3/3 3/3
    IQN      CartPole-v1    195 |    4.7    3667 |    9.4    4000 | 0.50x | 0.71x | 3/3 3/3
    RAINBOW  CartPole-v1    195 |    6.6    8363 |    6.9    5176 | 0.96x | 0.80x | 3/3 3/3
    TD3      Pendulum-v1   -250 |    6.5    2333 |   11.9    2333 | 0.55x | 0.58x | 3/3 3/3
    DDPG     Pendulum-v1   -250 |    9.2    2333 |   17.4    2667 | 0.53x | 0.64x | 3/3 3/3
    A2C      CartPole-v1    195 |    2.6   34063 |    6.3   22367 | 0.42x | 0.35x | 3/3 3/3
    TRPO     Pendulum-v1   -250 |    7.4   42667 |   13.8   52907 | 0.54x | 0.75x | 3/3 3/3
    (bench_train_zoo took 429 s)

The Rainbow wall ratio is dominated by one tdrl seed needing 12k steps (per step tdrl is
0.80x); A2C/TRPO/C51 wall ratios also move with step-count luck. Per step, tdrl is
0.35x-0.83x of Tianshou: the 0.5x goal is met per step only by A2C.

    python -m benchmarks train_zoo
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import warnings
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import torch

from benchmarks import bench_train
from benchmarks.bench_train import (
    TEST_SEED_OFFSET,
    Run,
    _cell,
    _mean,
    _per_kstep,
    _phases,
    _seed_everything,
    run_tdrl,
    train_tianshou,
)

SEEDS: tuple[int, ...] = tuple(
    int(s) for s in os.environ.get("BENCH_ZOO_SEEDS", "0").split(",") if s.strip()
)
"""Seeds each configuration is trained with (per side)."""

CONFIGS: tuple[tuple[str, str], ...] = (
    ("c51", "CartPole-v1"),
    ("qrdqn", "CartPole-v1"),
    ("iqn", "CartPole-v1"),
    ("rainbow", "CartPole-v1"),
    ("td3", "Pendulum-v1"),
    ("ddpg", "Pendulum-v1"),
    ("a2c", "CartPole-v1"),
    ("trpo", "Pendulum-v1"),
)

SKIPPED: dict[str, str] = {}
"""Algorithms left out, with the reason (printed)."""

ON_POLICY = {"a2c", "trpo"}

LEGEND = (
    "mean over the seeds: wall s and env steps to threshold; ratio = tdrl / tianshou wall",
    "(goal <= 0.50x); per-step = the same for collect+update seconds per env step;",
    "reached = runs that hit the threshold (tdrl, tianshou)",
)


def _small(preset: object) -> dict[str, int]:
    """A tiny budget (one collect and update, a 2-episode test) for the untimed warm-up."""
    step = getattr(preset, "step_per_collect", None) or 200
    return {"max_epochs": 1, "step_per_epoch": step, "test_num": 2}


@contextlib.contextmanager
def _zoo_small() -> Iterator[None]:
    """Make ``bench_train.run_tdrl`` use :func:`_small` (A2C has no ``step_per_collect``)."""
    saved = bench_train._small
    bench_train._small = _small
    try:
        yield
    finally:
        bench_train._small = saved


def _preset(algo: str):  # type: ignore[no-untyped-def]
    from tdrl.launch import PRESETS

    return PRESETS[algo]


def _tianshou_algorithm(algo: str, obs_space: gym.Space, act_space: gym.Space):  # type: ignore[no-untyped-def]
    """The Tianshou 2.0.1 algorithm matching tdrl's preset for ``algo``."""
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net

    p = _preset(algo)
    obs_dim = int(np.prod(obs_space.shape))  # type: ignore[arg-type]
    hidden = list(p.hidden_sizes)
    adam = AdamOptimizerFactory
    if algo in ("c51", "qrdqn", "rainbow"):
        from tianshou.algorithm import C51, QRDQN, RainbowDQN
        from tianshou.algorithm.modelfree.c51 import C51Policy
        from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy
        from tianshou.utils.net.discrete import NoisyLinear

        n = int(act_space.n)  # type: ignore[attr-defined]
        atoms = p.num_quantiles if algo == "qrdqn" else p.num_atoms
        dueling = None
        if algo == "rainbow":

            def noisy(i: int, o: int) -> NoisyLinear:
                return NoisyLinear(i, o, p.noisy_std)

            head = {"linear_layer": noisy, "hidden_sizes": list(p.head_hidden_sizes)}
            dueling = (head, head)
        model = Net(
            state_shape=obs_dim,
            action_shape=n,
            hidden_sizes=hidden,
            softmax=algo != "qrdqn",
            num_atoms=atoms,
            dueling_param=dueling,
        )
        eps = {"eps_training": p.eps_train, "eps_inference": p.eps_test}
        common = dict(
            optim=adam(lr=p.lr),
            gamma=p.gamma,
            n_step_return_horizon=p.n_step,
            target_update_freq=p.target_update_freq,
        )
        if algo == "qrdqn":
            policy = QRDQNPolicy(model=model, action_space=act_space, **eps)
            return QRDQN(policy=policy, num_quantiles=atoms, **common)  # type: ignore[arg-type]
        policy = C51Policy(
            model=model,
            action_space=act_space,
            num_atoms=atoms,
            v_min=p.v_min,
            v_max=p.v_max,
            **eps,
        )
        cls = RainbowDQN if algo == "rainbow" else C51
        return cls(policy=policy, **common)  # type: ignore[arg-type]
    if algo == "iqn":
        from tianshou.algorithm import IQN
        from tianshou.algorithm.modelfree.iqn import IQNPolicy
        from tianshou.utils.net.discrete import ImplicitQuantileNetwork

        feature = Net(state_shape=obs_dim, action_shape=hidden[-1], hidden_sizes=hidden[:-1])
        model = ImplicitQuantileNetwork(
            preprocess_net=feature,
            action_shape=int(act_space.n),  # type: ignore[attr-defined]
            num_cosines=p.num_cosines,
        )
        policy = IQNPolicy(
            model=model,
            action_space=act_space,
            sample_size=p.sample_size,
            online_sample_size=p.online_sample_size,
            target_sample_size=p.target_sample_size,
            eps_training=p.eps_train,
            eps_inference=p.eps_test,
        )
        return IQN(
            policy=policy,
            optim=adam(lr=p.lr),
            gamma=p.gamma,
            n_step_return_horizon=p.n_step,
            target_update_freq=p.target_update_freq,
        )
    if algo in ("td3", "ddpg"):
        from tianshou.algorithm import DDPG, TD3
        from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
        from tianshou.exploration import GaussianNoise, OUNoise
        from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic

        act_dim = int(np.prod(act_space.shape))  # type: ignore[arg-type]
        actor = ContinuousActorDeterministic(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden),
            action_shape=act_dim,
            max_action=1.0,
        )

        def critic() -> ContinuousCritic:
            net = Net(state_shape=obs_dim, action_shape=act_dim, hidden_sizes=hidden, concat=True)
            return ContinuousCritic(preprocess_net=net)

        noise = (
            GaussianNoise(sigma=p.noise_sigma)
            if p.exploration_noise == "gaussian"
            else OUNoise(sigma=p.noise_sigma)
        )
        policy = ContinuousDeterministicPolicy(
            actor=actor, exploration_noise=noise, action_space=act_space, action_scaling=True
        )
        kw = dict(
            policy=policy,
            policy_optim=adam(lr=p.actor_lr),
            critic=critic(),
            critic_optim=adam(lr=p.critic_lr),
            tau=p.tau,
            gamma=p.gamma,
            n_step_return_horizon=p.n_step,
        )
        if algo == "ddpg":
            return DDPG(**kw)  # type: ignore[arg-type]
        return TD3(
            critic2=critic(),
            critic2_optim=adam(lr=p.critic_lr),
            policy_noise=p.policy_noise,
            noise_clip=p.noise_clip,
            update_actor_freq=p.update_actor_freq,
            **kw,  # type: ignore[arg-type]
        )
    if algo == "a2c":
        from tianshou.algorithm import A2C
        from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
        from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

        actor = DiscreteActor(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden),
            action_shape=int(act_space.n),  # type: ignore[attr-defined]
            softmax_output=False,
        )
        critic = DiscreteCritic(preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden))
        policy = ProbabilisticActorPolicy(
            actor=actor,
            dist_fn=lambda logits: torch.distributions.Categorical(logits=logits),
            deterministic_eval=p.deterministic_eval,
            action_space=act_space,
            action_scaling=False,
            action_bound_method=None,
        )
        return A2C(
            policy=policy,
            critic=critic,
            optim=adam(lr=p.lr),
            vf_coef=p.vf_coef,
            ent_coef=p.ent_coef,
            max_grad_norm=p.max_grad_norm,
            gae_lambda=p.gae_lambda,
            max_batchsize=1024,  # tdrl's default
            gamma=p.gamma,
            return_scaling=p.return_scaling,
        )
    if algo == "trpo":
        from tianshou.algorithm import TRPO
        from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
        from tianshou.utils.net.continuous import (
            ContinuousActorProbabilistic,
            ContinuousCritic,
        )

        act_dim = int(np.prod(act_space.shape))  # type: ignore[arg-type]
        tanh = torch.nn.Tanh
        actor = ContinuousActorProbabilistic(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden, activation=tanh),
            action_shape=act_dim,
            unbounded=True,
        )
        critic = ContinuousCritic(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden, activation=tanh)
        )
        for m in [*actor.modules(), *critic.modules()]:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight)
                torch.nn.init.zeros_(m.bias)

        def dist(
            loc_scale: tuple[torch.Tensor, torch.Tensor],
        ) -> torch.distributions.Distribution:
            loc, scale = loc_scale
            return torch.distributions.Independent(torch.distributions.Normal(loc, scale), 1)

        policy = ProbabilisticActorPolicy(
            actor=actor,
            dist_fn=dist,
            deterministic_eval=p.deterministic_eval,
            action_space=act_space,
        )
        return TRPO(
            policy=policy,
            critic=critic,
            optim=adam(lr=p.lr),
            max_kl=p.max_kl,
            backtrack_coeff=p.backtrack_coeff,
            max_backtracks=p.max_backtracks,
            optim_critic_iters=p.optim_critic_iters,
            advantage_normalization=p.advantage_normalization,
            gae_lambda=p.gae_lambda,
            max_batchsize=1024,  # tdrl's default
            gamma=p.gamma,
            return_scaling=p.return_scaling,
        )
    raise ValueError(f"unknown algo {algo!r}")


def run_tianshou(algo: str, task: str, seed: int, small: bool = False) -> Run:
    """The same experiment as ``run_experiment(algo, task, seed)``, built with Tianshou."""
    from tianshou.data import Collector, PrioritizedVectorReplayBuffer, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv

    p = _preset(algo)
    if small:
        p = dataclasses.replace(p, **_small(p))
    threshold = p.threshold
    start = time.perf_counter()
    _seed_everything(seed)

    def make_env() -> gym.Env:
        return gym.make(task)

    train_envs = DummyVectorEnv([make_env] * p.training_num)
    test_envs = DummyVectorEnv([make_env] * p.test_num)
    algorithm = _tianshou_algorithm(
        algo, train_envs.observation_space[0], train_envs.action_space[0]
    )
    noisy = algo not in ON_POLICY
    if getattr(p, "prioritized_replay", False):
        buffer: VectorReplayBuffer = PrioritizedVectorReplayBuffer(
            p.buffer_size, p.training_num, alpha=p.alpha, beta=p.beta
        )
    else:
        buffer = VectorReplayBuffer(p.buffer_size, p.training_num)
    train_envs.seed(seed)
    test_envs.seed(seed + TEST_SEED_OFFSET)
    train = Collector(algorithm, train_envs, buffer, exploration_noise=noisy)
    test = Collector(algorithm, test_envs, exploration_noise=noisy)
    train.reset()
    test.reset()
    warmup = getattr(p, "warmup_steps", 0)
    if warmup:
        train.collect(n_step=warmup, random=True)
    episodes = getattr(p, "episode_per_collect", None)
    common = dict(
        training_collector=train,
        test_collector=test,
        max_epochs=p.max_epochs,
        epoch_num_steps=p.step_per_epoch,
        collection_step_num_env_steps=None if episodes else p.step_per_collect,
        collection_step_num_episodes=episodes,
        batch_size=p.batch_size,
        test_step_num_episodes=p.test_num,
        stop_fn=lambda best: best >= threshold,
        test_in_training=True,
        logger=None,
        verbose=False,
        show_progress=False,
    )
    return train_tianshou(
        algorithm,
        p,
        algo in ON_POLICY,
        common,
        (train, test),
        (train_envs, test_envs),
        start,
        threshold,
    )


def _configs() -> list[tuple[str, str]]:
    wanted = [a for a in os.environ.get("BENCH_ZOO_ALGOS", "").split(",") if a.strip()]
    return [(a, t) for a, t in CONFIGS if (not wanted or a in wanted) and a not in SKIPPED]


def main() -> None:
    """Train every configuration for every seed with both libraries and print the table."""
    begin = time.perf_counter()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="No target network updater")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for algo, why in SKIPPED.items():
        print(f"{algo.upper():<8} left out: {why}", flush=True)
    configs = _configs()
    spent = {run_tdrl: 0.0, run_tianshou: 0.0}
    with _zoo_small():
        for algo, task in configs:
            for fn in spent:
                t0 = time.perf_counter()
                fn(algo, task, 0, small=True)
                spent[fn] += time.perf_counter() - t0
    print(
        f"untimed warm-up (tiny runs of every config): tdrl {spent[run_tdrl]:.1f} s, "
        f"tianshou {spent[run_tianshou]:.1f} s; seeds {SEEDS}",
        flush=True,
    )
    summaries: list[str] = []
    for algo, task in configs:
        threshold = _preset(algo).threshold
        name = f"{algo.upper()} {task} >= {threshold:g}"
        ours: list[Run] = []
        peer: list[Run] = []
        for i, seed in enumerate(SEEDS):
            order = (run_tdrl, run_tianshou) if i % 2 == 0 else (run_tianshou, run_tdrl)
            for fn in order:
                (ours if fn is run_tdrl else peer).append(fn(algo, task, seed))
            print(f"{name:<28} tdrl     seed {seed}  {_cell(ours[-1])}", flush=True)
            print(f"{name:<28} tianshou seed {seed}  {_cell(peer[-1])}", flush=True)
        print(_phases("tdrl", ours), flush=True)
        print(_phases("tianshou", peer), flush=True)
        w_ours, w_peer = _mean([r.wall for r in ours]), _mean([r.wall for r in peer])
        s_ours, s_peer = _mean([r.steps for r in ours]), _mean([r.steps for r in peer])
        reached = (
            f"{sum(r.reached for r in ours)}/{len(ours)} {sum(r.reached for r in peer)}/{len(peer)}"
        )
        summaries.append(
            f"{algo.upper():<8} {task:<12} {threshold:>5g} | {w_ours:6.1f} {s_ours:7.0f} | "
            f"{w_peer:6.1f} {s_peer:7.0f} | {w_ours / w_peer:4.2f}x | "
            f"{_per_kstep(ours) / _per_kstep(peer):4.2f}x | {reached}"
        )
    print("\n" + "\n".join(LEGEND))
    print(
        f"{'algo':<8} {'task':<12} {'thr':>5} | {'tdrl':>6} {'steps':>7} | "
        f"{'tshou':>6} {'steps':>7} | ratio | per-step | reached"
    )
    for line in summaries:
        print(line, flush=True)
    print(f"(bench_train_zoo took {time.perf_counter() - begin:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
