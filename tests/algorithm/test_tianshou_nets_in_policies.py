"""Tianshou-signature networks (:mod:`tdrl.utils.tianshou_net`) inside tdrl's policies and
algorithms, built as Tianshou 2.0's test scripts build them: each family acts on a batch and
runs one real ``update`` on a small replay buffer, and its parameters move."""

from __future__ import annotations

import copy
import functools
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import tdrl.algorithm as A
from tdrl.algorithm.policy import make_batch
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.tianshou_net.common import (
    MLP,
    ActorCritic,
    BranchingNet,
    EnsembleLinear,
    Net,
    Recurrent,
)
from tdrl.utils.tianshou_net.continuous import (
    VAE,
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
    Perturbation,
)
from tdrl.utils.tianshou_net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    IntrinsicCuriosityModule,
    NoisyLinear,
)

OBS = 4
N_ACT = 2
ACT_DIM = 2
DISCRETE = gym.spaces.Discrete(N_ACT)
BOX = gym.spaces.Box(-1.0, 1.0, (ACT_DIM,))


# -- helpers ----------------------------------------------------------------------------
def _buffer(
    act: str = "discrete", n: int = 40, stack_num: int = 1, seed: int = 0
) -> VectorReplayBuffer:
    """Two envs of random transitions, episodes of 5 steps (terminated / truncated)."""
    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(n, 2, stack_num=stack_num)
    for t in range(n // 2):
        done = (t % 5) == 4
        if act == "discrete":
            a = rng.integers(0, N_ACT, 2)
        elif act == "branches":
            a = rng.integers(0, 3, (2, ACT_DIM))
        else:
            a = rng.uniform(-1, 1, (2, ACT_DIM)).astype(np.float32)
        buf.add(
            Batch(
                obs=rng.standard_normal((2, OBS)).astype(np.float32),
                act=a,
                rew=rng.standard_normal(2).astype(np.float32),
                terminated=np.array([done, False]),
                truncated=np.array([False, done]),
                obs_next=rng.standard_normal((2, OBS)).astype(np.float32),
            ),
            buffer_ids=np.arange(2),
        )
    return buf


def _snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.named_parameters()}


def _moved(before: dict[str, torch.Tensor], module: nn.Module) -> list[str]:
    """Names of the parameters of ``module`` that changed since ``before``."""
    after = dict(module.named_parameters())
    return [k for k, v in before.items() if not torch.equal(v, after[k].detach())]


def _update(alg: Any, buf: Any, modules: dict[str, nn.Module], batch_size: int = 16) -> Any:
    """One ``update``; every module in ``modules`` must have moved, the loss be finite."""
    before = {name: _snapshot(m) for name, m in modules.items()}
    stats = alg.update(buf, batch_size)
    assert np.isfinite(float(stats["loss"])), stats
    for name, m in modules.items():
        assert _moved(before[name], m), f"{name}: no parameter changed"
    return stats


def _act(policy: Any, n: int = 3, **extra: Any) -> Any:
    return policy(make_batch({"obs": torch.randn(n, OBS), **extra}, n))


def _feature_net(width: int = 16) -> Net:
    return Net(state_shape=OBS, action_shape=width, hidden_sizes=[16], softmax=False)


# -- the Q-learning family --------------------------------------------------------------
def test_dqn_with_net() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=N_ACT, hidden_sizes=[16, 16])
    policy = A.DQNPolicy(model=net, action_space=DISCRETE, eps_training=0.1)
    alg = A.DQN(policy=policy, optim=1e-2, n_step_return_horizon=2, target_update_freq=4)
    assert _act(policy)["act"].shape == (3,)
    _update(alg, _buffer(), {"net": net})


def test_dueling_dqn_with_net() -> None:
    torch.manual_seed(0)
    dueling = ({"hidden_sizes": [8]}, {"hidden_sizes": [8]})
    net = Net(state_shape=OBS, action_shape=N_ACT, hidden_sizes=[16], dueling_param=dueling)
    alg = A.DQN(policy=A.DQNPolicy(model=net, action_space=DISCRETE), optim=1e-2)
    _update(alg, _buffer(), {"trunk": net.model, "Q": net.Q, "V": net.V})  # type: ignore[dict-item]


