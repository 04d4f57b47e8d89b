"""BCQ: VAE + perturbation actor + twin critics; Tianshou oracle, TorchRL layout, semantics."""

from __future__ import annotations

import copy
import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.imitation.bcq import BCQ, BCQPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import QCritic
from tdrl.utils.net_vae import VAE, Perturbation

SPACE = gym.spaces.Box(-2.0, 2.0, (2,))


def _bcq(phi: float = 0.3, latent_dim: int = 4, **kw: Any) -> BCQ:
    torch.manual_seed(0)
    policy = BCQPolicy(
        actor_perturbation=Perturbation(3, 2, (16,), phi=phi),
        critic=QCritic(3, 2, (16,)),
        vae=VAE(3, 2, (16, 16), latent_dim=latent_dim),
        action_space=SPACE,
        forward_sampled_times=kw.pop("forward_sampled_times", 8),
    )
    return BCQ(policy=policy, **kw)


def _data(rng: np.random.Generator, n: int, truncate: bool = True) -> dict[str, Any]:
    return dict(
        obs=rng.normal(size=(n, 3)).astype(np.float32),
        act=rng.uniform(-1, 1, size=(n, 2)).astype(np.float32),
        rew=rng.normal(size=n).astype(np.float32),
        terminated=rng.random(n) < 0.15,
        truncated=(rng.random(n) < 0.1) if truncate else np.zeros(n, dtype=bool),
        obs_next=rng.normal(size=(n, 3)).astype(np.float32),
    )


def _buffer(steps: int = 12) -> VectorReplayBuffer:
    rng = np.random.default_rng(0)
    buf = VectorReplayBuffer(64, 2)
    for _ in range(steps):
        buf.add(Batch(**_data(rng, 2)))
    return buf


def _torchrl_batch(n: int = 8) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.rand(n, 2) * 4 - 2,  # env range
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


def _grads(loss: torch.nn.Module, term: torch.Tensor) -> set[str]:
    """Top-level groups of the trainable parameters ``term`` reaches (nonzero gradient)."""
    params = dict(loss.named_parameters())
    grads = torch.autograd.grad(term, list(params.values()), allow_unused=True)
    reached = {n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
    return {".".join(n.split(".")[:2]) for n in reached}


# -- semantics ----------------------------------------------------------------------------
def test_target_is_the_lambda_clipped_max_over_perturbed_vae_actions() -> None:
    alg = _bcq(lmbda=0.6, num_sampled_action=5)
    obs_next = torch.randn(4, 3)
    torch.manual_seed(3)
    got = alg.next_value(obs_next)
    torch.manual_seed(3)
    s = obs_next.repeat_interleave(5, 0)
    with torch.no_grad():
        a = alg.actor_perturbation_old(s, alg.policy.vae.decode(s))
        q1, q2 = alg.critic1_old(s, a).reshape(4, 5), alg.critic2_old(s, a).reshape(4, 5)
    expected = (0.6 * torch.min(q1, q2) + 0.4 * torch.max(q1, q2)).max(1).values
    torch.testing.assert_close(got, expected)


def test_one_step_target_bootstraps_at_truncation_not_at_termination() -> None:
    alg = _bcq(gamma=0.9)
    buf = _buffer()
    idx = buf.sample_indices(0)
    batch = alg.preprocess(buf[idx], buf, idx)
    assert "returns" not in batch  # computed in the critic stage, after the VAE step
    torch.manual_seed(1)
    alg.critic_losses(batch)
    torch.manual_seed(1)
    v = alg.next_value(batch["obs_next"])
    term = batch["terminated"].float()
    torch.testing.assert_close(batch["returns"], batch["rew"] + 0.9 * (1 - term) * v)
    assert bool(batch["truncated"].any()) and bool(batch["terminated"].any())


def test_vae_loss_is_reconstruction_plus_half_kl() -> None:
    alg = _bcq()
    td = make_batch({"obs": torch.randn(6, 3), "act": torch.rand(6, 2) * 2 - 1}, 6)
    torch.manual_seed(2)
    out = alg.vae_losses(td)
    torch.manual_seed(2)
    recon, mean, std = alg.policy.vae(td["obs"], td["act"])
    mse = (recon - td["act"]).pow(2).mean()
    kl = (0.5 * (mean.pow(2) + std.pow(2)) - torch.log(std) - 0.5).mean()
    torch.testing.assert_close(out["loss_vae"], mse + 0.5 * kl)
    torch.testing.assert_close(out["vae_kl"], kl)


def test_policy_picks_the_best_candidate_of_the_first_critic() -> None:
    alg = _bcq(forward_sampled_times=6)
    obs = torch.randn(3, 3)
    torch.manual_seed(4)
    act = alg.policy(make_batch({"obs": obs}, 3))["act"]
    torch.manual_seed(4)
    s = obs.repeat_interleave(6, 0)
    cand = alg.policy.actor_perturbation(s, alg.policy.vae.decode(s)).reshape(3, 6, 2)
    q = alg.critics[0](s, cand.reshape(-1, 2)).reshape(3, 6)
    torch.testing.assert_close(act, cand[torch.arange(3), q.argmax(1)])
    env_act = alg.policy.map_action(act)
    assert env_act.shape == (3, 2) and np.all(np.abs(env_act) <= 2.0)


def test_perturbation_is_bounded_by_phi_and_per_sample() -> None:
    xi = Perturbation(3, 2, (16,), phi=0.1)
    obs, act = torch.randn(64, 3), torch.rand(64, 2) * 1.8 - 0.9
    out = xi(obs, act)
    assert bool(((out - act).abs() <= 0.1 + 1e-6).all())
    assert bool((out.abs() <= 1.0).all())
    # each row is perturbed by its own (s, a): not the same offset for the whole batch
    assert not torch.allclose(out - act, (out - act)[:1].expand_as(out))


def test_update_moves_every_network_and_soft_updates_all_targets() -> None:
    alg = _bcq(tau=0.1)
    buf = _buffer()
    old_actor_t = alg.target_actor_params.clone()
    before = {n: p.detach().clone() for n, p in alg.named_parameters()}
    stats = alg.update(buf, 16)
    assert {"loss_vae", "loss_qvalue", "loss_actor", "vae_recon", "vae_kl", "loss"} <= set(stats)
    assert all(np.isfinite(v) for v in stats.values())
    for name, p in alg.named_parameters():
        assert not torch.equal(p, before[name]), name
    online = alg.actor_params.detach()
    for key, tgt in alg.target_actor_params.items(True, True):
        torch.testing.assert_close(tgt, 0.9 * old_actor_t[key] + 0.1 * online[key])


def test_state_dict_round_trip() -> None:
    buf = _buffer()
    a = _bcq()
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _bcq()
    b.load_state_dict(torch.load(f, weights_only=False))
    assert len(b.state_dict()["_optimizers"]) == 3
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        torch.manual_seed(5)
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        torch.manual_seed(5)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)


