"""TD3: twin critics, target policy smoothing, delayed actor and target updates."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import numpy as np
import pytest
import torch

from tdrl.algorithm.base import within_training_step
from tdrl.algorithm.modelfree.td3 import TD3, ContinuousDeterministicPolicy
from tdrl.utils.net import DeterministicActor, QCritic
from tests.algorithm.fakebuf import FakePrioBuffer
from tests.algorithm.test_ddpg import (
    SPACE,
    _buffer,
    _grads,
    _SharedActor,
    _SharedCritic,
    _torchrl_batch,
    _twin_buffers,
)


def _td3(**kw: object) -> TD3:
    torch.manual_seed(0)
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(3, 2, (16,)), action_space=SPACE
    )
    return TD3(policy=policy, critic=QCritic(3, 2, (16,)), **kw)  # type: ignore[arg-type]


def _snapshot(alg: TD3) -> dict[str, list[torch.Tensor]]:
    return {
        "actor": [p.clone() for p in alg.policy.actor.parameters()],
        "critics": [p.clone() for p in alg.critics.parameters()],
        "targets": [
            t.clone()
            for name in ("actor", "critic1", "critic2")
            for t in getattr(alg, f"target_{name}_params").values(True, True)
        ],
    }


def _changed(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return any(not torch.equal(x, y) for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------------------ semantics
def test_twin_critics_are_independent_and_both_have_targets() -> None:
    alg = _td3()
    assert len(alg.critics) == 2 and sorted(alg._targets) == ["actor", "critic1", "critic2"]
    w1, w2 = (c.net[0].weight for c in alg.critics)  # type: ignore[index,union-attr]
    assert not torch.equal(w1, w2)  # the default second critic is re-initialized


def test_delayed_actor_and_target_updates() -> None:
    """Critics move on every step; the actor and all targets on steps 0, 3, 6 (freq 3)."""
    alg = _td3(update_actor_freq=3, policy_optim=1e-2, critic_optim=1e-2)
    buf = _buffer()
    actor_turns = []
    last = None
    for _ in range(7):
        before = _snapshot(alg)
        stats = alg.update(buf, 16)
        after = _snapshot(alg)
        assert _changed(before["critics"], after["critics"])
        actor_moved = _changed(before["actor"], after["actor"])
        assert actor_moved == _changed(before["targets"], after["targets"])
        actor_turns.append(actor_moved)
        if not actor_moved:  # off-turn steps log the last actor loss
            assert stats["loss_actor"] == last
        last = stats["loss_actor"]
        assert stats["loss"] == pytest.approx(stats["loss_qvalue"] + stats["loss_actor"])
    assert actor_turns == [True, False, False, True, False, False, True]


def test_target_smoothing_noise_is_clipped() -> None:
    alg = _td3(policy_noise=10.0, noise_clip=0.3)
    obs_next = torch.randn(256, 3)
    base = alg.actor_old(obs_next)
    diff = alg.target_action(obs_next) - base
    assert float(diff.abs().max()) == pytest.approx(0.3)  # huge noise, clipped at 0.3
    unclipped = _td3(policy_noise=10.0, noise_clip=0.0)
    assert float((unclipped.target_action(obs_next) - base).abs().max()) > 5.0
    silent = _td3(policy_noise=0.0)
    torch.testing.assert_close(silent.target_action(obs_next), base)


def test_bootstrap_is_min_of_target_critics_at_smoothed_target_action() -> None:
    alg = _td3(policy_noise=0.2, noise_clip=0.5)
    with torch.no_grad():  # online networks move; the bootstrap must not see it
        for p in [*alg.policy.actor.parameters(), *alg.critics.parameters()]:
            p.add_(torch.randn_like(p))
    obs_next = torch.randn(8, 3)
    torch.manual_seed(7)
    v = alg.next_value(obs_next)
    torch.manual_seed(7)
    noise = (torch.randn(8, 2) * 0.2).clamp(-0.5, 0.5)
    a = alg.actor_old(obs_next) + noise
    expected = torch.min(alg.critic1_old(obs_next, a), alg.critic2_old(obs_next, a)).reshape(-1)
    torch.testing.assert_close(v, expected)


def test_actor_loss_uses_the_first_critic_only() -> None:
    alg = _td3()
    obs = torch.randn(8, 3)
    out = alg.actor_losses(Batch_obs(obs))
    expected = -alg.critics[0](obs, alg.policy.actor(obs)).mean()
    torch.testing.assert_close(out["loss_actor"], expected)


def Batch_obs(obs: torch.Tensor):  # type: ignore[no-untyped-def]
    from tdrl.algorithm.base import make_batch

    return make_batch({"obs": obs}, obs.shape[0])


def test_prioritized_td_error_is_the_mean_of_both_critics() -> None:
    alg = _td3()
    buf = _buffer(FakePrioBuffer(64, 2))
    alg.update(buf, 10)
    ((idx, written),) = buf.updates
    assert idx.shape == (10,) and written.shape == (10,)
    buf2 = _buffer()
    i = np.arange(6)
    batch = alg.preprocess(buf2[i], buf2, i)
    alg.critic_losses(batch)
    q1, q2 = (c(batch["obs"], batch["act"]).reshape(-1) for c in alg.critics)
    y = batch["returns"].reshape(-1)
    torch.testing.assert_close(batch["td_error"], ((q1 - y) + (q2 - y)) / 2)


def test_state_dict_round_trip_keeps_the_delay_phase() -> None:
    buf = _buffer()
    a = _td3(update_actor_freq=2)
    for _ in range(3):  # steps 0, 1, 2: the next step (3) is an off-turn step
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _td3(update_actor_freq=2)
    b.load_state_dict(torch.load(f, weights_only=False))
    last = dict(a._stages[1].last)["loss_actor"]
    assert b._stage_calls == 3 and dict(b._stages[1].last)["loss_actor"] == last
    assert len(b.state_dict()["_optimizers"]) == 2
    obs = torch.randn(4, 3)
    torch.testing.assert_close(b.actor_old(obs), a.actor_old(obs))
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        torch.manual_seed(5)
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        torch.manual_seed(5)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)
    assert sb["loss_actor"] == pytest.approx(last.item())  # off turn in both


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"policy_noise": -0.1}, "policy_noise: expected a value >= 0, got -0.1"),
        ({"noise_clip": -1.0}, "noise_clip: expected a value >= 0, got -1.0"),
        ({"update_actor_freq": 0}, "update_actor_freq: expected an int >= 1, got 0"),
        ({"gamma": 1.5}, "gamma: expected a value in \\[0, 1\\], got 1.5"),
    ],
)
def test_argument_errors(kw: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _td3(**kw)


def test_preset_field_errors_name_the_field() -> None:
    from tdrl.registry import PresetError, preset

    with pytest.raises(PresetError, match=r"'policy_noise': expected a float >= 0, got -1.0"):
        preset("td3", "Pendulum-v1", policy_noise=-1.0)
    with pytest.raises(PresetError, match=r"'update_actor_freq': expected an int >= 1, got 0"):
        preset("td3", "Pendulum-v1", update_actor_freq=0)


# ------------------------------------------------------------------------- TorchRL layout
def test_torchrl_batch_terms_and_gradients() -> None:
    alg = _td3(gamma=0.9)
    alg.set_keys(observation="observation", action="action")
    td = _torchrl_batch()
    torch.manual_seed(1)
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue", "loss_actor"}
    torch.manual_seed(1)
    v = alg.next_value(td["next", "observation"])
    term = td["next", "terminated"].reshape(-1).float()
    torch.testing.assert_close(
        td["returns"], td["next", "reward"].reshape(-1) + 0.9 * (1 - term) * v
    )
    q, actor = (_grads(alg, out[k]) for k in ("loss_qvalue", "loss_actor"))
    assert {n.split(".")[1] for n in q} == {"0", "1"}  # both critics
    assert all(n.startswith("critics.") for n in q)
    assert actor and all(n.startswith("policy.actor.") for n in actor)


# ------------------------------------------------------------------------------ the oracle
def test_update_matches_tianshou_exactly() -> None:
    """Same weights, buffer, indices and torch seed (the smoothing noise): over 5 updates
    with an actor step every 2nd, the n-step targets, TD errors, critic losses (Tianshou's
    two summed: tdrl steps one Adam over both critics, see docs/differences.md), the logged
    actor loss, and every network and target network agree with Tianshou 2.0.1's TD3."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import TD3 as TTD3
    from tianshou.algorithm.modelfree.ddpg import (
        ContinuousDeterministicPolicy as TPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    actor, c1, c2 = _SharedActor(), _SharedCritic(), _SharedCritic()
    ours = TD3(
        policy=ContinuousDeterministicPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=1e-3,
        critic=copy.deepcopy(c1),
        critic_optim=1e-3,
        critic2=copy.deepcopy(c2),
        tau=0.1,
        gamma=0.9,
        policy_noise=0.3,
        noise_clip=0.4,
        update_actor_freq=2,
        n_step=3,
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TTD3(
        policy=TPolicy(actor=copy.deepcopy(actor), action_space=SPACE),  # type: ignore[arg-type]
        policy_optim=adam,
        critic=copy.deepcopy(c1),
        critic_optim=adam,
        critic2=copy.deepcopy(c2),
        critic2_optim=adam,
        tau=0.1,
        gamma=0.9,
        policy_noise=0.3,
        noise_clip=0.4,
        update_actor_freq=2,
        n_step_return_horizon=3,
    )
    b_ours, b_peer = _twin_buffers()
    rng = np.random.default_rng(1)
    for step in range(5):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            torch.manual_seed(100 + step)
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            torch.manual_seed(100 + step)
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(
            batch["returns"].reshape(-1), tb.returns.flatten(), atol=1e-5, rtol=1e-5
        )
        torch.testing.assert_close(batch["td_error"], tb.weight, atol=1e-5, rtol=1e-5)
        exp_q = expected.critic1_loss + expected.critic2_loss
        assert got["loss_qvalue"] == pytest.approx(exp_q, rel=1e-5), step
        assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6), step
    pairs = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critics[0], peer.critic),
        (ours.critics[1], peer.critic2),
        (ours.actor_old, peer.actor_old),
        (ours.critic1_old, peer.critic_old),
        (ours.critic2_old, peer.critic2_old),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ convergence
@pytest.mark.slow
def test_preset_reaches_pendulum_threshold(tmp_path: Path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="td3",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -250.0
