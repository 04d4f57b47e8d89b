"""REDQ: critic ensemble, random-subset targets, delayed actor, auto-alpha."""

from __future__ import annotations

import copy
import io
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import within_training_step
from tdrl.algorithm.modelfree.redq import REDQ
from tdrl.algorithm.modelfree.sac import AutoAlpha, SACPolicy
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


def _redq(alpha: float | AutoAlpha = 0.2, **kw) -> REDQ:
    torch.manual_seed(0)
    kw = {"ensemble_size": 4, "subset_size": 2, "actor_delay": 1, **kw}
    policy = SACPolicy(actor=GaussianActor(3, 2, (16,)), action_space=SPACE)
    return REDQ(policy=policy, critic=QCritic(3, 2, (16,)), alpha=alpha, **kw)


def _flat(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


# ------------------------------------------------------------------------- construction
def test_one_critic_becomes_an_ensemble_of_fresh_copies() -> None:
    alg = _redq(ensemble_size=5)
    assert len(alg.critics) == len(alg.critics_old) == 5
    flats = [_flat(c) for c in alg.critics]
    assert all(not torch.equal(flats[0], f) for f in flats[1:])  # independent weights
    for online, target in zip(alg.critics, alg.critics_old):
        assert torch.equal(_flat(online), _flat(target))  # targets start as copies


def test_given_critics_are_used_as_they_are() -> None:
    critics = [QCritic(3, 2, (8,)) for _ in range(3)]
    policy = SACPolicy(actor=GaussianActor(3, 2, (8,)), action_space=SPACE)
    alg = REDQ(policy=policy, critic=critics, ensemble_size=3, subset_size=3)
    assert all(a is b for a, b in zip(alg.critics, critics))


def test_argument_errors() -> None:
    policy = SACPolicy(actor=GaussianActor(3, 2, (4,)), action_space=SPACE)
    critic = QCritic(3, 2, (4,))
    with pytest.raises(
        ValueError, match=r"subset_size: expected an int in \[1, ensemble_size=3\], got 4"
    ):
        REDQ(policy=policy, critic=critic, ensemble_size=3, subset_size=4)
    with pytest.raises(ValueError, match=r"subset_size: expected .* got 0"):
        REDQ(policy=policy, critic=critic, ensemble_size=3, subset_size=0)
    with pytest.raises(ValueError, match="target_mode: expected 'min' or 'mean', got 'max'"):
        REDQ(policy=policy, critic=critic, target_mode="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="actor_delay: expected an int >= 1, got 0"):
        REDQ(policy=policy, critic=critic, actor_delay=0)
    with pytest.raises(ValueError, match="ensemble_size: expected an int >= 1, got 0"):
        REDQ(policy=policy, critic=critic, ensemble_size=0)
    with pytest.raises(
        ValueError, match="critic: expected one critic or ensemble_size=4 critics, got 2"
    ):
        REDQ(policy=policy, critic=[critic, QCritic(3, 2, (4,))], ensemble_size=4)
    with pytest.raises(ValueError, match=r"tau: expected a value in \[0, 1\], got 2"):
        REDQ(policy=policy, critic=critic, tau=2)
    from tdrl.algorithm.modelfree.discrete_sac import DiscreteSACPolicy

    discrete = DiscreteSACPolicy(actor=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match="policy: expected a SACPolicy, got DiscreteSACPolicy"):
        REDQ(policy=discrete, critic=critic)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ the subsets
def test_subsets_are_distinct_uniform_and_seedable() -> None:
    alg = _redq(ensemble_size=5, subset_size=3)
    draws = [alg.draw_subset() for _ in range(2000)]
    assert all(len(set(d.tolist())) == 3 and d.min() >= 0 and d.max() < 5 for d in draws)
    counts = torch.bincount(torch.cat(draws), minlength=5).float() / 2000
    torch.testing.assert_close(counts, torch.full((5,), 0.6), atol=0.05, rtol=0)
    torch.manual_seed(7)  # the default generator is torch's global one
    first = [alg.draw_subset() for _ in range(5)]
    torch.manual_seed(7)
    assert all(torch.equal(a, alg.draw_subset()) for a in first)
    gen = torch.Generator().manual_seed(3)
    own = _redq(generator=gen)
    gen.manual_seed(3)
    a = own.draw_subset()
    gen.manual_seed(3)
    assert torch.equal(a, own.draw_subset())


@pytest.mark.parametrize("mode", ["min", "mean"])
def test_target_aggregates_the_drawn_subset_of_target_critics(mode: str) -> None:
    alg = _redq(alpha=0.3, gamma=0.9, target_mode=mode)
    with torch.no_grad():  # make the target critics differ from each other and the online
        for j, params in enumerate(alg.critics_old):
            for p in params.parameters():
                p.add_(0.1 * (j + 1))
    buf = _buffer()
    idx = np.array([0, 5, 9])
    drawn: list[torch.Tensor] = []
    draw = alg.draw_subset

    def record() -> torch.Tensor:
        drawn.append(draw())
        return drawn[-1]

    alg.draw_subset = record  # type: ignore[method-assign]
    with within_training_step(alg.policy):
        torch.manual_seed(3)
        q = alg._target_q(buf, idx)
        torch.manual_seed(3)
        obs_next = buf[idx]["obs_next"]
        a, logp, _, _ = alg.policy.sample(obs_next)
        qs = torch.stack([alg.critics_old[j](obs_next, a).reshape(-1) for j in drawn[0]])
    agg = qs.min(0).values if mode == "min" else qs.mean(0)
    torch.testing.assert_close(q, agg - 0.3 * logp)


def test_critic_loss_is_the_ensemble_mean_and_td_error_its_mean() -> None:
    alg = _redq()
    buf = _buffer()
    idx = np.arange(10)
    with within_training_step(alg.policy):
        batch = alg.preprocess(buf[idx], buf, idx)
    loss = alg.critic_losses(batch)["loss_qvalue"]
    qs = torch.stack([c(batch["obs"], batch["act"]).reshape(-1) for c in alg.critics])
    td = qs - batch["returns"].reshape(-1)
    torch.testing.assert_close(loss, td.pow(2).mean())
    torch.testing.assert_close(batch["td_error"], td.mean(0).detach())


def test_actor_loss_uses_the_ensemble_mean() -> None:
    alg = _redq(alpha=0.5)
    obs = torch.randn(6, 3)
    td = TensorDict({"obs": obs}, [6])
    with within_training_step(alg.policy):
        torch.manual_seed(1)
        out = alg.actor_losses(td)
        torch.manual_seed(1)
        a, logp, _, _ = alg.policy.sample(obs)
    q = torch.stack([c(obs, a).reshape(-1) for c in alg.critics]).mean(0)
    torch.testing.assert_close(out["loss_actor"], (0.5 * logp - q).mean())


def test_actor_and_alpha_step_every_actor_delay_critic_steps() -> None:
    alg = _redq(alpha=AutoAlpha(-2.0), actor_delay=3)
    buf = _buffer()
    actor, critic = _flat(alg.policy.actor), _flat(alg.critics)
    log_alpha = alg.auto_alpha.log_alpha.item()  # type: ignore[union-attr]
    logs = []
    for step in range(1, 7):
        logs.append(alg.update(buf, 8))
        moved = not torch.equal(actor, _flat(alg.policy.actor))
        assert moved == (step % 3 == 0), step
        assert not torch.equal(critic, _flat(alg.critics))  # the critics move every step
        assert (alg.auto_alpha.log_alpha.item() != log_alpha) == (step % 3 == 0)  # type: ignore[union-attr]
        actor, critic = _flat(alg.policy.actor), _flat(alg.critics)
        log_alpha = alg.auto_alpha.log_alpha.item()  # type: ignore[union-attr]
    assert alg._stage_calls == 6
    assert "loss_actor" not in logs[0] and "loss_actor" not in logs[1]
    assert logs[3]["loss_actor"] == logs[4]["loss_actor"] == logs[2]["loss_actor"]
    assert logs[5]["loss_actor"] != logs[2]["loss_actor"]


def test_auto_target_entropy_is_minus_action_dim() -> None:
    alg = _redq(alpha=AutoAlpha("auto"))
    assert alg.auto_alpha is not None and alg.auto_alpha.target_entropy == -2.0


def test_prioritized_td_error_written_back() -> None:
    alg = _redq()
    buf = _buffer(FakePrioBuffer(64, 2))
    alg.update(buf, 10)
    ((idx, written),) = buf.updates
    assert idx.shape == (10,) and written.shape == (10,) and bool((written >= 0).all())


def test_state_dict_round_trip_keeps_the_actor_schedule() -> None:
    buf = _buffer()
    a = _redq(alpha=AutoAlpha(), actor_delay=3)
    for _ in range(2):
        a.update(buf, 16)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _redq(alpha=AutoAlpha(), actor_delay=3)
    b.load_state_dict(torch.load(f, weights_only=False))
    assert b._stage_calls == 2 and len(b.state_dict()["_optimizers"]) == 3
    obs, act = torch.randn(4, 3), torch.randn(4, 2)
    for ca, cb in zip(a.critics_old, b.critics_old):
        torch.testing.assert_close(cb(obs, act), ca(obs, act))
    idx = np.arange(6)
    with within_training_step(a.policy), within_training_step(b.policy):
        torch.manual_seed(5)
        sa = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 6, 1)
        torch.manual_seed(5)
        sb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 6, 1)
    assert "loss_actor" in sa and sa == pytest.approx(sb)  # the third step: an actor step


