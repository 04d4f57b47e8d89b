"""CQL: conservative penalty on SAC, Lagrangian alpha', Cal-QL bound; Tianshou oracle."""

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

from tdrl.algorithm.base import within_training_step
from tdrl.algorithm.imitation.cql import CQL, AutoAlpha, SACPolicy
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import GaussianActor, QCritic

SPACE = gym.spaces.Box(-2.0, 2.0, (2,))


def _cql(alpha: float | AutoAlpha = 0.2, **kw: Any) -> CQL:
    torch.manual_seed(0)
    policy = SACPolicy(actor=GaussianActor(3, 2, (16,)), action_space=SPACE)
    return CQL(policy=policy, critic=QCritic(3, 2, (16,)), alpha=alpha, **kw)


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
def _penalty_by_hand(alg: CQL, td: Batch, seed: int) -> list[torch.Tensor]:
    """The CQL(H) penalty of each critic from the paper's formula, state by state."""
    torch.manual_seed(seed)
    obs, act, obs_next = td["obs"], td["act"], td["obs_next"]
    b, r, d = obs.shape[0], alg.num_repeat_actions, act.shape[1]
    uniform = torch.empty(b * r, d).uniform_(alg.min_action, alg.max_action)
    s = obs.repeat_interleave(r, 0)
    a_cur, lp_cur, _, _ = alg.policy.sample(s)
    a_next, lp_next, _, _ = alg.policy.sample(obs_next.repeat_interleave(r, 0))
    log_u = -d * math.log(alg.max_action - alg.min_action)
    out = []
    for critic in alg.critics:
        per_state = []
        for i in range(b):
            rows = slice(i * r, (i + 1) * r)
            vals = torch.cat(
                [
                    critic(s[rows], uniform[rows]).reshape(-1) - log_u,
                    critic(s[rows], a_cur[rows]).reshape(-1) - lp_cur[rows],
                    critic(s[rows], a_next[rows]).reshape(-1) - lp_next[rows],
                ]
            )
            if alg.calibrated:
                vals = torch.clamp(vals, min=float(td["calibration_returns"][i]))
            t = alg.temperature
            per_state.append(t * torch.log(torch.exp(vals / t).sum()))
        q_data = critic(obs, act).mean()
        out.append(alg.cql_weight * (torch.stack(per_state).mean() - q_data))
    return out


@pytest.mark.parametrize("calibrated", [False, True])
def test_penalty_is_a_per_state_logsumexp_over_3r_proposals(calibrated: bool) -> None:
    alg = _cql(
        num_repeat_actions=3,
        with_lagrange=False,
        cql_weight=2.0,
        temperature=0.7,
        calibrated=calibrated,
        min_action=-1.5,
        max_action=0.5,
    )
    buf = _buffer()
    idx = buf.sample_indices(0)[:5]
    with within_training_step(alg.policy):
        td = alg.preprocess(buf[idx], buf, idx)
        torch.manual_seed(4)
        got = alg.conservative_losses(td)
        expected = _penalty_by_hand(alg, td, 4)
    torch.testing.assert_close(got["loss_cql"], sum(expected))
    torch.testing.assert_close(got["cql_penalty"], sum(expected) / 2)
    assert "loss_cql_alpha" not in got


def test_lagrangian_scales_the_gap_and_trains_log_alpha_prime_only() -> None:
    alg = _cql(num_repeat_actions=2, lagrange_threshold=3.0, alpha_max=0.5)
    with torch.no_grad():
        alg.cql_log_alpha.fill_(math.log(0.8))  # clipped to alpha_max
    assert alg.cql_alpha == pytest.approx(0.5)
    buf = _buffer()
    idx = buf.sample_indices(0)[:6]
    with within_training_step(alg.policy):
        td = alg.preprocess(buf[idx], buf, idx)
        torch.manual_seed(1)
        got = alg.conservative_losses(td)
        expected = _penalty_by_hand(alg, td, 1)
    gap = torch.stack(expected).sum() - 2 * 3.0
    torch.testing.assert_close(got["loss_cql"], 0.5 * gap)
    torch.testing.assert_close(got["loss_cql_alpha"], -0.25 * gap.detach())
    # alpha' clipped at alpha_max: no gradient reaches log alpha'
    (g,) = torch.autograd.grad(got["loss_cql_alpha"], [alg.cql_log_alpha])
    assert float(g) == 0.0


def test_calibration_returns_are_discounted_monte_carlo_returns() -> None:
    alg = _cql(gamma=0.9)
    buf = _buffer()
    alg.process_buffer(buf)
    idx = buf.sample_indices(0)
    expected, _ = compute_episodic_return(buf[idx], buf, idx, gamma=0.9, gae_lambda=1.0)
    with within_training_step(alg.policy):
        td = alg.preprocess(buf[idx[::3]], buf, idx[::3])
    torch.testing.assert_close(td["calibration_returns"], expected[::3].float())
    assert "returns" not in td  # computed in the critic stage, after the actor step
    # an episode that ends: G(s_t) = r_t + 0.9 G(s_{t+1})
    b = buf[idx]
    t = int(np.flatnonzero(~(b["terminated"] | b["truncated"]).numpy())[0])
    if int(idx[t + 1]) == int(buf.next(idx[t])):
        assert float(expected[t]) == pytest.approx(float(b["rew"][t] + 0.9 * expected[t + 1]))


