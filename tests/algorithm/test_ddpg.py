"""DDPG: deterministic actor, one critic, soft targets for critic and actor, action noise."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.exploration import GaussianNoise, OUNoise
from tdrl.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy
from tdrl.algorithm.modelfree.sac import SACPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DeterministicActor, GaussianActor, QCritic
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


def _ddpg(noise: object = None, **kw: object) -> DDPG:
    torch.manual_seed(0)
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(3, 2, (16,)),
        action_space=SPACE,
        exploration_noise=noise,  # type: ignore[arg-type]
    )
    return DDPG(policy=policy, critic=QCritic(3, 2, (16,)), **kw)  # type: ignore[arg-type]


def _torchrl_batch(n: int = 16) -> TensorDict:
    """A batch in GymEnv's layout: env-range actions, reward/done/terminated ``[B, 1]``."""
    return TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.rand(n, 2) * 4 - 2,
            "next": {
                "observation": torch.randn(n, 3),
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


# ------------------------------------------------------------------------------ semantics
def test_soft_update_moves_critic_and_actor_targets() -> None:
    alg = _ddpg(tau=0.1)
    with torch.no_grad():  # make the targets differ from the online networks
        for name in ("critic1", "actor"):
            for t in getattr(alg, f"target_{name}_params").values(True, True):
                t.add_(1.0)
    old = {n: getattr(alg, f"target_{n}_params").clone() for n in ("critic1", "actor")}
    alg.update(_buffer(), 16)
    for name in ("critic1", "actor"):
        online = getattr(alg, f"{name}_params").detach()
        for key, tgt in getattr(alg, f"target_{name}_params").items(True, True):
            torch.testing.assert_close(tgt, 0.9 * old[name][key] + 0.1 * online[key])
    # the target modules compute with the target parameters
    assert torch.equal(
        alg.actor_old.net[-1].weight,  # type: ignore[index,union-attr]
        alg.target_actor_params["net", "2", "weight"],
    )
    assert torch.equal(
        alg.critic_old.net[-1].weight,  # type: ignore[index,union-attr]
        alg.target_critic1_params["net", "2", "weight"],
    )


def test_bootstrap_uses_target_actor_and_target_critic() -> None:
    alg = _ddpg(gamma=0.9)
    with torch.no_grad():  # the online networks move; the bootstrap must not see it
        for p in [*alg.policy.actor.parameters(), *alg.critic.parameters()]:
            p.add_(torch.randn_like(p))
    obs_next = torch.randn(5, 3)
    expected = alg.critic_old(obs_next, alg.actor_old(obs_next)).reshape(-1)
    torch.testing.assert_close(alg.next_value(obs_next), expected)
    online = alg.critic(obs_next, alg.policy.actor(obs_next)).reshape(-1)
    assert not torch.allclose(alg.next_value(obs_next), online)


def test_nstep_returns_through_the_buffer() -> None:
    alg = _ddpg(gamma=0.9, n_step=3)
    buf = _buffer()  # env 0 holds indices 0..11 and terminates at steps 4 and 9
    idx = np.array([0, 3])
    batch = alg.preprocess(buf[idx], buf, idx)
    rew = buf[np.arange(5)]["rew"]
    v = alg.next_value(buf[np.array([2])]["obs_next"])
    # step 0: three rewards, then the bootstrap from step 2's next observation
    expected0 = rew[0] + 0.9 * rew[1] + 0.81 * rew[2] + 0.729 * v[0]
    # step 3: the episode terminates at step 4, so no bootstrap
    expected3 = rew[3] + 0.9 * rew[4]
    torch.testing.assert_close(batch["returns"].reshape(-1), torch.stack([expected0, expected3]))


def test_actor_step_follows_the_critic_step_and_targets_lag() -> None:
    alg = _ddpg(policy_optim=1e-2, critic_optim=1e-2)
    buf = _buffer()
    actor0 = [p.clone() for p in alg.policy.actor.parameters()]
    target0 = alg.target_actor_params.clone()
    stats = alg.update(buf, 16)
    assert {"loss_qvalue", "loss_actor", "loss"} <= set(stats)
    assert stats["loss"] == pytest.approx(stats["loss_qvalue"] + stats["loss_actor"])
    assert all(not torch.equal(a, b) for a, b in zip(actor0, alg.policy.actor.parameters()))
    moved = alg.target_actor_params
    assert all(not torch.equal(moved[k], target0[k]) for k in target0.keys(True, True))


def test_gaussian_exploration_noise_only_inside_training_steps() -> None:
    alg = _ddpg(noise=GaussianNoise(sigma=0.5))
    batch = make_batch({"obs": torch.randn(64, 3)}, 64)
    with torch.no_grad():
        act = alg.policy(batch)["act"]
    assert torch.equal(alg.policy.exploration_noise(act, batch), act)
    with within_training_step(alg.policy):
        noisy = alg.policy.exploration_noise(act, batch)
    assert 0.3 < float((noisy - act).std()) < 0.7


def test_ou_exploration_noise_is_correlated_in_time() -> None:
    alg = _ddpg(noise=OUNoise(sigma=0.3, theta=0.15, rng=np.random.default_rng(0)))
    batch = make_batch({"obs": torch.zeros(1, 3)}, 1)
    with torch.no_grad():
        act = alg.policy(batch)["act"]
    with within_training_step(alg.policy):
        x = np.array(
            [float((alg.policy.exploration_noise(act, batch) - act)[0, 0]) for _ in range(400)]
        )
    assert np.corrcoef(x[:-1], x[1:])[0, 1] > 0.9  # a random walk, not white noise


def test_prioritized_td_error_written_back() -> None:
    alg = _ddpg()
    buf = _buffer(FakePrioBuffer(64, 2))
    alg.update(buf, 10)
    ((idx, written),) = buf.updates
    assert idx.shape == (10,) and written.shape == (10,) and bool((written >= 0).all())


def test_state_dict_round_trip() -> None:
    buf = _buffer()
    a = _ddpg()
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _ddpg()
    b.load_state_dict(torch.load(f, weights_only=False))
    obs = torch.randn(4, 3)
    torch.testing.assert_close(b.actor_old(obs), a.actor_old(obs))
    torch.testing.assert_close(
        b.critic_old(obs, a.actor_old(obs)), a.critic_old(obs, a.actor_old(obs))
    )
    assert len(b.state_dict()["_optimizers"]) == 2
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)


