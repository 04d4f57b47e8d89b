"""The Tianshou 2.0.1 side of the training benchmarks, written once.

:mod:`benchmarks.bench_train` (DQN, PPO, SAC) and :mod:`benchmarks.bench_train_zoo` (C51,
QRDQN, IQN, Rainbow, TD3, DDPG, A2C, TRPO) train each configuration with tdrl and with
Tianshou; this module holds the Tianshou half: :func:`tianshou_algorithm` builds the
Tianshou algorithm matching tdrl's preset for ``algo`` (one table for every algorithm the
two benchmarks run; their docstrings list the correspondences), :func:`run_tianshou` runs
it with the same protocol as tdrl's side, and :class:`Run` is the outcome both sides
report. Tianshou is imported only inside the functions that need it, so importing this
module (and the benchmarks) works without it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

TEST_SEED_OFFSET = 100_000  # test env seeds, as in tdrl's run_experiment
ON_POLICY = frozenset({"ppo", "a2c", "trpo"})
"""Algorithms trained on-policy (a repeat count per collect, no exploration noise)."""
EXPLORATION_NOISE = frozenset({"dqn", "c51", "qrdqn", "iqn", "rainbow", "td3", "ddpg"})
"""Algorithms whose collectors add the policy's exploration noise (as tdrl's presets)."""


@dataclass
class Run:
    """Outcome of one training run."""

    wall: float
    train: float
    steps: int
    best: float
    reached: bool
    collect: float
    update: float
    test: float
    checkpoint: float = 0.0


def seed_everything(seed: int) -> None:
    """Seed ``random``, NumPy and torch with ``seed`` (both sides do)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def timed(obj: object, name: str, acc: dict[str, float], key: str) -> None:
    """Wrap the bound method ``obj.name`` so that its wall time adds up in ``acc[key]``."""
    inner = getattr(obj, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            acc[key] += time.perf_counter() - start

    setattr(obj, name, wrapper)


def small_budget(preset: Any) -> dict[str, int]:
    """A tiny budget (one collect and update, a 2-episode test) for the untimed warm-up
    (A2C has no ``step_per_collect``: 200 steps)."""
    step = getattr(preset, "step_per_collect", None) or 200
    return {"max_epochs": 1, "step_per_epoch": step, "test_num": 2}


def preset(algo: str) -> Any:
    """tdrl's preset of ``algo`` for its default task."""
    from tdrl.presets import preset as tdrl_preset

    return tdrl_preset(algo)


# ---------------------------------------------------------------------- the algorithms
def tianshou_algorithm(algo: str, obs_space: gym.Space, act_space: gym.Space) -> Any:
    """The Tianshou 2.0.1 algorithm matching tdrl's preset for ``algo``."""
    builder = _BUILDERS.get(algo)
    if builder is None:
        raise ValueError(f"unknown algo {algo!r}")
    obs_dim = int(np.prod(obs_space.shape))  # type: ignore[arg-type]
    return builder(algo, preset(algo), obs_dim, act_space)


def _dqn(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """DQN on a ``Net`` Q-network (double Q-learning, tdrl's default)."""
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.utils.net.common import Net

    hidden = list(p.hidden_sizes)

    # QNet: obs -> 128 -> 128 -> 128 -> n_actions, ReLU
    model = Net(
        state_shape=obs_dim,
        action_shape=int(act_space.n),  # type: ignore[attr-defined]
        hidden_sizes=hidden,
    )
    policy = DiscreteQLearningPolicy(
        model=model,
        action_space=act_space,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    return DQN(
        policy=policy,
        optim=adam(lr=p.lr),
        gamma=p.gamma,
        n_step_return_horizon=p.n_step,
        target_update_freq=p.target_update_freq,
        is_double=True,  # tdrl's default
    )


def _categorical_actor_critic(
    p: Any, obs_dim: int, act_space: gym.Space, activation: type[torch.nn.Module]
) -> tuple[Any, Any]:
    """A categorical actor (logits into ``Categorical(logits=...)``, as tdrl's) and a critic
    on separate ``Net`` trunks of ``p.hidden_sizes`` with ``activation``: the policy and
    the critic of PPO and A2C."""
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

    hidden = list(p.hidden_sizes)
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden, activation=activation),
        action_shape=int(act_space.n),  # type: ignore[attr-defined]
        softmax_output=False,
    )
    critic = DiscreteCritic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden, activation=activation)
    )
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=lambda logits: torch.distributions.Categorical(logits=logits),
        deterministic_eval=p.deterministic_eval,
        action_space=act_space,
        action_scaling=False,
        action_bound_method=None,
    )
    return policy, critic