def test_target_uses_the_actor_after_its_step_and_masks_termination_only() -> None:
    alg = _cql(gamma=0.9, alpha=AutoAlpha(log_alpha=-1.0, optim=0.1))
    buf = _buffer()
    idx = buf.sample_indices(0)
    with within_training_step(alg.policy):
        td = alg.preprocess(buf[idx], buf, idx)
        torch.manual_seed(2)
        stats = alg._update_with_batch(td, len(idx), 1)
    assert stats["alpha"] == pytest.approx(math.exp(-1.0))  # the value the actor step used
    assert alg.alpha != pytest.approx(math.exp(-1.0))
    # the target in td was computed with the moved actor and alpha: recompute it
    torch.manual_seed(2)
    with within_training_step(alg.policy):
        alg.policy.sample(td["obs"])  # the actor step's draw
        v = alg.next_value(td["obs_next"])
    # (the critics moved since; the target critics only by tau, so compare loosely)
    term = td["terminated"].float()
    torch.testing.assert_close(td["returns"], td["rew"] + 0.9 * (1 - term) * v, atol=0.05, rtol=0)
    assert bool(td["truncated"].any())


def test_each_critic_is_clipped_on_its_own() -> None:
    alg = _cql(max_grad_norm=1e-3, with_lagrange=False)
    buf = _buffer()
    idx = buf.sample_indices(0)
    with within_training_step(alg.policy):
        td = alg.preprocess(buf[idx], buf, idx)
        torch.manual_seed(3)
        alg._run_stages(td)
    for critic in alg.critics:
        grads = [p.grad for p in critic.parameters() if p.grad is not None]
        norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
        assert float(norm) == pytest.approx(1e-3, rel=1e-3)


def test_update_trains_every_group() -> None:
    alg = _cql(alpha=AutoAlpha())
    buf = _buffer()
    before = {n: p.detach().clone() for n, p in alg.named_parameters()}
    stats = alg.update(buf, 16)
    keys = {"loss_actor", "loss_alpha", "loss_qvalue", "loss_cql", "loss_cql_alpha", "cql_alpha"}
    assert keys <= set(stats) and all(np.isfinite(v) for v in stats.values())
    for name, p in alg.named_parameters():
        assert not torch.equal(p, before[name]), name


def test_state_dict_round_trip() -> None:
    buf = _buffer()
    a = _cql(alpha=AutoAlpha())
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _cql(alpha=AutoAlpha())
    b.load_state_dict(torch.load(f, weights_only=False))
    assert len(b.state_dict()["_optimizers"]) == 4
    assert b.cql_alpha == pytest.approx(a.cql_alpha) and b.alpha == pytest.approx(a.alpha)
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        torch.manual_seed(5)
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        torch.manual_seed(5)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert sa == pytest.approx(sb)


# -- TorchRL layout ------------------------------------------------------------------------
def test_torchrl_batch_terms_reach_only_their_parameters() -> None:
    alg = _cql(alpha=AutoAlpha())
    alg.set_keys(observation="observation", action="action")
    td = _torchrl_batch()
    out = alg(td)  # no calibration_returns in a TorchRL batch: the plain penalty
    keys = {"loss_actor", "loss_alpha", "loss_qvalue", "loss_cql", "loss_cql_alpha"}
    assert keys <= set(out.keys()) and td["returns"].shape == (8,)
    critics = {"critics.0", "critics.1"}
    assert _grads(alg, out["loss_actor"]) == {"policy.actor"}
    assert _grads(alg, out["loss_alpha"]) == {"auto_alpha.log_alpha"}
    assert _grads(alg, out["loss_qvalue"]) == critics
    assert _grads(alg, out["loss_cql"]) == critics
    assert _grads(alg, out["loss_cql_alpha"]) == {"cql_log_alpha"}
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    assert torch.isfinite(total)


