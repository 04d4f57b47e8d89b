"""PPO on Pendulum-v1: the task-specific preset, its networks, TorchRL batches, Tianshou."""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

import tdrl
from tdrl import registry
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.presets.ppo_pendulum import PPOPendulumPreset
from tdrl.utils.net import GaussianActor, VCritic


def test_pendulum_entry_wins_over_the_classic_family_entry() -> None:
    p = registry.preset("ppo", "Pendulum-v1")
    assert isinstance(p, PPOPendulumPreset) and p.task == "Pendulum-v1"
    assert p.threshold == -250.0
    assert registry.entry("ppo", "Pendulum-v1").builder == "tdrl.presets.ppo_pendulum:build"
    assert not isinstance(registry.preset("ppo", "CartPole-v1"), PPOPendulumPreset)
    assert registry.entry("ppo", "Acrobot-v1").builder != "tdrl.presets.ppo_pendulum:build"
    assert registry.default_task("ppo") == "CartPole-v1"


def _preset(**overrides: object) -> PPOPendulumPreset:
    p = registry.preset("ppo", "Pendulum-v1", **overrides)
    assert isinstance(p, PPOPendulumPreset)
    return p


def test_preset_fields_are_checked() -> None:
    p = _preset()
    with pytest.raises(
        registry.PresetError, match=r"'dual_clip': expected a float or None > 1, got 1\.0"
    ):
        p.replace(dual_clip=1.0)
    with pytest.raises(registry.PresetError, match="'init_log_std': expected a float, got 'x'"):
        p.replace(init_log_std="x")
    assert p.replace(dual_clip=3.0).dual_clip == 3.0


def test_build_makes_a_state_independent_gaussian_with_orthogonal_weights() -> None:
    p = _preset(init_log_std=-0.5)
    alg = tdrl.make_algorithm("ppo", "Pendulum-v1", p)
    assert isinstance(alg, PPO)
    actor = alg.policy.actor
    assert isinstance(actor, GaussianActor) and not actor.state_dependent_std
    torch.testing.assert_close(actor.log_std.data, torch.tensor([-0.5]))
    linears = [
        m for m in [*actor.modules(), *alg.critic.modules()] if isinstance(m, torch.nn.Linear)
    ]
    assert len(linears) == 6
    for m in linears:
        w = m.weight.detach()
        small = w if w.shape[0] <= w.shape[1] else w.T
        torch.testing.assert_close(small @ small.T, torch.eye(small.shape[0]), atol=1e-5, rtol=0)
        assert not m.bias.any()
    assert alg.value_clip and alg.return_scaling and alg.advantage_normalization
    assert (alg.gamma, alg.gae_lambda, alg.vf_coef, alg.ent_coef) == (0.95, 0.95, 0.25, 0.0)
    assert alg.policy.deterministic_eval
    # a clipped, scaled raw Gaussian action lands in Pendulum's Box [-2, 2]
    np.testing.assert_allclose(alg.policy.map_action(np.array([[-3.0], [0.25]])), [[-2.0], [0.5]])


def test_update_on_a_pendulum_rollout() -> None:
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    torch.manual_seed(0)
    alg = tdrl.make_algorithm("ppo", "Pendulum-v1")
    envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
    buf = VectorReplayBuffer(1000, 2)
    coll = Collector(alg.policy, envs, buf)
    coll.reset(seed=0)
    coll.collect(n_step=400)
    envs.close()
    before = [p.detach().clone() for p in alg.parameters()]
    stats = alg.update(buf, batch_size=128, repeat=2)
    assert stats["gradient_steps"] == 2 * 3  # 400 transitions: 128, 128, 144
    assert all(math.isfinite(v) for v in stats.values())
    assert all(not torch.equal(a, b) for a, b in zip(before, alg.parameters()))
    assert int(alg.ret_rms.count) == 400


def test_torchrl_batch_trains_actor_log_std_and_critic_separately() -> None:
    alg = tdrl.make_algorithm("ppo", "Pendulum-v1")
    alg.set_keys(observation="observation", action="action")
    n = 16
    td = TensorDict({"observation": torch.randn(n, 3)}, [n])
    with set_exploration_type(ExplorationType.RANDOM):
        alg.policy(td)
    assert bool((td["action"].abs() <= 2.0).all()) and td["action_log_prob"].shape == (n,)
    td["next"] = TensorDict(
        {
            "observation": torch.randn(n, 3),
            "reward": torch.randn(n, 1),
            "done": torch.zeros(n, 1, dtype=torch.bool),
            "terminated": torch.zeros(n, 1, dtype=torch.bool),
        },
        [n],
    )
    # keep the sampled actions inside the Box so that mapping them back is exact
    td["action"] = td["action"].clamp(-1.9, 1.9)
    with torch.no_grad():
        raw = alg.policy.map_action_inverse_torch(td["action"])
        td["action_log_prob"] = alg.policy.dist(td["observation"])[0].log_prob(raw)
    out = alg(td)
    assert abs(out["approx_kl"].item()) < 1e-6 and out["clip_fraction"].item() == 0.0
    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(
            term, list(params.values()), allow_unused=True, retain_graph=True
        )
        return {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}

    actor = {k for k in params if k.startswith("policy.actor.")}
    assert "policy.actor.log_std" in actor
    assert reached(out["loss_objective"]) == actor
    assert reached(out["loss_critic"]) == {k for k in params if k.startswith("critic.")}