def test_argument_errors() -> None:
    sac_policy = SACPolicy(actor=GaussianActor(3, 2, (4,)), action_space=SPACE)
    with pytest.raises(
        ValueError, match=r"policy: expected a ContinuousDeterministicPolicy, got SACPolicy"
    ):
        DDPG(policy=sac_policy, critic=QCritic(3, 2, (4,)))  # type: ignore[arg-type]
    policy = ContinuousDeterministicPolicy(actor=DeterministicActor(3, 2, (4,)), action_space=SPACE)
    with pytest.raises(ValueError, match=r"tau: expected a value in \[0, 1\], got 1.5"):
        DDPG(policy=policy, critic=QCritic(3, 2, (4,)), tau=1.5)
    with pytest.raises(ValueError, match=r"n_step: expected an int >= 1, got 0"):
        DDPG(policy=policy, critic=QCritic(3, 2, (4,)), n_step=0)
    with pytest.raises(ValueError, match=r"action_space: .* needs a Box action space"):
        ContinuousDeterministicPolicy(
            actor=DeterministicActor(3, 2), action_space=gym.spaces.Discrete(2)
        )


def test_preset_field_errors_name_the_field() -> None:
    from tdrl.registry import PresetError, preset

    with pytest.raises(PresetError, match=r"'noise_sigma': expected a float >= 0, got -0.1"):
        preset("ddpg", "Pendulum-v1", noise_sigma=-0.1)
    with pytest.raises(
        PresetError, match=r"'exploration_noise': expected a str 'gaussian' or 'ou'"
    ):
        preset("ddpg", "Pendulum-v1", exploration_noise="pink")


def test_preset_builds_ou_noise() -> None:
    from tdrl.algorithm.presets import make_algorithm
    from tdrl.registry import preset

    alg = make_algorithm(
        "ddpg", "Pendulum-v1", preset("ddpg", "Pendulum-v1", exploration_noise="ou")
    )
    assert isinstance(alg, DDPG) and isinstance(alg.policy.noise, OUNoise)


# ------------------------------------------------------------------------- TorchRL layout
def test_torchrl_batch_one_step_target_and_terms() -> None:
    alg = _ddpg(gamma=0.9)
    alg.set_keys(observation="observation", action="action")
    td = _torchrl_batch()
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue", "loss_actor"}
    nxt = td["next", "observation"]
    v = alg.critic_old(nxt, alg.actor_old(nxt)).reshape(-1)
    term = td["next", "terminated"].reshape(-1).float()
    expected = td["next", "reward"].reshape(-1) + 0.9 * (1 - term) * v
    torch.testing.assert_close(td["returns"], expected)
    # the stored env-range action is mapped back to the raw [-1, 1] action for the critic
    q = alg.critic(td["observation"], td["action"] / 2.0).reshape(-1)
    torch.testing.assert_close(out["loss_qvalue"], (q - expected).pow(2).mean())


def test_each_term_reaches_only_its_own_parameters() -> None:
    alg = _ddpg()
    alg.set_keys(observation="observation", action="action")
    out = alg(_torchrl_batch())
    q, actor = (_grads(alg, out[k]) for k in ("loss_qvalue", "loss_actor"))
    assert q and all(n.startswith("critics.") for n in q)
    assert actor and all(n.startswith("policy.actor.") for n in actor)
    trainable = {id(p) for p in alg.parameters()}
    for name in ("critic1", "actor"):
        assert all(
            id(t) not in trainable for t in getattr(alg, f"target_{name}_params").values(True, True)
        )


