"""SAC: tanh-Gaussian policy, twin critics, soft target updates, entropy tuning."""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import GaussianActor, QCritic
from tests.algorithm.fakebuf import FakePrioBuffer

SPACE = gym.spaces.Box(-2.0, 2.0, (2,))


def _buffer(buf: VectorReplayBuffer | None = None, steps: int = 12) -> VectorReplayBuffer:
    rng = np.random.default_rng(0)
    buf = buf if buf is not None else VectorReplayBuffer(64, 2)
    for t in range(steps):
        buf.add(
            Batch(
                obs=rng.normal(size=(2, 3)).astype(np.float32),
                act=rng.uniform(-1, 1, size=(2, 2)).astype(np.float32),
                rew=rng.normal(size=2).astype(np.float32),
                terminated=np.array([t % 5 == 4, False]),
                truncated=np.array([False, t % 7 == 6]),
                obs_next=rng.normal(size=(2, 3)).astype(np.float32),
            )
        )
    return buf


def _sac(alpha: float | AutoAlpha = 0.2, **kw) -> SAC:
    torch.manual_seed(0)
    policy = SACPolicy(actor=GaussianActor(3, 2, (16,)), action_space=SPACE)
    return SAC(policy=policy, critic=QCritic(3, 2, (16,)), alpha=alpha, **kw)


def test_log_prob_matches_torchrl_tanh_normal() -> None:
    from torchrl.modules import TanhNormal

    alg = _sac()
    obs = torch.randn(64, 3)
    torch.manual_seed(1)
    with within_training_step(alg.policy):
        act, log_prob, loc, scale = alg.policy.sample(obs)
    ref = TanhNormal(loc, scale, low=-1.0, high=1.0).log_prob(act)
    keep = act.abs().max(-1).values < 0.99  # away from the saturated edges
    torch.testing.assert_close(log_prob[keep], ref[keep], atol=2e-3, rtol=1e-3)


def test_deterministic_eval_and_forward_keys() -> None:
    alg = _sac()
    batch = make_batch({"obs": torch.randn(5, 3)}, 5)
    loc, _ = alg.policy.actor(batch["obs"])
    out = alg.policy(batch)
    torch.testing.assert_close(out["act"], torch.tanh(loc))  # mode outside training
    assert out["log_prob"].shape == (5,) and out.dist.mean.shape == (5, 2)
    with within_training_step(alg.policy):
        assert not torch.allclose(alg.policy(batch)["act"], torch.tanh(loc))
    env_act = alg.policy.map_action(out["act"])
    assert env_act.shape == (5, 2) and np.all(np.abs(env_act) <= 2.0)


def test_soft_target_update_is_exact() -> None:
    alg = _sac(tau=0.1)
    buf = _buffer()
    with torch.no_grad():  # make targets differ from the online critics
        for t in alg.target_critic1_params.values(True, True):
            t.add_(1.0)
    old_target = alg.target_critic1_params.clone()
    alg.update(buf, 16)
    online = alg.critic1_params.detach()
    for key, tgt in alg.target_critic1_params.items(True, True):
        torch.testing.assert_close(tgt, 0.9 * old_target[key] + 0.1 * online[key])
    # the target module computes with the target parameters
    obs, act = torch.randn(3, 3), torch.randn(3, 2)
    lin = alg.critic1_old.net[-1]
    assert torch.equal(lin.weight, alg.target_critic1_params["net", "2", "weight"])
    assert alg.critic1_old(obs, act).shape == (3, 1)


def test_nstep_target_uses_min_of_target_critics_and_entropy() -> None:
    alg = _sac(alpha=0.3, gamma=0.9)
    buf = _buffer()
    idx = np.array([0, 5, 9])
    with within_training_step(alg.policy):
        torch.manual_seed(3)
        q = alg._target_q(buf, idx)
        torch.manual_seed(3)
        obs_next = buf[idx]["obs_next"]
        a, logp, _, _ = alg.policy.sample(obs_next)
        expected = torch.min(alg.critic1_old(obs_next, a), alg.critic2_old(obs_next, a))
    torch.testing.assert_close(q, expected.reshape(-1) - 0.3 * logp)


def test_losses_finite_and_gradients_go_to_the_right_params() -> None:
    alg = _sac(alpha=AutoAlpha())
    buf = _buffer()
    idx = np.arange(8)
    with within_training_step(alg.policy):
        batch = alg.preprocess(buf[idx], buf, idx)
    out = alg(batch)
    assert {"loss_qvalue", "loss_actor", "loss_alpha", "alpha", "entropy"} <= set(out.keys())
    assert all(torch.isfinite(v) for v in out.values())
    out["loss_qvalue"].backward()
    assert all(p.grad is not None for p in alg.critics.parameters())
    assert all(p.grad is None for p in alg.policy.actor.parameters())
    assert all(not t.requires_grad for t in alg.target_critic1_params.values(True, True))
    alg.zero_grad(set_to_none=True)
    out["loss_actor"].backward()
    assert all(p.grad is not None for p in alg.policy.actor.parameters())
    assert alg.auto_alpha is not None and alg.auto_alpha.log_alpha.grad is None
    out["loss_alpha"].backward()
    assert alg.auto_alpha.log_alpha.grad is not None