# ---------------------------------------------------------------------------- Tianshou oracle
class _Actor(torch.nn.Module):
    """Both libraries' actor signature: ``actor(obs, state=None, info=None) -> ((loc, scale),
    None)``; a state-independent ``log std`` as in the preset."""

    def __init__(self) -> None:
        super().__init__()
        self.net = GaussianActor(3, 1, (16, 16), state_dependent_std=False, init_log_std=-0.3)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _Critic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = VCritic(3, (16, 16), activation=torch.nn.ReLU)

    def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def _independent_normal(loc_scale):  # type: ignore[no-untyped-def]
    loc, scale = loc_scale
    return torch.distributions.Independent(torch.distributions.Normal(loc, scale), 1)


def test_update_matches_tianshou_exactly(monkeypatch) -> None:
    """The preset's PPO configuration (value clip, return scaling, advantage normalization,
    gradient clipping, vf 0.25, gamma 0.95, lambda 0.95, a Box(-2, 2) action space) on three
    Pendulum-shaped rollouts, two epochs of minibatches each, with the same permutations on
    both sides: returns, advantages, old log-probabilities, the logged losses, the running
    return statistics and the parameters agree."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import PPO as TPPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step
    from tdrl.utils.net import ActorCritic

    torch.manual_seed(0)
    actor, critic = _Actor(), _Critic()
    space = gym.spaces.Box(-2.0, 2.0, (1,))
    p = _preset()
    kw = dict(
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        eps_clip=p.eps_clip,
        vf_coef=p.vf_coef,
        ent_coef=0.01,  # the preset's 0.0 would leave the entropy term untested
        max_grad_norm=p.max_grad_norm,
        value_clip=p.value_clip,
        advantage_normalization=p.advantage_normalization,
        return_scaling=p.return_scaling,
    )
    ours = PPO(
        policy=ActorPolicy(
            actor=copy.deepcopy(actor), action_space=space, dist_fn=_independent_normal
        ),
        critic=copy.deepcopy(critic),
        optim=1e-2,
        **kw,  # type: ignore[arg-type]
    )
    peer = TPPO(
        policy=ProbabilisticActorPolicy(
            actor=copy.deepcopy(actor),  # type: ignore[arg-type]
            dist_fn=_independent_normal,
            action_space=space,
        ),
        critic=copy.deepcopy(critic),
        optim=AdamOptimizerFactory(lr=1e-2),
        **kw,  # type: ignore[arg-type]
    )
    # both sides shuffle minibatches with NumPy's global generator, seeded alike below
    monkeypatch.setattr(torch, "randperm", lambda n: torch.as_tensor(np.random.permutation(n)))
    rng = np.random.default_rng(0)
    for rollout in range(3):
        b_ours, b_peer = VectorReplayBuffer(64, 4), TVRB(64, 4)
        for t in range(12):
            d: dict[str, Any] = dict(
                obs=rng.normal(size=(4, 3)).astype(np.float32),
                act=rng.normal(size=(4, 1)).astype(np.float32),
                rew=(-rng.random(4) * 8).astype(np.float32),
                terminated=np.zeros(4, dtype=bool),  # Pendulum never terminates
                truncated=np.full(4, t == 7),  # a time limit mid-rollout
                obs_next=rng.normal(size=(4, 3)).astype(np.float32),
            )
            b_ours.add(Batch(**d))
            b_peer.add(TBatch(info={}, **d))
        idx = b_ours.sample_indices(0)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            np.random.seed(rollout)
            got = ours._update_with_batch(batch, 10, 2)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            np.random.seed(rollout)
            expected = peer._update_with_batch(tb, 10, 2)
        for key in ("v_s", "returns", "adv", "logp_old"):
            torch.testing.assert_close(
                batch[key].reshape(-1), tb[key].float(), atol=1e-6, rtol=1e-5, msg=key
            )
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


# ---------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ppo_pendulum_reaches_threshold(tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="ppo",
            task="Pendulum-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= -250.0
