"""Discrete SAC: categorical actor, Q(s) -> [B, |A|] critics, expected-value targets."""

from __future__ import annotations

import copy
import io
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.discrete_sac import DiscreteSAC, DiscreteSACPolicy
from tdrl.algorithm.modelfree.sac import AutoAlpha
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DiscreteActor, QNet
from tests.algorithm.fakebuf import FakePrioBuffer

N_ACT = 3
SPACE = gym.spaces.Discrete(N_ACT)


def _buffer(buf: VectorReplayBuffer | None = None, steps: int = 12) -> VectorReplayBuffer:
    rng = np.random.default_rng(0)
    buf = buf if buf is not None else VectorReplayBuffer(64, 2)
    for t in range(steps):
        buf.add(
            Batch(
                obs=rng.normal(size=(2, 4)).astype(np.float32),
                act=rng.integers(0, N_ACT, size=2),
                rew=rng.normal(size=2).astype(np.float32),
                terminated=np.array([t % 5 == 4, False]),
                truncated=np.array([False, t % 7 == 6]),
                obs_next=rng.normal(size=(2, 4)).astype(np.float32),
            )
        )
    return buf


def _sac(alpha: float | AutoAlpha = 0.2, **kw) -> DiscreteSAC:
    torch.manual_seed(0)
    policy = DiscreteSACPolicy(actor=DiscreteActor(4, N_ACT, (16,)), action_space=SPACE)
    return DiscreteSAC(policy=policy, critic=QNet(4, N_ACT, (16,)), alpha=alpha, **kw)