# -- TorchRL layout ------------------------------------------------------------------------
def test_torchrl_batch_terms_reach_only_their_networks() -> None:
    alg = _bcq()
    alg.set_keys(observation="observation", action="action")
    td = _torchrl_batch()
    out = alg(td)
    assert {"loss_vae", "loss_qvalue", "loss_actor"} <= set(out.keys())
    v = alg.next_value(td["next", "observation"])  # another draw: only check the shape
    assert td["returns"].shape == v.shape == (8,)
    assert _grads(alg, out["loss_vae"]) == {"policy.vae"}
    assert _grads(alg, out["loss_qvalue"]) == {"policy.critic", "critics.1"}
    assert _grads(alg, out["loss_actor"]) == {"policy.actor_perturbation"}
    # the stored env actions are mapped back to raw [-1, 1] actions for the VAE
    torch.testing.assert_close(alg.act_of(td), td["action"] / 2.0)


def test_torchrl_policy_writes_env_range_actions() -> None:
    alg = _bcq()
    alg.set_keys(observation="observation", action="action")
    td = TensorDict({"observation": torch.randn(5, 3)}, [5])
    alg.policy(td)
    assert td["action"].shape == (5, 2) and bool((td["action"].abs() <= 2.0).all())
    single = alg.policy(TensorDict({"observation": torch.randn(3)}, []))
    assert single["action"].shape == (2,)