def test_c51_with_net_num_atoms_softmax() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=N_ACT, hidden_sizes=[16], softmax=True, num_atoms=11)
    policy = A.C51Policy(model=net, action_space=DISCRETE, num_atoms=11, v_min=-5, v_max=5)
    alg = A.C51(policy=policy, optim=1e-2, n_step_return_horizon=2, target_update_freq=4)
    assert _act(policy)["logits"].shape == (3, N_ACT)
    _update(alg, _buffer(), {"net": net})


def test_qrdqn_with_net_num_atoms() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=N_ACT, hidden_sizes=[16], softmax=False, num_atoms=8)
    policy = A.QRDQNPolicy(model=net, action_space=DISCRETE)
    alg = A.QRDQN(policy=policy, num_quantiles=8, optim=1e-2, target_update_freq=4)
    _update(alg, _buffer(), {"net": net})


def test_rainbow_with_noisy_dueling_net() -> None:
    torch.manual_seed(0)
    noisy = functools.partial(NoisyLinear, noisy_std=0.1)
    net = Net(
        state_shape=OBS,
        action_shape=N_ACT,
        hidden_sizes=[16],
        softmax=True,
        num_atoms=11,
        dueling_param=({"linear_layer": noisy}, {"linear_layer": noisy}),
    )
    policy = A.RainbowPolicy(model=net, action_space=DISCRETE, num_atoms=11, v_min=-5, v_max=5)
    alg = A.Rainbow(policy=policy, optim=1e-2, target_update_freq=4)
    layers = [m for m in net.modules() if isinstance(m, NoisyLinear)]
    eps = [layer.eps_q.clone() for layer in layers]
    assert alg.resample_noise() >= len(layers) == 2
    assert not any(torch.equal(e, layer.eps_q) for e, layer in zip(eps, layers))
    _update(alg, _buffer(), {"Q": net.Q, "V": net.V})  # type: ignore[dict-item]


def test_bdqn_with_branching_net() -> None:
    torch.manual_seed(0)
    net = BranchingNet(
        state_shape=OBS,
        num_branches=ACT_DIM,
        action_per_branch=3,
        common_hidden_sizes=[16],
        value_hidden_sizes=[8],
        action_hidden_sizes=[8],
    )
    space = gym.spaces.MultiDiscrete([3] * ACT_DIM)
    policy = A.BDQNPolicy(model=net, action_space=space)
    alg = A.BDQN(policy=policy, optim=1e-2, target_update_freq=4)
    assert _act(policy)["act"].shape == (3, ACT_DIM)
    _update(alg, _buffer("branches"), {"net": net})


def test_drqn_with_recurrent() -> None:
    torch.manual_seed(0)
    net = Recurrent(layer_num=1, state_shape=OBS, action_shape=N_ACT, hidden_layer_size=16)
    policy = A.DRQNPolicy(model=net, action_space=DISCRETE)
    alg = A.DRQN(policy=policy, optim=1e-2, n_step=2, target_update_freq=4)
    out = _act(policy)
    assert out["state"]["hidden"].shape == (3, 1, 16)
    out2 = policy(make_batch({"obs": torch.randn(3, OBS)}, 3), state=out["state"])
    assert out2["act"].shape == (3,)
    _update(alg, _buffer(stack_num=3), {"net": net})


def test_collector_carries_recurrent_state_tensordict() -> None:
    """A collector keeps ``Recurrent``'s ``{"hidden", "cell"}`` state per env, zeroes it
    when an env resets, and the stacked buffer trains DRQN."""
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    torch.manual_seed(0)
    net = Recurrent(layer_num=1, state_shape=4, action_shape=2, hidden_layer_size=8)
    policy = A.DRQNPolicy(model=net, action_space=DISCRETE, eps_training=0.5)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    buf = VectorReplayBuffer(200, 2, stack_num=4)
    col = Collector(policy, envs, buf)
    col.reset(seed=0)
    col.collect(n_step=60)
    assert col._state["hidden"].shape == (2, 1, 8) and col._state["cell"].shape == (2, 1, 8)
    _update(A.DRQN(policy=policy, optim=1e-2), buf, {"net": net})


def test_iqn_with_implicit_quantile_network() -> None:
    torch.manual_seed(0)
    net = ImplicitQuantileNetwork(preprocess_net=_feature_net(), action_shape=N_ACT, num_cosines=8)
    policy = A.IQNPolicy(
        model=net,
        action_space=DISCRETE,
        sample_size=6,
        online_sample_size=5,
        target_sample_size=7,
        eps_training=0.1,
    )
    alg = A.IQN(policy=policy, optim=1e-2, n_step_return_horizon=2, target_update_freq=4)
    assert _act(policy)["logits"].shape == (3, N_ACT)
    _update(alg, _buffer(), {"net": net})