# -- bad input ----------------------------------------------------------------------------
def test_argument_errors() -> None:
    policy = SACPolicy(actor=GaussianActor(3, 2, (4,)), action_space=SPACE)
    critic = QCritic(3, 2, (4,))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"cql_weight": -1.0}, "cql_weight: expected a value >= 0, got -1.0"),
        ({"temperature": 0.0}, "temperature: expected a value > 0, got 0.0"),
        ({"min_action": 1.0}, "max_action: expected a value > min_action = 1.0, got 1.0"),
        ({"num_repeat_actions": 0}, "num_repeat_actions: expected an int >= 1, got 0"),
        ({"alpha_min": 2.0, "alpha_max": 1.0}, "alpha_max: expected 0 <= alpha_min <= alpha_max"),
        ({"max_grad_norm": 0.0}, "max_grad_norm: expected a value > 0 or None, got 0.0"),
        ({"tau": 2.0}, "tau: expected a value in \\[0, 1\\], got 2.0"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            CQL(policy=policy, critic=critic, **kwargs)


# -- Tianshou 2.0.1 -----------------------------------------------------------------------
class _SharedActor(torch.nn.Module):
    """A Gaussian actor both libraries accept: ``((loc, scale), None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = GaussianActor(3, 2, (16,))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> Any:
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


@pytest.mark.parametrize(
    ("with_lagrange", "auto_alpha", "max_grad_norm"),
    [(True, True, 1.0), (True, False, 0.05), (False, True, None)],
)
def test_update_matches_tianshou_exactly(
    with_lagrange: bool, auto_alpha: bool, max_grad_norm: float | None
) -> None:
    """Identical weights, batches and random draws (seeded before each side's update):
    losses to 1e-5 and every parameter after 3 updates, with the Cal-QL bound on.

    Deliberate differences made equal here (docs/differences.md): one proposal per
    proposal kind (``R = 1``: Tianshou's log-sum-exp over 3 values per (state, repeat) pair
    is then the per-state one), Tianshou's ``min_action=+1`` so that its
    ``uniform_(-min_action, max_action)`` draws from ``[-1, 1]`` as tdrl's ``[-1, 1]`` does,
    and no truncations (Tianshou cuts the target at every ``done``)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import CQL as TCQL
    from tianshou.algorithm.modelfree.sac import AutoAlpha as TAutoAlpha
    from tianshou.algorithm.modelfree.sac import SACPolicy as TSACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    actor, c1, c2 = _SharedActor(), QCritic(3, 2, (16,)), QCritic(3, 2, (16,))
    common: dict[str, Any] = dict(
        cql_weight=1.5,
        tau=0.1,
        gamma=0.9,
        temperature=0.8,
        with_lagrange=with_lagrange,
        lagrange_threshold=0.5,
        max_action=1.0,
        num_repeat_actions=1,
        max_grad_norm=max_grad_norm,
        calibrated=True,
    )
    ours = CQL(
        policy=SACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        critic=copy.deepcopy(c1),
        critic2=copy.deepcopy(c2),
        alpha=AutoAlpha(-2.0, log_alpha=-0.5, optim=3e-3) if auto_alpha else 0.3,
        cql_alpha_lr=3e-3,
        min_action=-1.0,
        **common,
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TCQL(
        policy=TSACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=adam,
        critic=copy.deepcopy(c1),
        critic_optim=adam,
        critic2=copy.deepcopy(c2),
        alpha=TAutoAlpha(-2.0, -0.5, AdamOptimizerFactory(lr=3e-3)) if auto_alpha else 0.3,
        cql_alpha_lr=3e-3,
        min_action=1.0,  # Tianshou draws from [-min_action, max_action]
        **{k: (1e9 if k == "max_grad_norm" and v is None else v) for k, v in common.items()},  # type: ignore[arg-type]
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(20):  # exactly full: Tianshou's calibration returns align with indices
        d = _data(rng, 3, truncate=False)
        d["rew"] = d["rew"] * 3.0  # some Monte-Carlo returns above the proposals' values
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    ours.process_buffer(b_ours)
    peer.process_buffer(b_peer)
    clipped = 0
    for step in range(3):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        torch.manual_seed(10 + step)
        with within_training_step(ours.policy):
            td = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(td, 16, 1)
        torch.manual_seed(10 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            batch = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            exp = peer._update_with_batch(batch)
        np.testing.assert_allclose(td["calibration_returns"], batch.calibration_returns, rtol=1e-6)
        tol: dict[str, Any] = dict(rel=1e-5, abs=1e-5)
        assert got["loss_actor"] == pytest.approx(exp.actor_loss, **tol), step
        critic_total = got["loss_qvalue"] + got["loss_cql"]
        assert critic_total == pytest.approx(exp.critic1_loss + exp.critic2_loss, **tol), step
        if auto_alpha:
            assert got["loss_alpha"] == pytest.approx(exp.alpha_loss, **tol), step
        if with_lagrange:
            assert got["loss_cql_alpha"] == pytest.approx(exp.cql_alpha_loss, **tol), step
            assert got["cql_alpha"] == pytest.approx(exp.cql_alpha, **tol), step
        q = ours.critics[0](td["obs"], td["act"]).reshape(-1)
        clipped += int((q < td["calibration_returns"]).sum())
    assert clipped > 0  # the Cal-QL bound was active on some rows
    pairs: list[tuple[Any, Any]] = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critics[0], peer.critic),
        (ours.critics[1], peer.critic2),
        (ours.critic1_old, peer.critic_old),
        (ours.critic2_old, peer.critic2_old),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)
    assert ours.alpha == pytest.approx(peer.alpha.value, rel=1e-5)
    if with_lagrange:
        assert float(ours.cql_log_alpha.detach()) == pytest.approx(
            float(peer.cql_log_alpha.detach()), abs=1e-6
        )


# -- convergence --------------------------------------------------------------------------
@pytest.mark.slow
def test_cql_reaches_threshold_on_pendulum_data(tmp_path: Any, pendulum_dataset: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="cql",
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