def _ppo(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """PPO with a categorical actor and a critic on separate Tanh trunks."""
    from tianshou.algorithm import PPO
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam

    # DiscreteActor / VCritic: obs -> 64 -> 64 -> out, Tanh, separate trunks
    policy, critic = _categorical_actor_critic(p, obs_dim, act_space, torch.nn.Tanh)
    return PPO(
        policy=policy,
        critic=critic,
        optim=adam(lr=p.lr),
        eps_clip=p.eps_clip,
        dual_clip=None,
        value_clip=p.value_clip,
        advantage_normalization=p.advantage_normalization,
        recompute_advantage=False,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        gae_lambda=p.gae_lambda,
        max_batchsize=1024,  # tdrl's default
        gamma=p.gamma,
        return_scaling=p.return_scaling,
    )


def _sac(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """SAC with a Gaussian actor and two independently initialised critics."""
    from tianshou.algorithm import SAC
    from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

    hidden = list(p.hidden_sizes)

    # GaussianActor: obs -> 128 -> 128 (ReLU) -> loc, clamp(log_std, -20, 2); QCritic:
    # (obs, act) -> 128 -> 128 -> 1 (ReLU); two independently initialised critics.
    act_dim = int(np.prod(act_space.shape))  # type: ignore[arg-type]
    hidden = list(p.hidden_sizes)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=hidden),
        action_shape=act_dim,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> ContinuousCritic:
        net = Net(state_shape=obs_dim, action_shape=act_dim, hidden_sizes=hidden, concat=True)
        return ContinuousCritic(preprocess_net=net)

    policy = SACPolicy(
        actor=actor, action_space=act_space, deterministic_eval=True, action_scaling=True
    )
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha(
            target_entropy=-float(act_dim),
            log_alpha=float(np.log(p.alpha)),
            optim=adam(lr=p.alpha_lr),
        )
    return SAC(
        policy=policy,
        policy_optim=adam(lr=p.actor_lr),
        critic=critic(),
        critic_optim=adam(lr=p.critic_lr),
        critic2=critic(),
        critic2_optim=adam(lr=p.critic_lr),
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step_return_horizon=p.n_step,
    )


def _distributional(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """C51, QRDQN or Rainbow (a dueling pair of noisy heads) on a ``Net`` trunk."""
    from tianshou.algorithm import C51, QRDQN, RainbowDQN
    from tianshou.algorithm.modelfree.c51 import C51Policy
    from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import NoisyLinear

    hidden = list(p.hidden_sizes)

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


def _iqn(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """IQN: an ``ImplicitQuantileNetwork`` on a ``Net`` feature network."""
    from tianshou.algorithm import IQN
    from tianshou.algorithm.modelfree.iqn import IQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import ImplicitQuantileNetwork

    hidden = list(p.hidden_sizes)

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


def _deterministic(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """TD3 or DDPG: a deterministic actor with Gaussian or OU noise, critics."""
    from tianshou.algorithm import DDPG, TD3
    from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.exploration import GaussianNoise, OUNoise
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic

    hidden = list(p.hidden_sizes)

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


def _a2c(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """A2C with a categorical actor and a critic (ReLU trunks)."""
    from tianshou.algorithm import A2C
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam

    policy, critic = _categorical_actor_critic(p, obs_dim, act_space, torch.nn.ReLU)
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


def _trpo(algo: str, p: Any, obs_dim: int, act_space: gym.Space) -> Any:
    """TRPO with a Gaussian actor and a critic on Tanh trunks (orthogonal init)."""
    from tianshou.algorithm import TRPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory as adam
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import (
        ContinuousActorProbabilistic,
        ContinuousCritic,
    )

    hidden = list(p.hidden_sizes)

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


_BUILDERS = {
    "dqn": _dqn,
    "ppo": _ppo,
    "sac": _sac,
    "c51": _distributional,
    "qrdqn": _distributional,
    "rainbow": _distributional,
    "iqn": _iqn,
    "td3": _deterministic,
    "ddpg": _deterministic,
    "a2c": _a2c,
    "trpo": _trpo,
}
"""Each algorithm's builder: ``builder(algo, preset, obs_dim, action_space)``."""


# ---------------------------------------------------------------------- the run
def train_tianshou(
    algorithm: Any,
    p: Any,
    on_policy: bool,
    common: dict[str, Any],
    collectors: tuple[Any, Any],
    envs: tuple[Any, Any],
    start: float,
    threshold: float,
) -> Run:
    """Build Tianshou's trainer for ``algorithm``, run it with its phases timed, close the
    envs and return the :class:`Run` (``start``: when the whole run began)."""
    from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

    train, test = collectors
    if on_policy:
        params: object = OnPolicyTrainerParams(
            update_step_num_repetitions=p.repeat_per_collect,
            **common,
        )
    else:
        params = OffPolicyTrainerParams(
            update_step_num_gradient_steps_per_sample=p.update_per_step,
            **common,
        )
    trainer = algorithm.create_trainer(params)
    # Tianshou 2.0.1's collectors do not accumulate ``collect_time``: time the calls here
    phases = {"collect": 0.0, "update": 0.0, "test": 0.0}
    timed(train, "collect", phases, "collect")
    timed(test, "collect", phases, "test")
    timed(algorithm, "update", phases, "update")
    train_start = time.perf_counter()
    info = trainer.run()
    train_time = time.perf_counter() - train_start
    for envs_ in envs:
        envs_.close()
    wall = time.perf_counter() - start
    return Run(
        wall=wall,
        train=train_time,
        steps=info.train_step,
        best=info.best_reward,
        reached=info.best_reward >= threshold,
        **phases,
    )


def run_tianshou(algo: str, task: str, seed: int, small: bool = False) -> Run:
    """The same experiment as ``run_experiment(algo, task, seed)``, built with Tianshou.

    ``small``: the tiny budget of :func:`small_budget` (for the untimed warm-up).
    """
    from tianshou.data import Collector, PrioritizedVectorReplayBuffer, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv

    p = preset(algo)
    if small:
        p = dataclasses.replace(p, **small_budget(p))
    threshold = p.threshold
    start = time.perf_counter()
    seed_everything(seed)

    def make_env() -> gym.Env:
        return gym.make(task)

    train_envs = DummyVectorEnv([make_env] * p.training_num)
    test_envs = DummyVectorEnv([make_env] * p.test_num)
    algorithm = tianshou_algorithm(
        algo, train_envs.observation_space[0], train_envs.action_space[0]
    )
    noisy = algo in EXPLORATION_NOISE
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
