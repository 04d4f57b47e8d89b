"""tdrl losses inside plain TorchRL code: keys, policies, gradients, updaters, training.

No tdrl collector, buffer or trainer here: TorchRL's ``GymEnv``, ``Collector``,
``TensorDictReplayBuffer``, ``EGreedyModule`` and ``SoftUpdate``/``HardUpdate`` drive a
tdrl loss that was pointed at TorchRL's layout with ``set_keys``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictSequential
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import GymEnv
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import EGreedyModule
from torchrl.objectives import HardUpdate, SoftUpdate

import tdrl
from tdrl.algorithm import PPO, ActorPolicy
from tdrl.utils.net import DiscreteActor, VCritic


def _torchrl_batch(obs_dim: int, n: int, act: torch.Tensor) -> TensorDict:
    """A batch in GymEnv's layout: reward/done/terminated ``[B, 1]`` under ``next``."""
    return TensorDict(
        {
            "observation": torch.randn(n, obs_dim),
            "action": act,
            "next": {
                "observation": torch.randn(n, obs_dim),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


def _grads(loss: torch.nn.Module, term: torch.Tensor) -> set[str]:
    """Names of the trainable parameters that ``term`` reaches with a nonzero gradient."""
    params = dict(loss.named_parameters())
    grads = torch.autograd.grad(term, list(params.values()), allow_unused=True)
    return {n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}


def test_make_algorithm_returns_the_preset_loss() -> None:
    dqn = tdrl.make_algorithm("dqn", "CartPole-v1")
    sac = tdrl.make_algorithm("sac", "Pendulum-v1")
    assert type(dqn).__name__ == "DQN" and type(sac).__name__ == "SAC"
    assert dqn.policy.n_actions == 2 and sac.policy.action_space.shape == (1,)


def test_set_keys_points_loss_and_policy_at_torchrl_layout() -> None:
    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    assert loss.policy.in_keys == ["observation"] and loss.policy.out_keys == ["action"]
    assert loss.next_obs_key == ("next", "observation")
    assert loss.reward_key == ("next", "reward")
    assert loss.terminated_key == ("next", "terminated")
    td = _torchrl_batch(4, 8, torch.randint(2, (8,)))
    out = loss(td)
    assert set(out.keys()) == {"loss_qvalue"} and torch.isfinite(out["loss_qvalue"])
    # the one-step target: r + gamma (1 - terminated) V'(s')
    v = loss.next_value(td["next", "observation"])
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1) + loss.gamma * v)


def test_one_step_target_masks_terminated_states() -> None:
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    loss.set_keys(observation="observation", action="action")
    td = _torchrl_batch(3, 6, torch.rand(6, 1) * 4 - 2)
    td["next", "terminated"][:] = True
    loss(td)
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1))


def test_missing_key_error_names_the_key() -> None:
    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    td = _torchrl_batch(4, 4, torch.randint(2, (4,))).exclude(("next", "reward"))
    with pytest.raises(KeyError, match="the reward key"):
        loss(td)


def test_each_sac_term_reaches_only_its_own_parameters() -> None:
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    loss.set_keys(observation="observation", action="action")
    out = loss(_torchrl_batch(3, 16, torch.rand(16, 1) * 4 - 2))
    assert {"loss_qvalue", "loss_actor", "loss_alpha"} <= set(out.keys())
    q, actor, alpha = (_grads(loss, out[k]) for k in ("loss_qvalue", "loss_actor", "loss_alpha"))
    assert q and all(n.startswith("critics.") for n in q)
    assert actor and all(n.startswith("policy.actor.") for n in actor)
    assert alpha == {"auto_alpha.log_alpha"}
    # target parameters are buffers: never trained by an optimizer over loss.parameters()
    trainable = {id(p) for p in loss.parameters()}
    assert all(id(t) not in trainable for t in loss.target_critic1_params.values(True, True))


def test_dqn_term_reaches_only_the_online_q_network() -> None:
    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    out = loss(_torchrl_batch(4, 16, torch.randint(2, (16,))))
    reached = _grads(loss, out["loss_qvalue"])
    assert reached and all(n.startswith("policy.model.") for n in reached)