def test_fqf_with_full_quantile_function() -> None:
    torch.manual_seed(0)
    net = FullQuantileFunction(
        preprocess_net=_feature_net(), action_shape=N_ACT, hidden_sizes=[16], num_cosines=8
    )
    fraction_net = FractionProposalNetwork(6, net.input_dim)
    policy = A.FQFPolicy(model=net, fraction_model=fraction_net, action_space=DISCRETE)
    alg = A.FQF(
        policy=policy,
        optim=1e-2,
        fraction_optim=A.RMSpropOptimizerFactory(lr=1e-2),
        ent_coef=0.1,
        n_step_return_horizon=2,
        target_update_freq=4,
    )
    assert _act(policy)["logits"].shape == (3, N_ACT)
    _update(alg, _buffer(), {"net": net, "fraction": fraction_net})


# -- on-policy ----------------------------------------------------------------------------
def test_ppo_discrete_with_actor_and_critic() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, hidden_sizes=[16, 16])
    actor = DiscreteActor(preprocess_net=net, action_shape=N_ACT)
    critic = DiscreteCritic(preprocess_net=net)
    ac = ActorCritic(actor, critic)
    policy = A.ActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=DISCRETE
    )
    alg = A.PPO(policy=policy, critic=critic, optim=1e-2)
    assert _act(policy)["act"].shape == (3,)
    stats = alg.update(_buffer(), batch_size=16, repeat=2)
    assert np.isfinite(float(stats["loss"]))
    assert sum(p.numel() for p in ac.parameters()) > 0


def test_ppo_continuous_with_probabilistic_actor() -> None:
    torch.manual_seed(0)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]),
        action_shape=ACT_DIM,
        unbounded=True,
    )
    critic = ContinuousCritic(preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]))

    def dist(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.distributions.Distribution:
        loc, scale = loc_scale
        return torch.distributions.Independent(torch.distributions.Normal(loc, scale), 1)

    policy = A.ActorPolicy(actor=actor, dist_fn=dist, action_space=BOX)
    alg = A.PPO(policy=policy, critic=critic, optim=1e-2)
    before = {"actor": _snapshot(actor), "critic": _snapshot(critic)}
    stats = alg.update(_buffer("box"), batch_size=16, repeat=2)
    assert np.isfinite(float(stats["loss"]))
    assert _moved(before["actor"], actor) and _moved(before["critic"], critic)
    assert "sigma_param" in _moved(before["actor"], actor)


# -- off-policy actor-critic ------------------------------------------------------------
def _q_critic(hidden: int = 16, **kw: Any) -> ContinuousCritic:
    net = Net(state_shape=OBS, action_shape=ACT_DIM, hidden_sizes=[hidden], concat=True)
    return ContinuousCritic(preprocess_net=net, **kw)


def test_sac_with_probabilistic_actor_and_critics() -> None:
    torch.manual_seed(0)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]),
        action_shape=ACT_DIM,
        unbounded=True,
        conditioned_sigma=True,
    )
    critic1, critic2 = _q_critic(), _q_critic()
    policy = A.SACPolicy(actor=actor, action_space=BOX)
    alg = A.SAC(
        policy=policy,
        policy_optim=1e-2,
        critic=critic1,
        critic_optim=1e-2,
        critic2=critic2,
        critic2_optim=1e-2,
        alpha=0.2,
    )
    assert _act(policy)["act"].shape == (3, ACT_DIM)
    _update(alg, _buffer("box"), {"actor": actor, "critic1": critic1, "critic2": critic2})


@pytest.mark.parametrize("algo", ["ddpg", "td3"])
def test_ddpg_td3_with_deterministic_actor(algo: str) -> None:
    torch.manual_seed(0)
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]), action_shape=ACT_DIM
    )
    critic = _q_critic()
    policy = A.ContinuousDeterministicPolicy(actor=actor, action_space=BOX)
    if algo == "ddpg":
        alg: Any = A.DDPG(policy=policy, policy_optim=1e-2, critic=critic, critic_optim=1e-2)
    else:
        alg = A.TD3(
            policy=policy,
            policy_optim=1e-2,
            critic=critic,
            critic_optim=1e-2,
            critic2=_q_critic(),
            update_actor_freq=1,
        )
    assert _act(policy)["act"].shape == (3, ACT_DIM)
    _update(alg, _buffer("box"), {"actor": actor, "critic": critic})


