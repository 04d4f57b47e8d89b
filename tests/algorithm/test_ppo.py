"""PPO: GAE preprocessing, clipped losses, minibatch epochs, return scaling."""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic


def _rollout(
    n_envs: int = 4, steps: int = 9, obs_dim: int = 3, continuous: bool = False, seed: int = 0
) -> VectorReplayBuffer:
    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(n_envs * 16, n_envs)
    for _ in range(steps):
        act = (
            rng.normal(size=(n_envs, 1)).astype(np.float32)
            if continuous
            else rng.integers(0, 2, n_envs)
        )
        buf.add(
            Batch(
                obs=rng.normal(size=(n_envs, obs_dim)).astype(np.float32),
                act=act,
                rew=rng.normal(size=n_envs).astype(np.float32),
                terminated=rng.random(n_envs) < 0.15,
                truncated=rng.random(n_envs) < 0.1,
                obs_next=rng.normal(size=(n_envs, obs_dim)).astype(np.float32),
            )
        )
    return buf


def _ppo(**kw) -> PPO:
    torch.manual_seed(0)
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (8,)), action_space=gym.spaces.Discrete(2))
    return PPO(policy=policy, critic=VCritic(3, (8,)), **kw)


def test_update_runs_on_vector_buffer_with_minibatch_epochs() -> None:
    buf = _rollout()
    n = len(buf)  # 36 transitions in 4 sub-buffers
    alg = _ppo(max_grad_norm=0.5)
    before = [p.detach().clone() for p in alg.parameters()]
    stats = alg.update(buf, batch_size=8, repeat=3)
    assert set(stats) == {
        "loss",
        "loss_objective",
        "loss_critic",
        "loss_entropy",
        "vf_loss",
        "entropy",
        "clip_fraction",
        "approx_kl",
        "gradient_steps",
    }
    assert all(np.isfinite(v) for v in stats.values())
    assert stats["gradient_steps"] == 3 * (n // 8)  # the short last minibatch is merged
    assert any(not torch.equal(a, b) for a, b in zip(before, alg.parameters()))
    assert alg.update(buf, batch_size=None, repeat=2)["gradient_steps"] == 2
    assert not alg.policy.is_within_training_step  # restored after the update


def test_preprocess_matches_gae_and_old_log_probs() -> None:
    buf = _rollout()
    alg = _ppo(gamma=0.9, gae_lambda=0.8)
    idx = buf.sample_indices(0)
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        v_s = alg.critic(batch["obs"]).reshape(-1)
        v_s_ = alg.critic(batch["obs_next"]).reshape(-1)
        ret, adv = compute_episodic_return(
            buf[idx], buf, idx, v_s_=v_s_, v_s=v_s, gamma=0.9, gae_lambda=0.8
        )
        logp = alg.policy.dist(batch["obs"])[0].log_prob(batch["act"])
    torch.testing.assert_close(batch["v_s"], v_s)
    torch.testing.assert_close(batch["adv"], adv)
    torch.testing.assert_close(batch["returns"], ret)
    torch.testing.assert_close(batch["logp_old"], logp)


def test_first_pass_has_unit_ratio_and_gradients_go_to_the_right_nets() -> None:
    buf = _rollout()
    alg = _ppo()
    idx = buf.sample_indices(0)
    out = alg(alg.preprocess(buf[idx], buf, idx))
    assert {"loss_objective", "loss_critic", "loss_entropy"} <= set(out.keys())
    assert out["approx_kl"].abs().item() < 1e-6 and out["clip_fraction"].item() == 0.0
    # ratio 1 and normalized advantages: the clipped objective is -mean(A') = 0
    assert abs(out["loss_objective"].item()) < 1e-5
    out["loss_critic"].backward(retain_graph=True)
    assert all(p.grad is None for p in alg.policy.actor.parameters())
    assert all(p.grad is not None for p in alg.critic.parameters())
    alg.critic.zero_grad(set_to_none=True)
    (out["loss_objective"] + out["loss_entropy"]).backward()
    assert all(p.grad is not None for p in alg.policy.actor.parameters())
    assert all(p.grad is None for p in alg.critic.parameters())


def _constant_nets(logits: list[float], value: float) -> tuple[ActorPolicy, torch.nn.Linear]:
    actor = torch.nn.Linear(1, len(logits))
    critic = torch.nn.Linear(1, 1)
    with torch.no_grad():
        actor.weight.zero_()
        actor.bias.copy_(torch.tensor(logits))
        critic.weight.zero_()
        critic.bias.fill_(value)
    return ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(len(logits))), critic


