"""Policies and algorithms: tdrl vs Tianshou on identical data and network shapes.

Rows: acting (DQN greedy policy on 10 CartPole observations, SAC actor on 10 Pendulum
observations, continuous ``map_action``), one off-policy update (DQN with a target net and
3-step returns, SAC with twin critics), and one PPO update (2 epochs over 2000 transitions).

    /opt/tsenv/bin/python -m benchmarks algorithm
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from benchmarks.timing import best_of, row

N_ENVS = 10


def _paired(
    ours: Callable[[], object], peer: Callable[[], object], number: int, repeat: int = 15
) -> tuple[float, float]:
    """Best-of timings of ``ours`` and ``peer``, interleaved so load changes hit both."""
    t_ours = t_peer = float("inf")
    for _ in range(repeat):
        t_ours = min(t_ours, best_of(ours, number, repeat=1))
        t_peer = min(t_peer, best_of(peer, number, repeat=1))
    return t_ours, t_peer


def _fill(add_t, add_p, obs_dim: int, act_fn, steps: int, seed: int = 0) -> None:
    """Add the same random transitions to a tdrl and a Tianshou vector buffer."""
    rng = np.random.default_rng(seed)
    for t in range(steps):
        obs = rng.normal(size=(N_ENVS, obs_dim)).astype(np.float32)
        data = dict(
            obs=obs,
            act=act_fn(rng),
            rew=rng.normal(size=N_ENVS).astype(np.float32),
            terminated=rng.random(N_ENVS) < 0.02,
            truncated=np.full(N_ENVS, t % 200 == 199),
            obs_next=rng.normal(size=(N_ENVS, obs_dim)).astype(np.float32),
        )
        add_t(data)
        add_p(data)


def _buffers(total: int, obs_dim: int, act_fn, steps: int):  # type: ignore[no-untyped-def]
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    ours, peer = VectorReplayBuffer(total, N_ENVS), TVRB(total, N_ENVS)
    _fill(
        lambda d: ours.add(Batch(**d)),
        lambda d: peer.add(TBatch(info={}, **d)),
        obs_dim,
        act_fn,
        steps,
    )
    return ours, peer


def _bench_dqn(rows: list[str]) -> None:
    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step

    from tdrl.algorithm import make_batch, within_training_step
    from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    from tdrl.utils.net import QNet

    space = gym.spaces.Discrete(2)
    ours_p = DQNPolicy(model=QNet(4, 2, (128, 128, 128)), action_space=space, eps_training=0.1)
    ours = DQN(policy=ours_p, optim=1e-3, gamma=0.9, n_step=3, target_update_freq=320)
    peer_p = DiscreteQLearningPolicy(
        model=Net(state_shape=4, action_shape=2, hidden_sizes=[128, 128, 128]),
        action_space=space,
        eps_training=0.1,
    )
    peer = TDQN(
        policy=peer_p,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )

    obs = np.random.default_rng(0).normal(size=(N_ENVS, 4)).astype(np.float32)

    def act_ours() -> object:
        with torch.inference_mode():
            b = make_batch({"obs": torch.from_numpy(obs)}, N_ENVS)
            return ours_p.exploration_noise(ours_p(b)["act"].numpy(), b)

    def act_peer() -> object:
        with torch.inference_mode():
            b = TBatch(obs=obs, info={})
            return peer_p.add_exploration_noise(peer_p(b).act, b)

    with within_training_step(ours_p), policy_within_training_step(peer_p):
        rows.append(row("DQN act + eps-greedy (10 envs)", *_paired(act_ours, act_peer, 300)))
    b_ours, b_peer = _buffers(20000, 4, lambda r: r.integers(0, 2, N_ENVS), 1000)
    with within_training_step(ours_p), policy_within_training_step(peer_p):
        t_ours, t_peer = _paired(
            lambda: ours.update(b_ours, 64), lambda: peer.update(b_peer, 64), 50
        )
    rows.append(row("DQN update (bs 64, 3-step, target net)", t_ours, t_peer))


def _bench_sac(rows: list[str]) -> None:
    from tianshou.algorithm import SAC as TSAC
    from tianshou.algorithm.modelfree.sac import SACPolicy as TSACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
    from tianshou.utils.torch_utils import policy_within_training_step

    from tdrl.algorithm import make_batch, within_training_step
    from tdrl.algorithm.modelfree.sac import SAC, SACPolicy
    from tdrl.utils.net import GaussianActor, QCritic

    space = gym.spaces.Box(-2.0, 2.0, (1,))
    hid = (128, 128)
    ours_p = SACPolicy(actor=GaussianActor(3, 1, hid), action_space=space)
    ours = SAC(policy=ours_p, critic=QCritic(3, 1, hid), tau=0.005, gamma=0.99, alpha=0.2)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=hid),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(state_shape=3, action_shape=1, hidden_sizes=hid, concat=True)
        )

    peer_p = TSACPolicy(actor=actor, action_space=space)
    peer = TSAC(
        policy=peer_p,
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        alpha=0.2,
    )
    obs = np.random.default_rng(0).normal(size=(N_ENVS, 3)).astype(np.float32)

    def act_ours() -> object:
        with torch.inference_mode():
            return ours_p.map_action(
                ours_p(make_batch({"obs": torch.from_numpy(obs)}, N_ENVS))["act"]
            )

    def act_peer() -> object:
        with torch.inference_mode():
            return peer_p.map_action(peer_p(TBatch(obs=obs, info={})).act)

    with within_training_step(ours_p), policy_within_training_step(peer_p):
        rows.append(row("SAC act + map_action (10 envs)", *_paired(act_ours, act_peer, 300)))
    b_ours, b_peer = _buffers(
        20000, 3, lambda r: r.uniform(-1, 1, (N_ENVS, 1)).astype(np.float32), 1000
    )
    with within_training_step(ours_p), policy_within_training_step(peer_p):
        t_ours, t_peer = _paired(
            lambda: ours.update(b_ours, 128), lambda: peer.update(b_peer, 128), 25
        )
    rows.append(row("SAC update (bs 128, twin critics)", t_ours, t_peer))


def _bench_ppo(rows: list[str]) -> None:
    from tianshou.algorithm import PPO as TPPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import DiscreteActor as TActor
    from tianshou.utils.net.discrete import DiscreteCritic
    from tianshou.utils.torch_utils import policy_within_training_step

    from tdrl.algorithm import within_training_step
    from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
    from tdrl.utils.net import DiscreteActor, VCritic

    space = gym.spaces.Discrete(2)
    ours_p = ActorPolicy(actor=DiscreteActor(4, 2, (64, 64)), action_space=space)
    ours = PPO(policy=ours_p, critic=VCritic(4, (64, 64)), optim=3e-4, max_grad_norm=0.5)
    peer_p = DiscreteActorPolicy(
        actor=TActor(preprocess_net=Net(state_shape=4, hidden_sizes=[64, 64]), action_shape=2),
        action_space=space,
    )
    peer = TPPO(
        policy=peer_p,
        critic=DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[64, 64])),
        optim=AdamOptimizerFactory(lr=3e-4),
        max_grad_norm=0.5,
    )
    b_ours, b_peer = _buffers(2000, 4, lambda r: r.integers(0, 2, N_ENVS), 200)
    with within_training_step(ours_p), policy_within_training_step(peer_p):
        t_ours, t_peer = _paired(
            lambda: ours.update(b_ours, 64, 2), lambda: peer.update(b_peer, 64, 2), 1
        )
    rows.append(row("PPO update (2000 steps, bs 64, 2 epochs)", t_ours, t_peer, unit="ms"))


def main() -> None:
    """Print the timing table."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    rows: list[str] = []
    _bench_dqn(rows)
    _bench_sac(rows)
    _bench_ppo(rows)
    for r in rows:
        print(r, flush=True)


if __name__ == "__main__":
    main()