def _flat(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


# ------------------------------------------------------------------------------ policy
def test_policy_samples_in_training_and_is_greedy_in_evaluation() -> None:
    alg = _sac()
    obs = torch.randn(200, 4)
    batch = make_batch({"obs": obs}, 200)
    logits = alg.policy.actor(obs)
    out = alg.policy(batch)
    assert torch.equal(out["act"], logits.argmax(-1)) and torch.equal(out["logits"], logits)
    with within_training_step(alg.policy):
        torch.manual_seed(0)
        sampled = alg.policy(batch)["act"]
    assert sampled.dtype == torch.int64 and not torch.equal(sampled, logits.argmax(-1))
    torch.testing.assert_close(out.dist.probs, torch.softmax(logits, -1))
    assert alg.policy.compute_action(np.zeros(4, dtype=np.float32)) in range(N_ACT)


def test_policy_needs_a_discrete_space() -> None:
    with pytest.raises(ValueError, match="action_space: expected Discrete, got Box"):
        DiscreteSACPolicy(actor=DiscreteActor(4, 2), action_space=gym.spaces.Box(-1, 1, (2,)))


def test_argument_errors() -> None:
    policy = DiscreteSACPolicy(actor=DiscreteActor(4, N_ACT, (4,)), action_space=SPACE)
    with pytest.raises(ValueError, match=r"tau: expected a value in \[0, 1\], got 2"):
        DiscreteSAC(policy=policy, critic=QNet(4, N_ACT, (4,)), tau=2)
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got -0.5"):
        DiscreteSAC(policy=policy, critic=QNet(4, N_ACT, (4,)), gamma=-0.5)
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        DiscreteSAC(policy=policy, critic=QNet(4, N_ACT, (4,)), n_step=0)
    from tdrl.algorithm.modelfree.sac import SACPolicy
    from tdrl.utils.net import GaussianActor

    box = SACPolicy(actor=GaussianActor(4, 1, (4,)), action_space=gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(ValueError, match="policy: expected a DiscreteSACPolicy, got SACPolicy"):
        DiscreteSAC(policy=box, critic=QNet(4, N_ACT, (4,)))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ critics
def test_critics_give_all_action_values_and_the_taken_ones() -> None:
    alg = _sac()
    assert not torch.equal(_flat(alg.critics[0]), _flat(alg.critics[1]))  # fresh critic2
    obs, act = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
    q1, q2 = alg.q_values(obs)
    assert q1.shape == q2.shape == (5, N_ACT)
    taken = alg.q_values(obs, act)
    torch.testing.assert_close(taken[0], q1.gather(1, act[:, None]).squeeze(1))
    torch.testing.assert_close(taken[1], q2[torch.arange(5), act])
    assert all(not q.requires_grad for q in alg.q_values(obs, detach=True))
    assert all(not q.requires_grad for q in alg.q_values(obs, target=True))


def test_target_is_the_expected_soft_value_of_the_min_target_critic() -> None:
    alg = _sac(alpha=0.3)
    with torch.no_grad():
        for p in alg.critics_old[1].parameters():
            p.add_(0.2)
    buf = _buffer()
    idx = np.array([0, 3, 8])
    v = alg._target_q(buf, idx)
    obs_next = buf[idx]["obs_next"]
    probs = torch.softmax(alg.policy.actor(obs_next), -1)
    q = torch.min(alg.critic1_old(obs_next), alg.critic2_old(obs_next))
    entropy = -(probs * probs.log()).sum(-1)
    torch.testing.assert_close(v, (probs * q).sum(-1) + 0.3 * entropy)


def test_critic_loss_sums_the_twin_squared_errors() -> None:
    alg = _sac(gamma=0.9, n_step=3)
    buf = _buffer()
    idx = np.arange(10)
    batch = alg.preprocess(buf[idx], buf, idx)
    loss = alg.critic_losses(batch)["loss_qvalue"]
    act = batch["act"].long()
    y = batch["returns"].reshape(-1)
    tds = [c(batch["obs"]).gather(1, act[:, None]).squeeze(1) - y for c in alg.critics]
    torch.testing.assert_close(loss, tds[0].pow(2).mean() + tds[1].pow(2).mean())
    torch.testing.assert_close(batch["td_error"], ((tds[0] + tds[1]) / 2).detach())


def test_actor_loss_and_gradients() -> None:
    alg = _sac(alpha=AutoAlpha(0.5, log_alpha=math.log(0.2)))
    obs = torch.randn(7, 4)
    out = alg.actor_losses(TensorDict({"obs": obs}, [7]))
    probs = torch.softmax(alg.policy.actor(obs), -1)
    entropy = -(probs * probs.log()).sum(-1)
    q = torch.min(*[c(obs) for c in alg.critics])
    expected = -(0.2 * entropy + (probs * q).sum(-1)).mean()
    torch.testing.assert_close(out["loss_actor"], expected)
    torch.testing.assert_close(out["entropy"], entropy.mean().detach())
    alpha_loss = -(math.log(0.2) * (0.5 - entropy)).mean()
    torch.testing.assert_close(out["loss_alpha"], alpha_loss.detach().float())
    out["loss_actor"].backward()
    assert all(p.grad is not None for p in alg.policy.actor.parameters())
    assert all(p.grad is None for p in alg.critics.parameters())
    assert alg.auto_alpha is not None and alg.auto_alpha.log_alpha.grad is None


def test_auto_target_entropy_is_098_log_n_actions() -> None:
    alg = _sac(alpha=AutoAlpha("auto"))
    assert alg.auto_alpha is not None
    assert alg.auto_alpha.target_entropy == pytest.approx(0.98 * math.log(N_ACT))


@pytest.mark.parametrize(("target_entropy", "direction"), [(1.5, 1), (0.1, -1)])
def test_alpha_tuning_moves_towards_the_entropy_target(
    target_entropy: float, direction: int
) -> None:
    alg = _sac(alpha=AutoAlpha(target_entropy=target_entropy, log_alpha=0.0, optim=0.1))
    buf = _buffer()
    for _ in range(3):
        stats = alg.update(buf, 16)
    assert np.sign(alg.alpha - 1.0) == direction  # log 3 = 1.10 lies between the targets
    assert {"alpha", "loss_alpha", "entropy", "loss_actor", "loss_qvalue"} <= set(stats)


def test_update_moves_critics_actor_and_soft_targets() -> None:
    alg = _sac(tau=0.25)
    buf = _buffer()
    with torch.no_grad():
        for t in alg.target_critic1_params.values(True, True):
            t.add_(1.0)
    old_target = alg.target_critic1_params.clone()
    actor = _flat(alg.policy.actor)
    alg.update(buf, 16)
    assert not torch.equal(actor, _flat(alg.policy.actor))
    online = alg.critic1_params.detach()
    for key, tgt in alg.target_critic1_params.items(True, True):
        torch.testing.assert_close(tgt, 0.75 * old_target[key] + 0.25 * online[key])


def test_prioritized_td_error_written_back() -> None:
    alg = _sac()
    buf = _buffer(FakePrioBuffer(64, 2))
    alg.update(buf, 10)
    ((idx, written),) = buf.updates
    assert idx.shape == (10,) and written.shape == (10,) and bool((written >= 0).all())


def test_state_dict_round_trip() -> None:
    buf = _buffer()
    a = _sac(alpha=AutoAlpha("auto"))
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _sac(alpha=AutoAlpha("auto"))
    b.load_state_dict(torch.load(f, weights_only=False))
    assert b.alpha == pytest.approx(a.alpha) and len(b.state_dict()["_optimizers"]) == 3
    idx = np.arange(6)
    sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
    sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)


# ------------------------------------------------------------------------- TorchRL layout
def _torchrl_batch(n: int) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(N_ACT, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.rand(n, 1) < 0.3,
            },
        },
        [n],
    )


def _grads(loss: torch.nn.Module, term: torch.Tensor) -> set[str]:
    params = dict(loss.named_parameters())
    grads = torch.autograd.grad(term, list(params.values()), allow_unused=True)
    return {n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}