@pytest.mark.parametrize(("target_entropy", "direction"), [(10.0, 1), (-10.0, -1)])
def test_alpha_tuning_moves_towards_the_entropy_target(
    target_entropy: float, direction: int
) -> None:
    alg = _sac(alpha=AutoAlpha(target_entropy=target_entropy, log_alpha=0.0, optim=0.1))
    buf = _buffer()
    for _ in range(3):
        stats = alg.update(buf, 16)
    # entropy below the target raises alpha, above it lowers alpha
    assert np.sign(alg.alpha - 1.0) == direction
    assert {"alpha", "loss_alpha", "entropy"} <= set(stats)  # alpha: the value the step used


def test_auto_target_entropy_is_minus_action_dim() -> None:
    alg = _sac(alpha=AutoAlpha("auto"))
    assert alg.auto_alpha is not None and alg.auto_alpha.target_entropy == -2.0


def test_prioritized_td_error_written_back() -> None:
    alg = _sac()
    buf = _buffer(FakePrioBuffer(64, 2))
    alg.update(buf, 10)
    ((idx, written),) = buf.updates
    assert idx.shape == (10,) and written.shape == (10,) and bool((written >= 0).all())


def test_state_dict_round_trip_with_alpha_and_optimizers() -> None:
    buf = _buffer()
    a = _sac(alpha=AutoAlpha())
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _sac(alpha=AutoAlpha())
    b.load_state_dict(torch.load(f, weights_only=False))
    assert b.alpha == pytest.approx(a.alpha)
    obs, act = torch.randn(4, 3), torch.randn(4, 2)
    torch.testing.assert_close(b.critic2_old(obs, act), a.critic2_old(obs, act))
    torch.testing.assert_close(b.policy.actor(obs)[0], a.policy.actor(obs)[0])
    assert len(b.state_dict()["_optimizers"]) == 3
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        torch.manual_seed(5)
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        torch.manual_seed(5)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="action_space: expected Box, got Discrete"):
        SACPolicy(actor=GaussianActor(3, 1), action_space=gym.spaces.Discrete(2))
    policy = SACPolicy(actor=GaussianActor(3, 2, (4,)), action_space=SPACE)
    with pytest.raises(ValueError, match="tau: expected a value in \\[0, 1\\], got 2"):
        SAC(policy=policy, critic=QCritic(3, 2, (4,)), tau=2)


class _SharedActor(torch.nn.Module):
    """Near-deterministic actor both libraries accept: ``((loc, scale), None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = GaussianActor(3, 2, (16,), state_dependent_std=False, init_log_std=-14.0)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = QCritic(3, 2, (16,))

    def forward(self, obs, act):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs), torch.as_tensor(act))


def test_updates_match_tianshou_with_zero_alpha() -> None:
    """With alpha = 0 and a ~zero action std, SAC is deterministic: compare 4 updates."""
    pytest.importorskip("tianshou")
    import copy

    from tianshou.algorithm import SAC as TSAC
    from tianshou.algorithm.modelfree.sac import SACPolicy as TSACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    actor, c1, c2 = _SharedActor(), _SharedCritic(), _SharedCritic()
    ours = SAC(
        policy=SACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        critic=copy.deepcopy(c1),
        critic2=copy.deepcopy(c2),
        alpha=0.0,
        n_step=2,
        tau=0.1,
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TSAC(
        policy=TSACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=adam,
        critic=copy.deepcopy(c1),
        critic_optim=adam,
        critic2=copy.deepcopy(c2),
        critic2_optim=adam,
        alpha=0.0,
        n_step_return_horizon=2,
        tau=0.1,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d = dict(
            obs=rng.normal(size=(3, 3)).astype(np.float32),
            act=rng.uniform(-1, 1, size=(3, 2)).astype(np.float32),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 3)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(4):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            expected = peer._update_with_batch(peer._preprocess_batch(b_peer[idx], b_peer, idx))
        exp_critic = expected.critic1_loss + expected.critic2_loss
        assert got["loss_qvalue"] == pytest.approx(exp_critic, rel=1e-4), step
        assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-4), step
    for a, b in ((ours.policy.actor, peer.policy.actor), (ours.critics[1], peer.critic2)):
        for (name, p_ours), p_peer in zip(a.named_parameters(), b.parameters()):
            if "log_std" not in name:  # its gradient only comes through the random noise
                torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-4)
    for p_ours, p_peer in zip(ours.critic1_old.parameters(), peer.critic_old.parameters()):
        torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-4)