def test_value_clip() -> None:
    policy, critic = _constant_nets([0.0, 0.0], 2.0)
    mb = TensorDict(
        {
            "obs": torch.zeros(1, 1),
            "act": torch.tensor([0]),
            "adv": torch.ones(1),
            "returns": torch.tensor([3.0]),
            "v_s": torch.tensor([1.0]),
            "logp_old": torch.tensor([np.log(0.5)], dtype=torch.float32),
        },
        [1],
    )
    plain = PPO(policy=policy, critic=critic, advantage_normalization=False)
    assert plain(mb)["vf_loss"].item() == pytest.approx(1.0)
    clipped = PPO(policy=policy, critic=critic, advantage_normalization=False, value_clip=True)
    # V clipped to 1 + 0.2: max((3 - 2)^2, (3 - 1.2)^2)
    assert clipped(mb)["vf_loss"].item() == pytest.approx(1.8**2)


def test_dual_clip_bounds_negative_advantages() -> None:
    policy, critic = _constant_nets([0.0, 0.0], 0.0)  # pi(a) = 0.5
    logp_old = torch.tensor([np.log(0.1)], dtype=torch.float32)  # ratio = 5
    mb = TensorDict(
        {
            "obs": torch.zeros(1, 1),
            "act": torch.tensor([1]),
            "adv": -torch.ones(1),
            "returns": torch.zeros(1),
            "v_s": torch.zeros(1),
            "logp_old": logp_old,
        },
        [1],
    )
    plain = PPO(policy=policy, critic=critic, advantage_normalization=False)
    assert plain(mb)["loss_objective"].item() == pytest.approx(5.0, rel=1e-5)
    dual = PPO(policy=policy, critic=critic, advantage_normalization=False, dual_clip=3.0)
    assert dual(mb)["loss_objective"].item() == pytest.approx(3.0, rel=1e-5)
    with pytest.raises(ValueError, match=r"dual_clip: expected a value > 1 or None, got 0\.5"):
        PPO(policy=policy, critic=critic, dual_clip=0.5)


def test_losses_match_torchrl_clip_ppo_loss() -> None:
    from tensordict.nn import TensorDictModule
    from torchrl.modules import ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss

    torch.manual_seed(0)
    actor, critic = DiscreteActor(3, 2, (8,)), VCritic(3, (8,))
    ours = PPO(
        policy=ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(2)),
        critic=critic,
        advantage_normalization=False,
        ent_coef=0.01,
        vf_coef=0.5,
    )
    n = 12
    obs, act = torch.randn(n, 3), torch.randint(0, 2, (n,))
    adv, ret = torch.randn(n), torch.randn(n)
    with torch.no_grad():
        logp_old = torch.distributions.Categorical(logits=actor(obs)).log_prob(act)
        logp_old += 0.3 * torch.randn(n)
    mb = TensorDict(
        {
            "obs": obs,
            "act": act,
            "adv": adv,
            "returns": ret,
            "v_s": torch.zeros(n),
            "logp_old": logp_old,
        },
        [n],
    )
    ref = ClipPPOLoss(
        ProbabilisticActor(
            TensorDictModule(actor, ["observation"], ["logits"]),
            in_keys=["logits"],
            distribution_class=torch.distributions.Categorical,
            return_log_prob=True,
        ),
        ValueOperator(critic, in_keys=["observation"]),
        clip_epsilon=0.2,
        entropy_coeff=0.01,
        critic_coeff=0.5,
        loss_critic_type="l2",
        normalize_advantage=False,
    )
    r = ref(
        TensorDict(
            {
                "observation": obs,
                "action": act,
                "advantage": adv[:, None],
                "value_target": ret[:, None],
                "action_log_prob": logp_old,
            },
            [n],
        )
    )
    o = ours(mb)
    for key in ("loss_objective", "loss_critic", "loss_entropy", "entropy", "clip_fraction"):
        torch.testing.assert_close(o[key], r[key].detach().reshape(()), msg=key)


def test_return_scaling_uses_running_std() -> None:
    buf = _rollout()
    alg = _ppo(return_scaling=True)
    idx = buf.sample_indices(0)
    with torch.no_grad():
        alg.ret_rms.update(torch.tensor([0.0, 4.0]))  # var 4, std ~2
    std = alg.ret_rms.std(alg._eps)
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        v_s = alg.critic(batch["obs"]).reshape(-1) * std
        v_s_ = alg.critic(batch["obs_next"]).reshape(-1) * std
    ret, adv = compute_episodic_return(
        buf[idx], buf, idx, v_s_=v_s_, v_s=v_s, gamma=alg.gamma, gae_lambda=alg.gae_lambda
    )
    torch.testing.assert_close(batch["returns"], ret / std)
    torch.testing.assert_close(batch["adv"], adv)
    assert int(alg.ret_rms.count) == 2 + len(idx)
    assert "ret_rms.var" in alg.state_dict()


