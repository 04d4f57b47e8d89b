"""A2C: GAE preprocessing, the three loss terms, TorchRL batches, Tianshou's A2C as oracle."""

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

from tdrl.algorithm.modelfree.a2c import A2C, ActorPolicy
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import MLP, ActorCritic, DiscreteActor, GaussianActor, VCritic


def _rows(n_envs: int = 4, steps: int = 9, continuous: bool = False, seed: int = 0) -> list[dict]:
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
    return rows


def _buffer(rows: list[dict], n_envs: int = 4) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(n_envs * 16, n_envs)
    for row in rows:
        buf.add(Batch(**row))
    return buf


def _a2c(**kw) -> A2C:
    torch.manual_seed(0)
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (8,)), action_space=gym.spaces.Discrete(2))
    return A2C(policy=policy, critic=VCritic(3, (8,)), **kw)


def test_preprocess_adds_gae_without_old_log_probs() -> None:
    buf = _buffer(_rows())
    alg = _a2c(gamma=0.9, gae_lambda=0.8)
    idx = buf.sample_indices(0)
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        v_s = alg.critic(batch["obs"]).reshape(-1)
        v_s_ = alg.critic(batch["obs_next"]).reshape(-1)
    ret, adv = compute_episodic_return(
        buf[idx], buf, idx, v_s_=v_s_, v_s=v_s, gamma=0.9, gae_lambda=0.8
    )
    torch.testing.assert_close(batch["v_s"], v_s)
    torch.testing.assert_close(batch["adv"], adv)
    torch.testing.assert_close(batch["returns"], ret)
    assert "logp_old" not in batch


def _constant_nets(logits: list[float], value: float) -> tuple[ActorPolicy, torch.nn.Linear]:
    actor, critic = torch.nn.Linear(1, len(logits)), torch.nn.Linear(1, 1)
    with torch.no_grad():
        actor.weight.zero_()
        actor.bias.copy_(torch.tensor(logits))
        critic.weight.zero_()
        critic.bias.fill_(value)
    return ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(len(logits))), critic


def test_loss_terms_on_a_known_minibatch() -> None:
    policy, critic = _constant_nets([0.0, math.log(3.0)], 1.0)  # pi = (1/4, 3/4), V = 1
    alg = A2C(policy=policy, critic=critic, vf_coef=0.5, ent_coef=0.1)
    mb = TensorDict(
        {
            "obs": torch.zeros(2, 1),
            "act": torch.tensor([0, 1]),
            "adv": torch.tensor([2.0, -1.0]),
            "returns": torch.tensor([3.0, 0.0]),
        },
        [2],
    )
    out = alg(mb)
    actor_loss = -(math.log(0.25) * 2.0 + math.log(0.75) * -1.0) / 2
    entropy = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    vf_loss = ((3.0 - 1.0) ** 2 + (0.0 - 1.0) ** 2) / 2
    assert out["loss_objective"].item() == pytest.approx(actor_loss, rel=1e-6)
    assert out["vf_loss"].item() == pytest.approx(vf_loss, rel=1e-6)
    assert out["loss_critic"].item() == pytest.approx(0.5 * vf_loss, rel=1e-6)
    assert out["entropy"].item() == pytest.approx(entropy, rel=1e-6)
    assert out["loss_entropy"].item() == pytest.approx(-0.1 * entropy, rel=1e-6)
    # no advantage normalization: doubling the advantages doubles the policy loss
    mb["adv"] = mb["adv"] * 2
    assert alg(mb)["loss_objective"].item() == pytest.approx(2 * actor_loss, rel=1e-6)