# -- bad input ----------------------------------------------------------------------------
def test_argument_errors() -> None:
    vae, critic, xi = VAE(3, 2, (8,)), QCritic(3, 2, (8,)), Perturbation(3, 2, (8,))
    with pytest.raises(ValueError, match="action_space: expected Box, got Discrete"):
        BCQPolicy(
            actor_perturbation=xi, critic=critic, vae=vae, action_space=gym.spaces.Discrete(2)
        )
    with pytest.raises(ValueError, match="forward_sampled_times: expected an int >= 1, got 0"):
        BCQPolicy(
            actor_perturbation=xi,
            critic=critic,
            vae=vae,
            action_space=SPACE,
            forward_sampled_times=0,
        )
    policy = BCQPolicy(actor_perturbation=xi, critic=critic, vae=vae, action_space=SPACE)
    with pytest.raises(ValueError, match=r"lmbda: expected a value in \[0, 1\], got 1.5"):
        BCQ(policy=policy, lmbda=1.5)
    with pytest.raises(ValueError, match="num_sampled_action: expected an int >= 1, got 0"):
        BCQ(policy=policy, num_sampled_action=0)
    with pytest.raises(ValueError, match="policy: expected a BCQPolicy, got DQNPolicy"):
        from tdrl.algorithm.modelfree.dqn import DQNPolicy

        BCQ(policy=DQNPolicy(model=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"phi: expected a value >= 0, got -0\.1"):
        Perturbation(3, 2, phi=-0.1)
    with pytest.raises(ValueError, match="latent_dim: expected an int >= 1, got 0"):
        VAE(3, 2, (8,), latent_dim=0)
    with pytest.raises(ValueError, match="max_action: expected a value > 0, got 0"):
        VAE(3, 2, (8,), max_action=0)


# -- Tianshou 2.0.1 -----------------------------------------------------------------------
class _TupleOut(torch.nn.Module):
    """Tianshou's ``Perturbation`` reads ``preprocess_net(x)[0]``: give it ``(out, None)`` so
    it perturbs each sample by its own output (a plain net's row 0 would be used for all)."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.net(x), None


class _PerturbedTarget(torch.nn.Module):
    """Tianshou's target critic evaluated at ``xi'(s', a')``: the paper's BCQ target."""

    def __init__(self, critic: torch.nn.Module, actor: torch.nn.Module) -> None:
        super().__init__()
        self.critic, self.actor = critic, actor

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.critic(obs, self.actor(obs, act))  # type: ignore[no-any-return]


def test_update_matches_tianshou_exactly() -> None:
    """Identical weights, batches and random draws: losses to 1e-5 and every parameter
    (online and target) after 3 updates.

    Deliberate differences made equal here (docs/differences.md): Tianshou bootstraps from
    the unperturbed ``G(s')`` (its target critics are routed through its target actor
    below), its ``Perturbation`` uses row 0 of a plain network's output (the network here
    returns Tianshou's ``(output, state)``), and it cuts the target at every ``done`` (the
    data has no truncations)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import BCQ as TBCQ
    from tianshou.algorithm.imitation.bcq import BCQPolicy as TBCQPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.net.continuous import VAE as TVAE
    from tianshou.utils.net.continuous import Perturbation as TPerturbation
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    ours = _bcq(tau=0.1, lmbda=0.7, num_sampled_action=5, critic2=QCritic(3, 2, (16,)))
    xi: Any = ours.policy.actor_perturbation
    c1, c2 = ours.critics[0], ours.critics[1]
    vae = ours.policy.vae
    peer_vae = TVAE(
        encoder=copy.deepcopy(vae.encoder),
        decoder=copy.deepcopy(vae.decoder),
        hidden_dim=16,
        latent_dim=4,
        max_action=1.0,
    )
    peer_vae.load_state_dict(vae.state_dict())
    peer_xi = TPerturbation(
        preprocess_net=_TupleOut(copy.deepcopy(xi.net)), max_action=1.0, phi=0.3
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TBCQ(
        policy=TBCQPolicy(
            actor_perturbation=peer_xi,
            critic=copy.deepcopy(c1),
            vae=peer_vae,
            action_space=SPACE,
            forward_sampled_times=8,
        ),
        actor_perturbation_optim=adam,
        critic_optim=adam,
        vae_optim=adam,
        critic2=copy.deepcopy(c2),
        tau=0.1,
        lmbda=0.7,
        num_sampled_action=5,
    )
    target: Any = peer.actor_perturbation_target
    peer.critic_target = _PerturbedTarget(peer.critic_target, target)  # type: ignore[assignment]
    peer.critic2_target = _PerturbedTarget(peer.critic2_target, target)  # type: ignore[assignment]

    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d = _data(rng, 3, truncate=False)
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(3):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        torch.manual_seed(10 + step)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
        torch.manual_seed(10 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            exp = peer._update_with_batch(peer._preprocess_batch(b_peer[idx], b_peer, idx))
        assert got["loss_vae"] == pytest.approx(exp.vae_loss, rel=1e-5, abs=1e-6), step
        exp_critic = exp.critic1_loss + exp.critic2_loss
        assert got["loss_qvalue"] == pytest.approx(exp_critic, rel=1e-5, abs=1e-6), step
        assert got["loss_actor"] == pytest.approx(exp.actor_loss, rel=1e-5, abs=1e-6), step
    pairs: list[tuple[Any, Any]] = [
        (ours.policy.vae, peer.policy.vae),
        (ours.policy.actor_perturbation, peer.policy.actor_perturbation),
        (ours.critics[0], peer.policy.critic),
        (ours.critics[1], peer.critic2),
        (ours.actor_perturbation_old, peer.actor_perturbation_target),
        (ours.critic1_old, peer.critic_target.critic),
        (ours.critic2_old, peer.critic2_target.critic),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)
    # acting: the same candidates (8 x latent 4 draws: whole blocks of torch's normal
    # sampler, so Tianshou's per-state draws equal tdrl's one batched draw)
    obs = rng.normal(size=(4, 3)).astype(np.float32)
    torch.manual_seed(7)
    act = ours.policy(make_batch({"obs": torch.as_tensor(obs)}, 4))["act"]
    torch.manual_seed(7)
    peer_act = peer.policy(TBatch(obs=obs, info={})).act
    np.testing.assert_allclose(act.detach().numpy(), peer_act, atol=1e-5, rtol=1e-5)


# -- convergence --------------------------------------------------------------------------
@pytest.mark.slow
def test_bcq_reaches_threshold_on_pendulum_data(tmp_path: Any, pendulum_dataset: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="bcq",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=str(pendulum_dataset),
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -400.0