def test_torchrl_soft_update_moves_both_targets() -> None:
    from torchrl.objectives import SoftUpdate

    alg = _ddpg()
    soft = SoftUpdate(alg, tau=0.5)
    with torch.no_grad():
        for p in [*alg.policy.actor.parameters(), *alg.critic.parameters()]:
            p.add_(1.0)
    before = [p.clone() for p in [*alg.actor_old.parameters(), *alg.critic_old.parameters()]]
    soft.step()
    after = [*alg.actor_old.parameters(), *alg.critic_old.parameters()]
    online = [*alg.policy.actor.parameters(), *alg.critic.parameters()]
    for b, t, s in zip(before, after, online):
        torch.testing.assert_close(t, 0.5 * b + 0.5 * s)


# ------------------------------------------------------------------------------ the oracle
class _SharedActor(torch.nn.Module):
    """An actor both libraries accept: Tianshou's ``forward(obs, state, info) -> (act, h)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = DeterministicActor(3, 2, (16,))
        self.max_action = 1.0

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = QCritic(3, 2, (16,))

    def forward(self, obs, act):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs), torch.as_tensor(act))


def _twin_buffers(obs_dim: int = 3, act_dim: int = 2) -> tuple[VectorReplayBuffer, Any]:
    """The same random transitions (with episode ends) in a tdrl and a Tianshou buffer."""
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB

    rng = np.random.default_rng(0)
    ours, peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d = dict(
            obs=rng.normal(size=(3, obs_dim)).astype(np.float32),
            act=rng.uniform(-1.2, 1.2, size=(3, act_dim)).astype(np.float32),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, obs_dim)).astype(np.float32),
        )
        ours.add(Batch(**d))  # type: ignore[arg-type]
        peer.add(TBatch(info={}, **d))  # type: ignore[arg-type]
    return ours, peer


def test_update_matches_tianshou_exactly() -> None:
    """Same weights, buffer and indices: the n-step targets, TD errors, both losses, and
    every network and target network after 4 updates agree with Tianshou 2.0.1's DDPG."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DDPG as TDDPG
    from tianshou.algorithm.modelfree.ddpg import (
        ContinuousDeterministicPolicy as TPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    actor, critic = _SharedActor(), _SharedCritic()
    ours = DDPG(
        policy=ContinuousDeterministicPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=1e-3,
        critic=copy.deepcopy(critic),
        critic_optim=1e-3,
        tau=0.1,
        gamma=0.9,
        n_step=3,
    )
    peer = TDDPG(
        policy=TPolicy(actor=copy.deepcopy(actor), action_space=SPACE),  # type: ignore[arg-type]
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=copy.deepcopy(critic),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.1,
        gamma=0.9,
        n_step_return_horizon=3,
    )
    b_ours, b_peer = _twin_buffers()
    rng = np.random.default_rng(1)
    for step in range(4):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(
            batch["returns"].reshape(-1), tb.returns.flatten(), atol=1e-5, rtol=1e-5
        )
        torch.testing.assert_close(batch["td_error"], tb.weight, atol=1e-5, rtol=1e-5)
        assert got["loss_qvalue"] == pytest.approx(expected.critic_loss, rel=1e-5), step
        assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6), step
    pairs = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critic, peer.critic),
        (ours.actor_old, peer.actor_old),
        (ours.critic_old, peer.critic_old),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


def test_collected_noise_matches_tianshou_draw_for_draw() -> None:
    """With numpy's global seed, tdrl's policy adds the same Gaussian noise as Tianshou's."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.modelfree.ddpg import (
        ContinuousDeterministicPolicy as TPolicy,
    )
    from tianshou.exploration import GaussianNoise as TGaussianNoise

    actor = _SharedActor()
    ours = ContinuousDeterministicPolicy(
        actor=actor, action_space=SPACE, exploration_noise=GaussianNoise(sigma=0.1)
    )
    peer = TPolicy(
        actor=actor,  # type: ignore[arg-type]
        action_space=SPACE,
        exploration_noise=TGaussianNoise(sigma=0.1),
    )
    act = np.zeros((4, 2), dtype=np.float32)
    np.random.seed(3)
    with within_training_step(ours):
        got = ours.exploration_noise(
            torch.as_tensor(act), make_batch({"obs": torch.zeros(4, 3)}, 4)
        )
    np.random.seed(3)
    expected = peer.add_exploration_noise(act, None)  # type: ignore[arg-type]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


# ------------------------------------------------------------------------------ convergence
@pytest.mark.slow
def test_preset_reaches_pendulum_threshold(tmp_path: Path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="ddpg",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -250.0