# ------------------------------------------------------------------------- TorchRL layout
def _torchrl_batch(n: int) -> TensorDict:
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


def test_torchrl_batch_terms_reach_only_their_parameters() -> None:
    loss = _redq(alpha=AutoAlpha(), actor_delay=5)
    loss.set_keys(observation="observation", action="action")
    td = _torchrl_batch(16)
    out = loss(td)
    assert {"loss_qvalue", "loss_actor", "loss_alpha", "entropy", "alpha"} == set(out.keys())
    q, actor, alpha = (_grads(loss, out[k]) for k in ("loss_qvalue", "loss_actor", "loss_alpha"))
    assert {n.split(".")[1] for n in q} == {"0", "1", "2", "3"}  # every critic of the ensemble
    assert all(n.startswith("critics.") for n in q)
    assert actor and all(n.startswith("policy.actor.") for n in actor)
    assert alpha == {"auto_alpha.log_alpha"}
    # the one-step target: r + gamma (1 - terminated) V'(s'), V' from a random subset
    term = td["next", "terminated"].reshape(-1)
    torch.testing.assert_close(td["returns"][term], td["next", "reward"].reshape(-1)[term])
    # a plain TorchRL training step works on the sum of the terms
    opt = torch.optim.Adam(loss.parameters(), lr=1e-3)
    out = loss(_torchrl_batch(16))
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    total.backward()
    opt.step()