def test_discrete_sac_with_logits_actor_and_q_critics() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, hidden_sizes=[16])
    actor = DiscreteActor(preprocess_net=net, action_shape=N_ACT, softmax_output=False)
    critic1 = DiscreteCritic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]), last_size=N_ACT
    )
    critic2 = DiscreteCritic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]), last_size=N_ACT
    )
    policy = A.DiscreteSACPolicy(actor=actor, action_space=DISCRETE)
    alg = A.DiscreteSAC(
        policy=policy,
        policy_optim=1e-2,
        critic=critic1,
        critic_optim=1e-2,
        critic2=critic2,
        critic2_optim=1e-2,
    )
    _update(alg, _buffer(), {"actor": actor, "critic1": critic1, "critic2": critic2})


def _ensemble_critic(size: int) -> ContinuousCritic:
    def linear(x: int, y: int) -> nn.Module:
        return EnsembleLinear(size, x, y)

    net = Net(
        state_shape=OBS, action_shape=ACT_DIM, hidden_sizes=[16], concat=True, linear_layer=linear
    )
    return ContinuousCritic(preprocess_net=net, linear_layer=linear, flatten_input=False)


def test_redq_with_one_ensemble_critic() -> None:
    torch.manual_seed(0)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]),
        action_shape=ACT_DIM,
        unbounded=True,
        conditioned_sigma=True,
    )
    critic = _ensemble_critic(4)
    assert critic(torch.zeros(5, OBS), torch.zeros(5, ACT_DIM)).shape == (4, 5, 1)
    policy = A.REDQPolicy(actor=actor, action_space=BOX)
    alg = A.REDQ(
        policy=policy,
        policy_optim=1e-2,
        critic=critic,
        critic_optim=1e-2,
        ensemble_size=4,
        subset_size=2,
        actor_delay=1,
    )
    assert len(alg.critics) == 1
    stats = _update(alg, _buffer("box"), {"actor": actor, "critic": critic})
    assert "loss_actor" in stats


# -- ICM ----------------------------------------------------------------------------------
def _icm_model() -> IntrinsicCuriosityModule:
    feature_net = MLP(input_dim=OBS, output_dim=8, hidden_sizes=[16])
    return IntrinsicCuriosityModule(
        feature_net=feature_net, feature_dim=8, action_dim=N_ACT, hidden_sizes=[8]
    )


def test_icm_off_policy_wrapper_with_tianshou_keywords() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=N_ACT, hidden_sizes=[16])
    dqn = A.DQN(policy=A.DQNPolicy(model=net, action_space=DISCRETE), optim=1e-2)
    icm_net = _icm_model()
    alg = A.ICMOffPolicyWrapper(
        wrapped_algorithm=dqn,
        model=icm_net,
        optim=A.AdamOptimizerFactory(lr=1e-2),
        lr_scale=1.0,
        reward_scale=0.01,
        forward_loss_weight=0.2,
    )
    assert alg.wrapped is dqn
    stats = _update(alg, _buffer(), {"q": net, "icm": icm_net})
    assert "loss_icm_forward" in stats


def test_icm_on_policy_wrapper_with_tianshou_keywords() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, hidden_sizes=[16])
    actor = DiscreteActor(preprocess_net=net, action_shape=N_ACT)
    critic = DiscreteCritic(preprocess_net=net)
    policy = A.ActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=DISCRETE
    )
    ppo = A.PPO(policy=policy, critic=critic, optim=1e-2)
    icm_net = _icm_model()
    alg = A.ICMOnPolicyWrapper(wrapped_algorithm=ppo, model=icm_net, optim=1e-2)
    before = {"actor": _snapshot(actor), "icm": _snapshot(icm_net)}
    stats = alg.update(_buffer(), batch_size=16, repeat=1)
    assert np.isfinite(float(stats["loss"]))
    assert _moved(before["actor"], actor) and _moved(before["icm"], icm_net)
    with pytest.raises(TypeError, match="both"):
        A.ICM(wrapped=ppo, wrapped_algorithm=ppo, model=icm_net)


