"""REINFORCE: Monte-Carlo returns, return standardization, the loss, TorchRL batches, Tianshou."""

from __future__ import annotations

import copy
import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.modelfree.reinforce import ActorPolicy, Reinforce
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DiscreteActor, GaussianActor


def _rollout(n_envs: int = 4, steps: int = 9, continuous: bool = False, seed: int = 0) -> dict:
    """Random transitions as a list of per-step dicts (episodes end at random)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(steps):
        act = (
            rng.normal(size=(n_envs, 2)).astype(np.float32)
            if continuous
            else rng.integers(0, 2, n_envs)
        )
        rows.append(
            dict(
                obs=rng.normal(size=(n_envs, 3)).astype(np.float32),
                act=act,
                rew=rng.normal(size=n_envs).astype(np.float32),
                terminated=rng.random(n_envs) < 0.15,
                truncated=rng.random(n_envs) < 0.1,
                obs_next=rng.normal(size=(n_envs, 3)).astype(np.float32),
            )
        )
    return {"rows": rows, "n_envs": n_envs}


def _buffer(data: dict) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(data["n_envs"] * 16, data["n_envs"])
    for row in data["rows"]:
        buf.add(Batch(**row))
    return buf


def _reinforce(**kw) -> Reinforce:
    torch.manual_seed(0)
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (8,)), action_space=gym.spaces.Discrete(2))
    return Reinforce(policy=policy, **kw)


def _episode_buffer(rews: list[float], ends: list[str]) -> VectorReplayBuffer:
    """One env; ``ends[t]`` is ``"term"``, ``"trunc"`` or ``""``."""
    buf = VectorReplayBuffer(32, 1)
    for r, e in zip(rews, ends):
        buf.add(
            Batch(
                obs=torch.zeros(1, 3),
                act=torch.zeros(1, dtype=torch.long),
                rew=torch.tensor([r]),
                terminated=torch.tensor([e == "term"]),
                truncated=torch.tensor([e == "trunc"]),
                obs_next=torch.zeros(1, 3),
            )
        )
    return buf


def test_returns_are_discounted_to_each_chain_end() -> None:
    # episode 1 terminates at t=1, episode 2 is truncated at t=3, episode 3 is unfinished
    buf = _episode_buffer([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], ["", "term", "", "trunc", "", ""])
    alg = _reinforce(gamma=0.5)
    idx = buf.sample_indices(0)
    ret = alg.preprocess(buf[idx], buf, idx)["returns"]
    expected = [1 + 0.5 * 2, 2, 3 + 0.5 * 4, 4, 5 + 0.5 * 6, 6]  # bootstrap: mean = 0
    torch.testing.assert_close(ret, torch.tensor(expected))
    assert ret.dtype == torch.float32


def test_return_standardization_uses_the_running_statistics_of_earlier_updates() -> None:
    buf = _episode_buffer([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], ["", "term", "", "trunc", "", ""])
    alg = _reinforce(gamma=0.5, return_standardization=True)
    idx = buf.sample_indices(0)
    g1 = torch.tensor([2.0, 2.0, 5.0, 4.0, 8.0, 6.0], dtype=torch.float64)
    # first update: mean 0, var 1 (nothing seen yet)
    first = alg.preprocess(buf[idx], buf, idx)["returns"]
    torch.testing.assert_close(first, (g1 / math.sqrt(1 + 1e-8)).float())
    assert alg.ret_rms.mean.item() == pytest.approx(g1.mean().item())
    assert alg.ret_rms.var.item() == pytest.approx(g1.var(unbiased=False).item())
    # second update: the truncated and the unfinished chains bootstrap with the mean
    m, s = g1.mean().item(), math.sqrt(g1.var(unbiased=False).item() + 1e-8)
    g2 = torch.tensor([2.0, 2.0, 5.0 + 0.25 * m, 4.0 + 0.5 * m, 8.0 + 0.25 * m, 6.0 + 0.5 * m])
    second = alg.preprocess(buf[idx], buf, idx)["returns"]
    torch.testing.assert_close(second, ((g2.double() - m) / s).float())
    assert int(alg.ret_rms.count) == 12
    assert "ret_rms.mean" in alg.state_dict()


def test_loss_is_minus_log_prob_times_return_and_trains_only_the_actor() -> None:
    actor = torch.nn.Linear(1, 2)
    with torch.no_grad():
        actor.weight.zero_()
        actor.bias.copy_(torch.tensor([0.0, math.log(3.0)]))  # pi = (1/4, 3/4)
    alg = Reinforce(policy=ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(2)))
    td = TensorDict(
        {
            "obs": torch.zeros(2, 1),
            "act": torch.tensor([0, 1]),
            "returns": torch.tensor([2.0, -1.0]),
        },
        [2],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_actor", "entropy"}
    expected = -(math.log(0.25) * 2.0 + math.log(0.75) * -1.0) / 2
    assert out["loss_actor"].item() == pytest.approx(expected, rel=1e-6)
    grads = torch.autograd.grad(out["loss_actor"], list(alg.parameters()), allow_unused=True)
    assert all(g is not None for g in grads)
    assert {n for n, _ in alg.named_parameters()} == {"policy.actor.weight", "policy.actor.bias"}


def test_per_dimension_distribution_averages_over_action_dimensions() -> None:
    def per_dim(loc_scale):  # a plain Normal: log_prob is [B, D]
        return torch.distributions.Normal(*loc_scale)

    torch.manual_seed(0)
    actor = GaussianActor(3, 2, (8,), state_dependent_std=False)
    space = gym.spaces.Box(-1.0, 1.0, (2,))
    alg = Reinforce(policy=ActorPolicy(actor=actor, action_space=space, dist_fn=per_dim))
    obs, act, ret = torch.randn(5, 3), torch.randn(5, 2), torch.randn(5)
    out = alg(TensorDict({"obs": obs, "act": act, "returns": ret}, [5]))
    lp = per_dim(actor(obs)).log_prob(act)  # [5, 2]
    torch.testing.assert_close(out["loss_actor"], -(lp * ret[:, None]).mean())


def test_update_runs_minibatch_epochs_and_changes_only_the_actor() -> None:
    buf = _buffer(_rollout())
    n = len(buf)  # 36
    alg = _reinforce(return_standardization=True)
    before = [p.detach().clone() for p in alg.parameters()]
    stats = alg.update(buf, batch_size=8, repeat=2)
    assert set(stats) == {"loss", "loss_actor", "entropy", "gradient_steps"}
    assert stats["gradient_steps"] == 2 * (n // 8)  # the short last minibatch is merged
    assert all(not torch.equal(a, b) for a, b in zip(before, alg.parameters()))
    assert not alg.policy.is_within_training_step
    assert alg.update(buf, batch_size=None, repeat=3)["gradient_steps"] == 3


def test_torchrl_batch_gets_reward_to_go_along_time() -> None:
    alg = _reinforce(gamma=0.5)
    alg.set_keys(observation="observation", action="action")
    n_envs, t = 2, 4
    rew = torch.ones(n_envs, t, 1)
    done = torch.zeros(n_envs, t, 1, dtype=torch.bool)
    done[0, 1] = True
    td = TensorDict(
        {
            "observation": torch.randn(n_envs, t, 3),
            "action": torch.randint(2, (n_envs, t)),
            "next": {"reward": rew, "done": done, "terminated": done.clone()},
        },
        [n_envs, t],
    )
    out = alg(td)
    expected = torch.tensor([[1.5, 1.0, 1.5, 1.0], [1.875, 1.75, 1.5, 1.0]])
    torch.testing.assert_close(td["returns"], expected)
    reached = torch.autograd.grad(out["loss_actor"], list(alg.parameters()), allow_unused=True)
    assert all(g is not None and g.abs().sum() > 0 for g in reached)
    # a TorchRL batch of one env's steps [T]
    flat = td[1]
    del flat["returns"]
    alg(flat)
    torch.testing.assert_close(flat["returns"], expected[1])


def test_torchrl_batch_missing_reward_names_the_key() -> None:
    alg = _reinforce()
    alg.set_keys(observation="observation", action="action")
    td = TensorDict({"observation": torch.randn(3, 3), "action": torch.zeros(3).long()}, [3])
    with pytest.raises(KeyError, match="the reward key"):
        alg(td)


def test_state_dict_round_trip() -> None:
    buf = _buffer(_rollout())
    a = _reinforce(return_standardization=True)
    a.update(buf, batch_size=12, repeat=2)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _reinforce(return_standardization=True)
    b.load_state_dict(torch.load(f, weights_only=False))
    obs = torch.randn(4, 3)
    torch.testing.assert_close(b.policy.actor(obs), a.policy.actor(obs))
    torch.testing.assert_close(b.ret_rms.mean, a.ret_rms.mean)
    assert b.optim.optim.state_dict()["state"].keys() == a.optim.optim.state_dict()["state"].keys()


def test_argument_errors() -> None:
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (4,)), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 1\.5"):
        Reinforce(policy=policy, gamma=1.5)
    with pytest.raises(ValueError, match=r"max_grad_norm: expected a value > 0 or None, got 0"):
        Reinforce(policy=policy, max_grad_norm=0)


# ---------------------------------------------------------------------------- Tianshou oracle
class _SharedActor(torch.nn.Module):
    """An actor both libraries accept: ``actor(obs, state=None, info=None) -> (out, None)``."""

    def __init__(self, continuous: bool) -> None:
        super().__init__()
        self.net: torch.nn.Module = (
            GaussianActor(3, 2, (16,), state_dependent_std=False, init_log_std=-0.3)
            if continuous
            else DiscreteActor(3, 2, (16,))
        )

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


def _per_dim_normal(loc_scale):  # type: ignore[no-untyped-def]
    return torch.distributions.Normal(*loc_scale)


@pytest.mark.parametrize("continuous", [False, True])
def test_update_matches_tianshou_exactly(continuous: bool, monkeypatch) -> None:
    """Three rollouts, each: returns (standardized with the running statistics), then two
    epochs of minibatches (the same permutations on both sides); losses, returns, running
    statistics and parameters agree. The continuous case uses a per-dimension ``Normal``."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import Reinforce as TReinforce
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step

    torch.manual_seed(0)
    actor = _SharedActor(continuous)
    if continuous:
        space: gym.Space = gym.spaces.Box(-1.0, 1.0, (2,))
        dist_fn = _per_dim_normal
    else:
        space = gym.spaces.Discrete(2)
        dist_fn = lambda logits: torch.distributions.Categorical(logits=logits)  # noqa: E731
    ours = Reinforce(
        policy=ActorPolicy(actor=copy.deepcopy(actor), action_space=space, dist_fn=dist_fn),
        optim=1e-2,
        gamma=0.9,
        return_standardization=True,
    )
    peer = TReinforce(
        policy=ProbabilisticActorPolicy(
            actor=copy.deepcopy(actor),  # type: ignore[arg-type]
            dist_fn=dist_fn,
            action_space=space,
            action_scaling=continuous,
            action_bound_method="clip" if continuous else None,
        ),
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.9,
        return_standardization=True,
    )
    # both sides shuffle minibatches with NumPy's global generator, seeded alike below
    monkeypatch.setattr(torch, "randperm", lambda n: torch.as_tensor(np.random.permutation(n)))
    for rollout in range(3):
        data = _rollout(steps=12, continuous=continuous, seed=rollout)
        b_ours, b_peer = _buffer(data), TVRB(64, 4)
        for row in data["rows"]:
            b_peer.add(TBatch(info={}, **row))
        idx = b_ours.sample_indices(0)
        np.testing.assert_array_equal(idx, b_peer.sample_indices(0))
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            np.random.seed(rollout)
            got = ours._update_with_batch(batch, 10, 2)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            np.random.seed(rollout)
            expected = peer._update_with_batch(tb, 10, 2)
        np.testing.assert_allclose(batch["returns"].numpy(), tb.returns, rtol=1e-6, atol=1e-6)
        rms = peer.discounted_return_computation.ret_rms
        assert ours.ret_rms.mean.item() == pytest.approx(float(rms.mean), rel=1e-12)
        assert ours.ret_rms.var.item() == pytest.approx(float(rms.var), rel=1e-12)
        assert got["gradient_steps"] == 2 * 4  # 48 transitions: 10, 10, 10, 18 per epoch
        assert got["loss_actor"] == pytest.approx(expected.loss.mean, rel=1e-5, abs=1e-6)
        for p_ours, p_peer in zip(ours.policy.actor.parameters(), peer.policy.actor.parameters()):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------------------- preset