def test_ppo_loss_on_a_torchrl_batch_uses_the_sampled_log_prob() -> None:
    policy = ActorPolicy(actor=DiscreteActor(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    loss = PPO(policy=policy, critic=VCritic(4, (8,)))
    loss.set_keys(observation="observation", action="action")
    td = TensorDict({"observation": torch.randn(8, 4)}, [8])
    with set_exploration_type(ExplorationType.RANDOM):
        loss.policy(td)
    batch = _torchrl_batch(4, 8, td["action"])
    batch["observation"] = td["observation"]
    batch["action_log_prob"] = td["action_log_prob"]
    out = loss(batch)
    assert {"loss_objective", "loss_critic", "loss_entropy"} <= set(out.keys())
    # the first pass of PPO on its own samples has ratio 1: nothing is clipped
    assert out["clip_fraction"].item() == 0.0
    assert abs(out["approx_kl"].item()) < 1e-6


def test_policy_follows_exploration_type_and_writes_log_prob() -> None:
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    loss.set_keys(observation="observation", action="action")
    obs = torch.randn(5, 3)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        a1 = loss.policy(TensorDict({"observation": obs}, [5]))
        a2 = loss.policy(TensorDict({"observation": obs}, [5]))
    assert torch.equal(a1["action"], a2["action"]) and "action_log_prob" not in a1
    loc, _ = loss.policy.actor(obs)
    torch.testing.assert_close(a1["action"], 2.0 * torch.tanh(loc))  # scaled to Box(-2, 2)
    with set_exploration_type(ExplorationType.RANDOM):
        r1 = loss.policy(TensorDict({"observation": obs}, [5]))
        r2 = loss.policy(TensorDict({"observation": obs}, [5]))
    assert not torch.equal(r1["action"], r2["action"])
    assert r1["action_log_prob"].shape == (5,)
    assert bool((r1["action"].abs() <= 2.0).all())
    # an unbatched TensorDict (a single TorchRL env) keeps its shape
    single = loss.policy(TensorDict({"observation": torch.randn(3)}, []))
    assert single["action"].shape == (1,)


def test_dqn_policy_is_greedy_and_composes_with_egreedy() -> None:
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    obs = torch.randn(6, 4)
    td = loss.policy(TensorDict({"observation": obs}, [6]))
    assert torch.equal(td["action"], loss.policy.model(obs).argmax(-1))
    explore = TensorDictSequential(loss.policy, EGreedyModule(env.action_spec, eps_init=1.0))
    with set_exploration_type(ExplorationType.RANDOM):
        acts = torch.stack([explore(TensorDict({"observation": obs}, [6]))["action"]] * 1)
    assert acts.dtype == torch.int64 and bool(((acts == 0) | (acts == 1)).all())
    env.close()


def test_torchrl_updaters_move_the_targets_the_loss_uses() -> None:
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    soft = SoftUpdate(loss, tau=0.5)
    with torch.no_grad():
        for p in loss.critics[0].parameters():
            p.add_(1.0)
    before = [p.clone() for p in loss.critic1_old.parameters()]
    soft.step()
    for b, t, s in zip(before, loss.critic1_old.parameters(), loss.critics[0].parameters()):
        torch.testing.assert_close(t, 0.5 * b + 0.5 * s)
    dqn = tdrl.make_algorithm("dqn", "CartPole-v1")
    hard = HardUpdate(dqn, value_network_update_interval=1)
    with torch.no_grad():
        for p in dqn.policy.model.parameters():
            p.mul_(2.0)
    hard.step()
    hard.step()
    for t, s in zip(dqn.model_old.parameters(), dqn.policy.model.parameters()):
        assert torch.equal(t, s)


def test_sync_target_copies_online_weights() -> None:
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    with torch.no_grad():
        for p in loss.critics.parameters():
            p.normal_()
    loss.sync_target()
    for j, old in enumerate(loss.critics_old):
        for t, s in zip(old.parameters(), loss.critics[j].parameters()):
            assert torch.equal(t, s)


def test_collector_runs_the_policy() -> None:
    env = GymEnv("Pendulum-v1")
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    loss.set_keys(observation="observation", action="action")
    coll = Collector(env, loss.policy, frames_per_batch=16, total_frames=32)
    batches = list(coll)
    coll.shutdown()
    assert len(batches) == 2 and batches[0]["action_log_prob"].shape == (16,)
    assert bool((batches[0]["action"].abs() <= 2.0).all())


def _evaluate(env: GymEnv, policy: torch.nn.Module, steps: int, episodes: int = 5) -> float:
    returns = []
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        for _ in range(episodes):
            returns.append(env.rollout(steps, policy)["next", "reward"].sum().item())
    return float(np.mean(returns))


def _train(
    loss: torch.nn.Module,
    env: GymEnv,
    policy: torch.nn.Module,
    updater: SoftUpdate | HardUpdate,
    *,
    lr: float,
    batch_size: int,
    updates_per_batch: int,
    threshold: float,
    eval_steps: int,
    on_batch: object = None,
) -> tuple[float, int]:
    """TorchRL's loop: Collector -> TensorDictReplayBuffer -> loss -> Adam -> updater."""
    coll = Collector(env, policy, frames_per_batch=10, total_frames=30_000, init_random_frames=1000)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(20_000), batch_size=batch_size)
    optim = torch.optim.Adam(loss.parameters(), lr=lr)
    best, frames = -np.inf, 0
    for i, data in enumerate(coll):
        rb.extend(data.reshape(-1))
        frames += data.numel()
        if callable(on_batch):
            on_batch(data.numel())
        if frames < 1000:
            continue
        for _ in range(updates_per_batch):
            out = loss(rb.sample())
            total = sum(v for k, v in out.items() if k.startswith("loss_"))
            optim.zero_grad()
            total.backward()
            optim.step()
            updater.step()
        if i % 100 == 0:
            best = max(best, _evaluate(env, loss.policy, eval_steps))
            if best >= threshold:
                break
    coll.shutdown()
    return best, frames


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_dqn_cartpole_trains_to_threshold_in_a_torchrl_loop() -> None:
    torch.manual_seed(0)
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    env.set_seed(0)
    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    greedy = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.05, annealing_num_steps=10_000)
    policy = TensorDictSequential(loss.policy, greedy)
    best, frames = _train(
        loss,
        env,
        policy,
        HardUpdate(loss, value_network_update_interval=100),
        lr=1e-3,
        batch_size=64,
        updates_per_batch=2,
        threshold=195.0,
        eval_steps=500,
        on_batch=greedy.step,
    )
    print(f"DQN via TorchRL: {best:.1f} after {frames} frames")
    assert best >= 195.0


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sac_pendulum_trains_to_threshold_in_a_torchrl_loop() -> None:
    torch.manual_seed(0)
    env = GymEnv("Pendulum-v1")
    env.set_seed(0)
    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    loss.set_keys(observation="observation", action="action")
    best, frames = _train(
        loss,
        env,
        loss.policy,
        SoftUpdate(loss, tau=0.005),
        lr=1e-3,
        batch_size=128,
        updates_per_batch=10,
        threshold=-250.0,
        eval_steps=200,
    )
    print(f"SAC via TorchRL: {best:.1f} after {frames} frames")
    assert best >= -250.0