# -- offline ------------------------------------------------------------------------------
def test_bcq_with_vae_and_perturbation() -> None:
    torch.manual_seed(0)
    perturbation = Perturbation(
        preprocess_net=MLP(input_dim=OBS + ACT_DIM, output_dim=ACT_DIM, hidden_sizes=[16]),
        max_action=1.0,
        phi=0.05,
    )
    latent = 2 * ACT_DIM
    vae = VAE(
        encoder=MLP(input_dim=OBS + ACT_DIM, hidden_sizes=[16]),
        decoder=MLP(input_dim=OBS + latent, output_dim=ACT_DIM, hidden_sizes=[16]),
        hidden_dim=16,
        latent_dim=latent,
        max_action=1.0,
    )
    critic = _q_critic()
    policy = A.BCQPolicy(
        actor_perturbation=perturbation,
        critic=critic,
        vae=vae,
        action_space=BOX,
        forward_sampled_times=5,
    )
    alg = A.BCQ(
        policy=policy,
        actor_perturbation_optim=1e-2,
        critic_optim=1e-2,
        vae_optim=1e-2,
        num_sampled_action=3,
    )
    assert _act(policy)["act"].shape == (3, ACT_DIM)
    _update(alg, _buffer("box"), {"perturbation": perturbation, "critic": critic, "vae": vae})


def test_discrete_bcq_with_discrete_actors() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=16)
    policy_net = DiscreteActor(preprocess_net=net, action_shape=N_ACT, hidden_sizes=[16])
    imitation_net = DiscreteActor(preprocess_net=net, action_shape=N_ACT, hidden_sizes=[16])
    policy = A.DiscreteBCQPolicy(model=policy_net, imitator=imitation_net, action_space=DISCRETE)
    alg = A.DiscreteBCQ(policy=policy, optim=1e-2, target_update_freq=4)
    assert _act(policy)["act"].shape == (3,)
    _update(alg, _buffer(), {"model": policy_net.last, "imitator": imitation_net.last})


def test_discrete_crr_with_actor_and_q_critic() -> None:
    torch.manual_seed(0)
    net = Net(state_shape=OBS, action_shape=16)
    actor = DiscreteActor(
        preprocess_net=net, action_shape=N_ACT, hidden_sizes=[16], softmax_output=False
    )
    critic = DiscreteCritic(preprocess_net=net, hidden_sizes=[16], last_size=N_ACT)
    policy = A.DiscreteCRRPolicy(actor=actor, action_space=DISCRETE)
    alg = A.DiscreteCRR(policy=policy, critic=critic, optim=1e-2, target_update_freq=4)
    _update(alg, _buffer(), {"actor": actor.last, "critic": critic.last})


# -- against Tianshou: the same nets, the same updates -----------------------------------
def _buffer_pair(rng: np.random.Generator, act: str = "discrete") -> tuple[Any, Any]:
    """tdrl's and Tianshou's buffers with the same 45 random transitions (3 envs)."""
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB

    ours, peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, OBS)).astype(np.float32),
            act=(
                rng.integers(0, N_ACT, 3)
                if act == "discrete"
                else rng.uniform(-1, 1, size=(3, ACT_DIM)).astype(np.float32)
            ),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, OBS)).astype(np.float32),
        )
        ours.add(Batch(**d))
        peer.add(TBatch(info={}, **d))
    return ours, peer


def _step_both(ours: Any, peer: Any, b_ours: Any, b_peer: Any, idx: np.ndarray, seed: int) -> Any:
    """One gradient step of each on the same indices: ``(ours' batch, our stats,
    Tianshou's batch, Tianshou's stats)``. The torch seed is set before the targets and
    again before the gradient step (REDQ draws its subset from torch's generator in tdrl,
    from numpy's in Tianshou)."""
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(seed)
    with A.within_training_step(ours.policy):
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        torch.manual_seed(seed + 1000)
        got = ours._update_with_batch(batch, len(idx), 1)
    torch.manual_seed(seed)
    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
        torch.manual_seed(seed + 1000)
        expected = peer._update_with_batch(tb)
    return batch, got, tb, expected


def _assert_same_params(ours: nn.Module, theirs: nn.Module) -> None:
    mine, peer = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(peer)
    for k, v in peer.items():
        torch.testing.assert_close(mine[k], v, atol=1e-5, rtol=1e-5)