# ------------------------------------------------------------------------------- oracle
class _SharedActor(torch.nn.Module):
    """A state-dependent Gaussian actor both libraries accept: ``((loc, scale), None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = GaussianActor(3, 2, (16,))

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = QCritic(3, 2, (16,))

    def forward(self, obs, act):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs), torch.as_tensor(act))


class _Ensemble(torch.nn.Module):
    """Tianshou's ensemble-critic contract: ``(obs, act) -> [N, B, 1]``."""

    def __init__(self, members: list[torch.nn.Module]) -> None:
        super().__init__()
        self.members = torch.nn.ModuleList(members)

    def forward(self, obs, act):  # type: ignore[no-untyped-def]
        return torch.stack([m(obs, act) for m in self.members])


@pytest.mark.parametrize("target_mode", ["min", "mean"])
def test_update_matches_tianshou_exactly(
    target_mode: Literal["min", "mean"], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same weights, buffer, indices, subsets and action noise: same n-step targets,
    losses and parameters as Tianshou's REDQ over 6 updates (actor every 2nd, auto-alpha).

    Deliberate difference: Tianshou draws the subset with ``np.random.choice``; tdrl
    draws it from torch's generator. The test hands tdrl's subsets to Tianshou.
    """
    pytest.importorskip("tianshou")
    from tianshou.algorithm import REDQ as TREDQ
    from tianshou.algorithm.modelfree.redq import REDQPolicy as TREDQPolicy
    from tianshou.algorithm.modelfree.sac import AutoAlpha as TAutoAlpha
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    n = 4
    torch.manual_seed(0)
    actor = _SharedActor()
    critics: list[torch.nn.Module] = [_SharedCritic() for _ in range(n)]
    common: dict[str, Any] = dict(
        ensemble_size=n, subset_size=2, tau=0.1, gamma=0.95, actor_delay=2
    )
    ours = REDQ(
        policy=SACPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        critic=copy.deepcopy(critics),
        alpha=AutoAlpha(-2.0, log_alpha=-1.0, optim=1e-2),
        n_step=2,
        target_mode=target_mode,
        **common,
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TREDQ(
        policy=TREDQPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
        policy_optim=adam,
        critic=_Ensemble(copy.deepcopy(critics)),
        critic_optim=adam,
        alpha=TAutoAlpha(-2.0, -1.0, AdamOptimizerFactory(lr=1e-2)),
        n_step_return_horizon=2,
        target_mode=target_mode,
        **common,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 3)).astype(np.float32),
            act=rng.uniform(-1, 1, size=(3, 2)).astype(np.float32),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 3)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    drawn: list[np.ndarray] = []
    draw = ours.draw_subset

    def record() -> torch.Tensor:
        drawn.append(draw().numpy())
        return torch.as_tensor(drawn[-1])

    monkeypatch.setattr(ours, "draw_subset", record)
    monkeypatch.setattr(np.random, "choice", lambda *a, **k: drawn[-1])
    for step in range(6):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        torch.manual_seed(100 + step)  # the same action noise for both targets
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
        torch.manual_seed(100 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            peer_batch = peer._preprocess_batch(b_peer[idx], b_peer, idx)
        torch.testing.assert_close(
            batch["returns"].reshape(-1), peer_batch.returns.reshape(-1), atol=1e-5, rtol=1e-5
        )
        torch.manual_seed(200 + step)  # and for the actor steps
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        torch.manual_seed(200 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            expected: Any = peer._update_with_batch(peer_batch)
        assert got["loss_qvalue"] == pytest.approx(expected.critic_loss, rel=1e-5, abs=1e-6), step
        if step % 2 == 1:  # an actor (and alpha) step
            assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6), step
            assert got["loss_alpha"] == pytest.approx(expected.alpha_loss, rel=1e-5, abs=1e-6), step
        assert ours.alpha == pytest.approx(expected.alpha, rel=1e-6), step
    assert len(drawn) == 6
    pairs = [
        (list(ours.policy.actor.parameters()), list(peer.policy.actor.parameters())),
        (list(ours.critics.parameters()), list(peer.critic.parameters())),
        ([p for c in ours.critics_old for p in c.parameters()], list(peer.critic_old.parameters())),
    ]
    for mine, theirs in pairs:
        for p_ours, p_peer in zip(mine, theirs, strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------- preset
def test_preset_is_registered_and_builds() -> None:
    from tdrl import registry
    from tdrl.algorithm.presets import make_algorithm
    from tdrl.presets.redq import REDQPreset

    p = registry.preset("redq")
    assert isinstance(p, REDQPreset) and p.task == "Pendulum-v1" and p.threshold == -250.0
    e = registry.entry("redq", "Pendulum-v1")
    assert (e.trainer, e.exploration_noise, e.action_space) == ("offpolicy", False, "continuous")
    alg = make_algorithm("redq", "Pendulum-v1")
    assert isinstance(alg, REDQ) and len(alg.critics) == p.ensemble_size
    assert alg.subset_size == p.subset_size and alg.actor_delay == p.actor_delay
    assert alg.auto_alpha is not None and alg.auto_alpha.target_entropy == -1.0
    with pytest.raises(registry.PresetError, match="redq needs a Box action space"):
        make_algorithm("redq", "CartPole-v1")


def test_preset_field_errors() -> None:
    from tdrl import registry

    with pytest.raises(registry.PresetError, match="'ensemble_size': expected an int >= 1, got 0"):
        registry.preset("redq", ensemble_size=0)
    with pytest.raises(registry.PresetError, match="'target_mode': expected a str 'min' or"):
        registry.preset("redq", target_mode="median")
    with pytest.raises(registry.PresetError, match=r"'subset_size': expected .*=4\], got 6"):
        registry.preset("redq", subset_size=6)


# -------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_preset_reaches_pendulum_threshold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="redq",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -250.0