def test_preset_builds_an_orthogonally_initialized_actor_and_collects_episodes() -> None:
    import tdrl
    from tdrl import registry

    p = registry.preset("reinforce", "CartPole-v1")
    kw = p.trainer_kwargs()
    assert (kw["episode_per_collect"], kw["step_per_collect"]) == (8, None)
    alg = tdrl.make_algorithm("reinforce", "CartPole-v1")
    assert isinstance(alg, Reinforce) and alg.return_standardization and alg.gamma == 0.95
    linears = [m for m in alg.policy.actor.modules() if isinstance(m, torch.nn.Linear)]
    for m in linears:
        w = m.weight.detach()
        small = w if w.shape[0] <= w.shape[1] else w.T
        torch.testing.assert_close(
            small @ small.T, 2 * torch.eye(small.shape[0]), atol=1e-5, rtol=0
        )
        assert not m.bias.any()
    assert any(isinstance(m, torch.nn.ReLU) for m in alg.policy.actor.modules())
    # a Box action space gets a Gaussian actor
    cont = tdrl.make_algorithm("reinforce", "Pendulum-v1")
    assert isinstance(cont.policy.actor, GaussianActor)
    with pytest.raises(registry.PresetError, match="expected exactly one"):
        p.replace(episode_per_collect=None)


# ---------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_reinforce_cartpole_reaches_threshold(tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="reinforce",
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= 195.0