def test_per_dimension_distribution_takes_one_term_per_action_dimension() -> None:
    def per_dim(loc_scale):  # a plain Normal: log_prob and entropy are [B, D]
        return torch.distributions.Normal(*loc_scale)

    torch.manual_seed(0)
    actor = GaussianActor(3, 2, (8,), state_dependent_std=False, init_log_std=-0.5)
    space = gym.spaces.Box(-1.0, 1.0, (2,))
    alg = A2C(
        policy=ActorPolicy(actor=actor, action_space=space, dist_fn=per_dim),
        critic=VCritic(3, (8,)),
        ent_coef=0.0,
    )
    obs, act, adv = torch.randn(5, 3), torch.randn(5, 2), torch.randn(5)
    out = alg(TensorDict({"obs": obs, "act": act, "adv": adv, "returns": adv}, [5]))
    dist = per_dim(actor(obs))
    torch.testing.assert_close(out["loss_objective"], -(dist.log_prob(act) * adv[:, None]).mean())
    torch.testing.assert_close(out["entropy"], dist.entropy().mean())
    assert out["loss_entropy"].item() == 0.0


def test_update_runs_minibatch_epochs_on_actor_and_critic() -> None:
    buf = _buffer(_rows())
    n = len(buf)  # 36
    alg = _a2c(max_grad_norm=0.5)
    actor_before = [p.detach().clone() for p in alg.policy.actor.parameters()]
    critic_before = [p.detach().clone() for p in alg.critic.parameters()]
    stats = alg.update(buf, batch_size=8, repeat=3)
    assert set(stats) == {
        "loss",
        "loss_objective",
        "loss_critic",
        "loss_entropy",
        "vf_loss",
        "entropy",
        "gradient_steps",
    }
    assert all(np.isfinite(v) for v in stats.values())
    assert stats["gradient_steps"] == 3 * (n // 8)  # the short last minibatch is merged
    assert all(not torch.equal(a, b) for a, b in zip(actor_before, alg.policy.actor.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(critic_before, alg.critic.parameters()))
    assert alg.update(buf, batch_size=None, repeat=2)["gradient_steps"] == 2
    assert not alg.policy.is_within_training_step


def test_return_scaling_scales_values_and_returns_by_the_running_std() -> None:
    buf = _buffer(_rows())
    alg = _a2c(return_scaling=True)
    with torch.no_grad():
        alg.ret_rms.update(torch.tensor([0.0, 4.0]))
    std = alg.ret_rms.std(alg._eps)
    idx = buf.sample_indices(0)
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        v_s = alg.critic(batch["obs"]).reshape(-1) * std
        v_s_ = alg.critic(batch["obs_next"]).reshape(-1) * std
    ret, adv = compute_episodic_return(
        buf[idx], buf, idx, v_s_=v_s_, v_s=v_s, gamma=alg.gamma, gae_lambda=alg.gae_lambda
    )
    torch.testing.assert_close(batch["returns"], ret / std)
    torch.testing.assert_close(batch["adv"], adv)


def _shared_nets() -> tuple[torch.nn.Module, torch.nn.Module]:
    """Actor and critic on one shared trunk (as Tianshou's A2C test builds them)."""

    trunk = MLP(3, 0, (16,))

    class Actor(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk, self.head = trunk, torch.nn.Linear(16, 2)

        def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
            return self.head(self.trunk(torch.as_tensor(obs, dtype=torch.float32))), None

    class Critic(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk, self.head = trunk, torch.nn.Linear(16, 1)

        def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
            return self.head(self.trunk(torch.as_tensor(obs, dtype=torch.float32)))

    return Actor(), Critic()


def test_shared_trunk_is_optimized_once() -> None:
    torch.manual_seed(0)
    actor, critic = _shared_nets()
    alg = A2C(policy=ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(2)), critic=critic)
    params = alg.optim.optim.param_groups[0]["params"]
    assert len(params) == len({id(p) for p in params}) == 6  # trunk 2 + heads 2 x 2
    buf = _buffer(_rows())
    assert np.isfinite(alg.update(buf, batch_size=16, repeat=2)["loss"])


def test_torchrl_batch_gets_one_step_advantages_and_each_term_its_own_parameters() -> None:
    alg = _a2c(ent_coef=0.01)
    alg.set_keys(observation="observation", action="action")
    n = 8
    td = TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    td["next", "terminated"][-2:] = True
    td["next", "done"][-2:] = True
    out = alg(td)  # no action_log_prob needed
    with torch.no_grad():
        v_s = alg.critic(td["observation"]).reshape(-1)
        v_n = alg.critic(td["next", "observation"]).reshape(-1)
    mask = torch.tensor([1.0] * 6 + [0.0] * 2)
    ret = td["next", "reward"].reshape(-1) + alg.gamma * mask * v_n
    torch.testing.assert_close(td["returns"], ret)
    torch.testing.assert_close(td["adv"], ret - v_s)

    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(
            term, list(params.values()), allow_unused=True, retain_graph=True
        )
        return {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}

    actor = {k for k in params if k.startswith("policy.actor.")}
    critic = {k for k in params if k.startswith("critic.")}
    assert reached(out["loss_objective"]) == actor
    assert reached(out["loss_entropy"]) == actor
    assert reached(out["loss_critic"]) == critic
    # a batch of trajectories [N, T] is flattened
    traj = td.reshape(2, 4).exclude("returns", "adv", "v_s")
    assert alg(traj)["loss_objective"].shape == ()


def test_state_dict_round_trip() -> None:
    buf = _buffer(_rows())
    a = _a2c(return_scaling=True)
    a.update(buf, batch_size=12, repeat=2)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = _a2c(return_scaling=True)
    b.load_state_dict(torch.load(f, weights_only=False))
    obs = torch.randn(4, 3)
    torch.testing.assert_close(b.critic(obs), a.critic(obs))
    torch.testing.assert_close(b.policy.actor(obs), a.policy.actor(obs))
    torch.testing.assert_close(b.ret_rms.var, a.ret_rms.var)


def test_argument_errors() -> None:
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (4,)), action_space=gym.spaces.Discrete(2))
    critic = VCritic(3, (4,))
    with pytest.raises(ValueError, match=r"vf_coef: expected a value >= 0, got -1"):
        A2C(policy=policy, critic=critic, vf_coef=-1)
    with pytest.raises(ValueError, match=r"ent_coef: expected a value >= 0, got -0\.1"):
        A2C(policy=policy, critic=critic, ent_coef=-0.1)
    with pytest.raises(ValueError, match=r"max_grad_norm: expected a value > 0 or None, got 0"):
        A2C(policy=policy, critic=critic, max_grad_norm=0)
    with pytest.raises(ValueError, match=r"gae_lambda: expected a value in \[0, 1\], got 2"):
        A2C(policy=policy, critic=critic, gae_lambda=2)
    with pytest.raises(ValueError, match=r"critic: expected a module obs -> V\(s\), got None"):
        A2C(policy=policy, critic=None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- Tianshou oracle
class _GaussianActor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = GaussianActor(3, 2, (16,), state_dependent_std=False, init_log_std=-0.3)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _Critic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = VCritic(3, (16,))

    def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def _per_dim_normal(loc_scale):  # type: ignore[no-untyped-def]
    return torch.distributions.Normal(*loc_scale)


def _categorical(logits):  # type: ignore[no-untyped-def]
    return torch.distributions.Categorical(logits=logits)


@pytest.mark.parametrize("continuous", [False, True])
def test_update_matches_tianshou_exactly(continuous: bool, monkeypatch) -> None:
    """Three rollouts, each: GAE (and, in the continuous case, return scaling with the
    running std), then two epochs of minibatches with the same permutations on both sides.
    Returns, advantages, values, every logged loss, the running statistics and the
    parameters agree. Discrete: actor and critic share a trunk, lambda = 1, no clipping
    (Tianshou's A2C test); continuous: a per-dimension ``Normal``, gradient clipping."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import A2C as TA2C
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step

    torch.manual_seed(0)
    space: gym.Space
    if continuous:
        nets: tuple[torch.nn.Module, torch.nn.Module] = (_GaussianActor(), _Critic())
        space, dist_fn = gym.spaces.Box(-1.0, 1.0, (2,)), _per_dim_normal
        kw: dict[str, Any] = dict(gamma=0.95, gae_lambda=0.9, vf_coef=0.25, ent_coef=0.01)
        kw.update(max_grad_norm=0.5, return_scaling=True)
    else:
        nets, space, dist_fn = _shared_nets(), gym.spaces.Discrete(2), _categorical
        kw = dict(gamma=0.9, gae_lambda=1.0, vf_coef=0.5, ent_coef=0.0, max_grad_norm=None)
    ours_nets, peer_nets = copy.deepcopy(nets), copy.deepcopy(nets)  # sharing kept per copy
    ours = A2C(
        policy=ActorPolicy(actor=ours_nets[0], action_space=space, dist_fn=dist_fn),
        critic=ours_nets[1],
        optim=1e-2,
        **kw,
    )
    peer = TA2C(
        policy=ProbabilisticActorPolicy(
            actor=peer_nets[0],  # type: ignore[arg-type]
            dist_fn=dist_fn,
            action_space=space,
            action_scaling=continuous,
            action_bound_method="clip" if continuous else None,
        ),
        critic=peer_nets[1],
        optim=AdamOptimizerFactory(lr=1e-2),
        **kw,
    )
    # both sides shuffle minibatches with NumPy's global generator, seeded alike below
    monkeypatch.setattr(torch, "randperm", lambda n: torch.as_tensor(np.random.permutation(n)))
    for rollout in range(3):
        rows = _rows(steps=12, continuous=continuous, seed=rollout)
        b_ours, b_peer = _buffer(rows), TVRB(64, 4)
        for row in rows:
            b_peer.add(TBatch(info={}, **row))
        idx = b_ours.sample_indices(0)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            np.random.seed(rollout)
            got = ours._update_with_batch(batch, 10, 2)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            np.random.seed(rollout)
            expected = peer._update_with_batch(tb, 10, 2)
        for key in ("v_s", "returns", "adv"):
            torch.testing.assert_close(batch[key], tb[key].float(), atol=1e-6, rtol=1e-5, msg=key)
        assert ours.ret_rms.var.item() == pytest.approx(float(peer.ret_rms.var), rel=1e-6)
        assert got["gradient_steps"] == expected.gradient_steps == 2 * 4
        for ours_key, peer_stat in (
            ("loss_objective", expected.actor_loss),
            ("vf_loss", expected.vf_loss),
            ("entropy", expected.ent_loss),
            ("loss", expected.loss),
        ):
            assert got[ours_key] == pytest.approx(peer_stat.mean, rel=1e-5, abs=1e-6), ours_key
        peer_params = ActorCritic(peer.policy.actor, peer.critic).parameters()
        for p_ours, p_peer in zip(ours.optim.params, peer_params, strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------------------- preset
def test_preset_builds_separate_or_shared_networks() -> None:
    import tdrl
    from tdrl import registry

    p = registry.preset("a2c", "CartPole-v1")
    kw = p.trainer_kwargs()
    assert (kw["step_per_collect"], kw["episode_per_collect"], kw["batch_size"]) == (512, None, 128)
    alg = tdrl.make_algorithm("a2c", "CartPole-v1")
    assert isinstance(alg, A2C) and alg.optim.max_grad_norm == 0.5
    actor_ids = {id(q) for q in alg.policy.actor.parameters()}
    assert not actor_ids & {id(q) for q in alg.critic.parameters()}
    shared = tdrl.make_algorithm("a2c", "CartPole-v1", p.replace(shared_trunk=True))
    common = {id(q) for q in shared.policy.actor.parameters()} & {
        id(q) for q in shared.critic.parameters()
    }
    assert len(common) == 4  # two hidden layers' weights and biases
    assert len(shared.optim.params) == len({id(q) for q in shared.optim.params}) == 8
    out = shared(
        TensorDict(
            {
                "obs": torch.randn(4, 4),
                "act": torch.zeros(4).long(),
                "adv": torch.ones(4),
                "returns": torch.ones(4),
            },
            [4],
        )
    )
    assert torch.isfinite(out["loss_critic"])
    cont = tdrl.make_algorithm("a2c", "Pendulum-v1")
    assert isinstance(cont.policy.actor, GaussianActor)


# ---------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a2c_cartpole_reaches_threshold(tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="a2c",
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= 195.0