def test_iqn_update_with_tianshou_signature_net_matches_tianshou() -> None:
    """tdrl's IQN over the Tianshou-signature ``ImplicitQuantileNetwork`` and Tianshou's IQN
    over its own, from the same weights: the same fractions (drawn in the same order from
    torch's generator), returns, losses and weights after each update."""
    pytest.importorskip("tianshou")
    import tianshou.utils.net.common as tc
    import tianshou.utils.net.discrete as td
    from tianshou.algorithm import IQN as TIQN
    from tianshou.algorithm.modelfree.iqn import IQNPolicy as TIQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory

    from tdrl.utils.tianshou_net import common as oc
    from tdrl.utils.tianshou_net import discrete as od

    def build(c: Any, d: Any) -> nn.Module:
        feature = c.Net(state_shape=OBS, action_shape=16, hidden_sizes=[16], softmax=False)
        return d.ImplicitQuantileNetwork(preprocess_net=feature, action_shape=N_ACT, num_cosines=8)

    torch.manual_seed(0)
    peer_net, our_net = build(tc, td), build(oc, od)
    our_net.load_state_dict(peer_net.state_dict())
    sizes = dict(sample_size=6, online_sample_size=5, target_sample_size=7)
    ours = A.IQN(
        policy=A.IQNPolicy(model=our_net, action_space=DISCRETE, **sizes),
        optim=1e-3,
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    peer = TIQN(
        policy=TIQNPolicy(model=peer_net, action_space=DISCRETE, **sizes),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = _buffer_pair(rng)
    for step in range(4):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        batch, got, tb, expected = _step_both(ours, peer, b_ours, b_peer, idx, 100 + step)
        torch.testing.assert_close(batch["returns"], tb.returns, rtol=1e-5, atol=1e-5)
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
    _assert_same_params(our_net, peer_net)


def test_fqf_update_with_tianshou_signature_nets_matches_tianshou() -> None:
    """tdrl's FQF over the Tianshou-signature ``FullQuantileFunction`` and a Tianshou
    ``FractionProposalNetwork`` (a plain tuple out), against Tianshou's FQF from the same
    weights: the same losses and weights after each update."""
    pytest.importorskip("tianshou")
    import tianshou.utils.net.common as tc
    import tianshou.utils.net.discrete as td
    from tianshou.algorithm import FQF as TFQF
    from tianshou.algorithm.modelfree.fqf import FQFPolicy as TFQFPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, RMSpropOptimizerFactory

    from tdrl.utils.tianshou_net import common as oc
    from tdrl.utils.tianshou_net import discrete as od

    def build(c: Any, d: Any) -> nn.Module:
        feature = c.Net(state_shape=OBS, action_shape=16, hidden_sizes=[16], softmax=False)
        return d.FullQuantileFunction(
            preprocess_net=feature, action_shape=N_ACT, hidden_sizes=[16], num_cosines=8
        )

    torch.manual_seed(0)
    peer_net, peer_fpn = build(tc, td), td.FractionProposalNetwork(6, 16)
    with torch.no_grad():
        peer_fpn.net.weight.normal_(0.0, 0.5)
    our_net, our_fpn = build(oc, od), copy.deepcopy(peer_fpn)  # Tianshou's proposal net
    our_net.load_state_dict(peer_net.state_dict())
    ours = A.FQF(
        policy=A.FQFPolicy(model=our_net, fraction_model=our_fpn, action_space=DISCRETE),
        optim=1e-3,
        fraction_optim=A.OptimizerFactory(torch.optim.RMSprop, lr=1e-3),
        gamma=0.9,
        ent_coef=0.5,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    peer = TFQF(
        policy=TFQFPolicy(model=peer_net, fraction_model=peer_fpn, action_space=DISCRETE),
        optim=AdamOptimizerFactory(lr=1e-3),
        fraction_optim=RMSpropOptimizerFactory(lr=1e-3),
        gamma=0.9,
        num_fractions=6,
        ent_coef=0.5,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    rng = np.random.default_rng(1)
    b_ours, b_peer = _buffer_pair(rng)
    for step in range(4):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        _, got, _, expected = _step_both(ours, peer, b_ours, b_peer, idx, step)
        assert got["loss_qvalue"] == pytest.approx(expected.quantile_loss, rel=1e-5), step
        assert got["loss_fraction"] == pytest.approx(expected.fraction_loss, rel=1e-5, abs=1e-7)
    _assert_same_params(our_net, peer_net)
    _assert_same_params(our_fpn, peer_fpn)


def test_iqn_policy_accepts_tianshou_forward_only_network() -> None:
    """A quantile network with only Tianshou's contract (``forward(obs, sample_size)``, no
    ``features``/``quantiles``: Tianshou's own class) acts and trains in tdrl's IQN."""
    pytest.importorskip("tianshou")
    from tianshou.utils.net.common import Net as TNet
    from tianshou.utils.net.discrete import ImplicitQuantileNetwork as TIQNet

    torch.manual_seed(0)
    net = TIQNet(
        preprocess_net=TNet(state_shape=OBS, action_shape=16), action_shape=N_ACT, num_cosines=8
    )
    assert not hasattr(net, "features")
    policy = A.IQNPolicy(model=net, action_space=DISCRETE, sample_size=4)
    alg = A.IQN(policy=policy, optim=1e-2, target_update_freq=4)
    assert _act(policy)["logits"].shape == (3, N_ACT)
    _update(alg, _buffer(), {"net": net})


@pytest.mark.parametrize("target_mode", ["min", "mean"])
def test_redq_ensemble_critic_update_matches_tianshou(target_mode: str) -> None:
    """tdrl's REDQ over the Tianshou-signature ensemble critic (``EnsembleLinear`` layers,
    one network) and Tianshou's REDQ over its own, from the same weights. With the subset
    the whole ensemble the random subset draws do not matter: the same targets, losses and
    weights (actor every 2nd step)."""
    pytest.importorskip("tianshou")
    import tianshou.utils.net.common as tc
    import tianshou.utils.net.continuous as tcont
    from tianshou.algorithm import REDQ as TREDQ
    from tianshou.algorithm.modelfree.redq import REDQPolicy as TREDQPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory

    from tdrl.utils.tianshou_net import common as oc
    from tdrl.utils.tianshou_net import continuous as ocont

    n = 3

    def build(c: Any, cont: Any) -> tuple[nn.Module, nn.Module]:
        actor = cont.ContinuousActorProbabilistic(
            preprocess_net=c.Net(state_shape=OBS, hidden_sizes=[16]),
            action_shape=ACT_DIM,
            unbounded=True,
            conditioned_sigma=True,
        )

        def linear(x: int, y: int) -> nn.Module:
            return c.EnsembleLinear(n, x, y)

        net_c = c.Net(
            state_shape=OBS,
            action_shape=ACT_DIM,
            hidden_sizes=[16],
            concat=True,
            linear_layer=linear,
        )
        critic = cont.ContinuousCritic(
            preprocess_net=net_c, linear_layer=linear, flatten_input=False
        )
        return actor, critic

    torch.manual_seed(0)
    peer_actor, peer_critic = build(tc, tcont)
    our_actor, our_critic = build(oc, ocont)
    our_actor.load_state_dict(peer_actor.state_dict())
    our_critic.load_state_dict(peer_critic.state_dict())
    common_kw: dict[str, Any] = dict(
        ensemble_size=n,
        subset_size=n,
        tau=0.1,
        gamma=0.95,
        actor_delay=2,
        alpha=0.2,
        target_mode=target_mode,
    )
    ours = A.REDQ(
        policy=A.REDQPolicy(actor=our_actor, action_space=BOX),
        policy_optim=1e-3,
        critic=our_critic,
        critic_optim=1e-3,
        **common_kw,
    )
    assert ours.ensemble_critic and len(ours.critics) == 1
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TREDQ(
        policy=TREDQPolicy(actor=peer_actor, action_space=BOX),
        policy_optim=adam,
        critic=peer_critic,
        critic_optim=adam,
        **common_kw,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = _buffer_pair(rng, "box")
    for step in range(4):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        batch, got, tb, expected = _step_both(ours, peer, b_ours, b_peer, idx, 100 + step)
        torch.testing.assert_close(
            batch["returns"].reshape(-1), tb.returns.reshape(-1), atol=1e-5, rtol=1e-5
        )
        assert got["loss_qvalue"] == pytest.approx(expected.critic_loss, rel=1e-5, abs=1e-6)
        if step % 2 == 1:
            assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6)
    _assert_same_params(our_critic, peer_critic)
    _assert_same_params(our_actor, peer_actor)
    _assert_same_params(ours.critics_old[0], getattr(peer.critic_old, "module", peer.critic_old))