@pytest.mark.parametrize("kind", ["TD0", "TD1", "TDLambda"])
def test_make_value_estimator_uses_torchrl_estimators(kind: str) -> None:
    from torchrl.objectives import ValueEstimators

    loss = tdrl.make_algorithm("dqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    extra = {"lmbda": 0.5} if kind == "TDLambda" else {}
    loss.make_value_estimator(getattr(ValueEstimators, kind), gamma=0.5, **extra)
    td = _torchrl_batch(4, 6, torch.randint(2, (6,)))
    td["next", "done"][-1] = True
    td["next", "terminated"][-1] = True
    out = loss(td)
    assert torch.isfinite(out["loss_qvalue"])
    v = loss.next_value(td["next", "observation"])
    r = td["next", "reward"].reshape(-1)
    if kind == "TD0":
        expected = r + 0.5 * v * torch.tensor([1.0] * 5 + [0.0])
        torch.testing.assert_close(td["returns"], expected)
    else:  # the last (terminal) step's target is its reward under every estimator
        assert td["returns"][-1].item() == pytest.approx(r[-1].item())


def test_make_value_estimator_rejects_unsupported_kinds() -> None:
    from torchrl.objectives import ValueEstimators

    loss = tdrl.make_algorithm("sac", "Pendulum-v1")
    with pytest.raises(NotImplementedError, match="value_type: SAC supports"):
        loss.make_value_estimator(ValueEstimators.GAE)