def test_recompute_advantage_each_epoch() -> None:
    buf = _rollout()
    alg = _ppo(recompute_advantage=True)
    calls = []
    original = alg._add_returns_and_advantages

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    alg._add_returns_and_advantages = spy  # type: ignore[method-assign]
    stats = alg.update(buf, batch_size=16, repeat=3)
    assert len(calls) == 3 and np.isfinite(stats["loss"])
    assert alg._buffer is None  # released after the update


def test_continuous_ppo_and_state_dict_round_trip() -> None:
    torch.manual_seed(0)
    buf = _rollout(continuous=True)
    space = gym.spaces.Box(-2.0, 2.0, (1,))

    def make() -> PPO:
        actor = GaussianActor(3, 1, (8,), state_dependent_std=False, init_log_std=-0.5)
        return PPO(
            policy=ActorPolicy(actor=actor, action_space=space),
            critic=VCritic(3, (8,)),
            return_scaling=True,
        )

    a = make()
    stats = a.update(buf, batch_size=12, repeat=2)
    assert np.isfinite(stats["loss"])
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = make()
    b.load_state_dict(torch.load(f, weights_only=False))
    obs = torch.randn(4, 3)
    torch.testing.assert_close(b.policy.actor(obs)[0], a.policy.actor(obs)[0])
    torch.testing.assert_close(b.ret_rms.var, a.ret_rms.var)
    sa, sb = a.optim.optim.state_dict()["state"], b.optim.optim.state_dict()["state"]
    assert sa.keys() == sb.keys()
    # raw Gaussian actions are clipped and scaled to the Box by map_action
    env_act = a.policy.map_action(np.array([[-3.0], [0.5]]))
    np.testing.assert_allclose(env_act, [[-2.0], [1.0]])


def test_argument_errors() -> None:
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (4,)), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match="gae_lambda: expected a value in \\[0, 1\\], got 2"):
        PPO(policy=policy, critic=VCritic(3, (4,)), gae_lambda=2)
    with pytest.raises(ValueError, match="action_space: expected Discrete or Box, got MultiBinary"):
        ActorPolicy(actor=DiscreteActor(3, 2, (4,)), action_space=gym.spaces.MultiBinary(2))


class _SharedActor(torch.nn.Module):
    """An actor both libraries accept: ``actor(obs, state=None, info=None) -> (logits, None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = DiscreteActor(3, 2, (16,))

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = VCritic(3, (16,))

    def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def test_full_batch_update_matches_tianshou() -> None:
    pytest.importorskip("tianshou")
    import copy

    from tianshou.algorithm import PPO as TPPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step

    torch.manual_seed(0)
    actor, critic = _SharedActor(), _SharedCritic()
    space = gym.spaces.Discrete(2)
    kw = dict(
        eps_clip=0.2,
        vf_coef=0.5,
        ent_coef=0.01,
        max_grad_norm=0.5,
        gae_lambda=0.9,
        gamma=0.95,
        value_clip=True,
        advantage_normalization=True,
    )
    ours = PPO(
        policy=ActorPolicy(actor=copy.deepcopy(actor), action_space=space),
        critic=copy.deepcopy(critic),
        optim=1e-3,
        **kw,
    )
    peer = TPPO(
        policy=DiscreteActorPolicy(actor=copy.deepcopy(actor), action_space=space),
        critic=copy.deepcopy(critic),
        optim=AdamOptimizerFactory(lr=1e-3),
        **kw,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(64, 4), TVRB(64, 4)
    for _ in range(12):
        d = dict(
            obs=rng.normal(size=(4, 3)).astype(np.float32),
            act=rng.integers(0, 2, 4),
            rew=rng.normal(size=4).astype(np.float32),
            terminated=rng.random(4) < 0.15,
            truncated=rng.random(4) < 0.1,
            obs_next=rng.normal(size=(4, 3)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    got = ours.update(b_ours, None, repeat=3)
    with policy_within_training_step(peer.policy):
        expected = peer.update(b_peer, None, 3)
    assert got["gradient_steps"] == expected.gradient_steps == 3
    assert got["loss"] == pytest.approx(expected.loss.mean, rel=1e-4)
    assert got["vf_loss"] == pytest.approx(expected.vf_loss.mean, rel=1e-4)
    for p_ours, p_peer in zip(
        ours.parameters(), [*peer.policy.actor.parameters(), *peer.critic.parameters()]
    ):
        torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(("n", "batch_size"), [(10, 4), (5, 4), (12, 4), (7, 3)])
def test_minibatches_cover_every_index_exactly_once(n: int, batch_size: int) -> None:
    from tdrl.algorithm.presets import PPO_CARTPOLE

    env = gym.make("CartPole-v1")
    alg = PPO_CARTPOLE.build(env.observation_space, env.action_space)
    parts = alg._minibatches(n, batch_size)
    assert sorted(torch.cat(parts).tolist()) == list(range(n))
    assert all(len(p) >= batch_size for p in parts) or len(parts) == 1