def test_torchrl_batch_terms_reach_only_their_parameters() -> None:
    loss = _sac(alpha=AutoAlpha("auto"))
    loss.set_keys(observation="observation", action="action")
    td = _torchrl_batch(16)
    out = loss(td)
    assert {"loss_qvalue", "loss_actor", "loss_alpha", "entropy", "alpha"} == set(out.keys())
    q, actor, alpha = (_grads(loss, out[k]) for k in ("loss_qvalue", "loss_actor", "loss_alpha"))
    assert {n.split(".")[1] for n in q} == {"0", "1"} and all(n.startswith("critics.") for n in q)
    assert actor and all(n.startswith("policy.actor.") for n in actor)
    assert alpha == {"auto_alpha.log_alpha"}
    # the one-step target r + gamma (1 - terminated) V'(s')
    v = loss.next_value(td["next", "observation"])
    rew, term = td["next", "reward"].reshape(-1), td["next", "terminated"].reshape(-1).float()
    torch.testing.assert_close(td["returns"], rew + loss.gamma * (1 - term) * v)
    # the policy acts on a TorchRL TensorDict
    acted = loss.policy(TensorDict({"observation": torch.randn(5, 4)}, [5]))
    assert acted["action"].shape == (5,) and acted["action"].dtype == torch.int64


# ------------------------------------------------------------------------------- oracle
class _SharedActor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = DiscreteActor(4, N_ACT, (16,))

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = QNet(4, N_ACT, (16,))

    def forward(self, obs):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


@pytest.mark.parametrize("auto_alpha", [False, True])
def test_update_matches_tianshou_exactly(auto_alpha: bool) -> None:
    """Same weights, buffer and indices: the same 3-step targets, losses, alpha and
    parameters (actor, both critics, both target critics) as Tianshou's DiscreteSAC over
    5 updates. The update itself draws no random numbers, so nothing else is aligned.

    tdrl steps one Adam over both critics on the sum of their losses (Tianshou: one per
    critic; the same parameters result, see docs/differences.md)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DiscreteSAC as TDiscreteSAC
    from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy as TPolicy
    from tianshou.algorithm.modelfree.sac import AutoAlpha as TAutoAlpha
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    actor, c1, c2 = _SharedActor(), _SharedCritic(), _SharedCritic()
    target = 0.98 * math.log(N_ACT)
    ours = DiscreteSAC(
        policy=DiscreteSACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=3e-3,
        critic=copy.deepcopy(c1),
        critic2=copy.deepcopy(c2),
        critic_optim=1e-2,
        alpha=AutoAlpha(target, log_alpha=-1.0, optim=3e-2) if auto_alpha else 0.05,
        n_step=3,
        gamma=0.95,
        tau=0.1,
    )
    peer = TDiscreteSAC(
        policy=TPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=AdamOptimizerFactory(lr=3e-3),
        critic=copy.deepcopy(c1),
        critic_optim=AdamOptimizerFactory(lr=1e-2),
        critic2=copy.deepcopy(c2),
        alpha=TAutoAlpha(target, -1.0, AdamOptimizerFactory(lr=3e-2)) if auto_alpha else 0.05,
        n_step_return_horizon=3,
        gamma=0.95,
        tau=0.1,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, N_ACT, size=3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(5):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            peer_batch = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            returns = peer_batch.returns.reshape(-1).clone()
            expected: Any = peer._update_with_batch(peer_batch)
        torch.testing.assert_close(batch["returns"].reshape(-1), returns, atol=1e-5, rtol=1e-5)
        exp_critic = expected.critic1_loss + expected.critic2_loss
        assert got["loss_qvalue"] == pytest.approx(exp_critic, rel=1e-5, abs=1e-6), step
        assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6), step
        if auto_alpha:
            assert got["loss_alpha"] == pytest.approx(expected.alpha_loss, rel=1e-5, abs=1e-6), step
        assert ours.alpha == pytest.approx(expected.alpha, rel=1e-6), step
    pairs = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critics[0], peer.critic),
        (ours.critics[1], peer.critic2),
        (ours.critic1_old, peer.critic_old),
        (ours.critic2_old, peer.critic2_old),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------- preset
def test_preset_is_registered_and_builds() -> None:
    from tdrl import registry
    from tdrl.algorithm.presets import make_algorithm
    from tdrl.presets.discrete_sac import DiscreteSACPreset

    p = registry.preset("discrete_sac")
    assert isinstance(p, DiscreteSACPreset) and p.task == "CartPole-v1"
    e = registry.entry("discrete_sac", "CartPole-v1")
    assert (e.trainer, e.exploration_noise, e.action_space) == ("offpolicy", False, "discrete")
    alg = make_algorithm("discrete_sac", "CartPole-v1")
    assert isinstance(alg, DiscreteSAC) and alg.alpha == p.alpha and alg.n_step == p.n_step
    auto = make_algorithm("discrete_sac", "CartPole-v1", p.replace(auto_alpha=True))
    assert isinstance(auto, DiscreteSAC) and auto.auto_alpha is not None
    assert auto.auto_alpha.target_entropy == pytest.approx(0.98 * math.log(2))
    assert auto.alpha == pytest.approx(p.alpha)  # the initial temperature
    with pytest.raises(registry.PresetError, match="discrete_sac needs a Discrete action space"):
        make_algorithm("discrete_sac", "Pendulum-v1")
    with pytest.raises(registry.PresetError, match=r"'alpha': expected a float > 0, got -1\.0"):
        registry.preset("discrete_sac", alpha=-1.0)


# -------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_preset_reaches_cartpole_threshold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="discrete_sac",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 170.0  # Tianshou's threshold; training stops at 195
