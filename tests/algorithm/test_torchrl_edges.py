"""tdrl's parts inside plain TorchRL code: the prioritized sampler behind TorchRL's priority
path, the quantile losses' value estimators, stateful transforms under tdrl's collector,
and ``[n_envs, T]`` batches from a TorchRL collector."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

torchrl_data = pytest.importorskip("torchrl.data")


# ------------------------------------------------------------------ 8: priority path
def _prioritized_rb(n: int = 16):  # type: ignore[no-untyped-def]
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer

    from tdrl.data.buffer.prio import PrioritizedSampler

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(n),
        sampler=PrioritizedSampler(n, alpha=1.0, beta=1.0),
        priority_key="td_error",
        batch_size=8,
        generator=torch.Generator().manual_seed(0),
    )


def test_tdrl_sampler_is_a_torchrl_prioritized_sampler() -> None:
    from tdrl.data.buffer.prio import PrioritizedSampler

    sampler = PrioritizedSampler(4, alpha=0.6, beta=0.4)
    assert isinstance(sampler, torchrl_data.PrioritizedSampler)
    assert sampler.default_priority == sampler.max_priority == 1.0
    assert sampler.reduction == "max"


def test_update_tensordict_priority_updates_the_tdrl_sampler() -> None:
    rb = _prioritized_rb()
    rb.extend(TensorDict({"obs": torch.arange(10.0)}, [10]))
    td = rb.sample()
    chosen = int(td["obs"][0])
    td["td_error"] = torch.where(td["obs"] == chosen, 1000.0, 0.0)
    rb.update_tensordict_priority(td)  # TorchRL's public call, as its trainers make it
    assert rb.sampler.max_priority == pytest.approx(1000.0)
    assert (rb.sample()["obs"] == chosen).float().mean() > 0.9


def test_extend_with_priorities_sets_them() -> None:
    rb = _prioritized_rb()
    prio = torch.zeros(10)
    prio[7] = 50.0
    rb.extend(TensorDict({"obs": torch.arange(10.0), "td_error": prio}, [10]))
    assert rb.sampler.max_priority == pytest.approx(50.0)
    assert (rb.sample()["obs"] == 7).all()


# ------------------------------------------------------ 9: quantile value estimators
def _torchrl_batch(n: int, obs_dim: int = 4) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, obs_dim),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, obs_dim),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True]] + [[False]] * (n - 1)),
            },
        },
        [n],
    )


@pytest.mark.parametrize("algo", ["iqn", "fqf"])
def test_quantile_losses_take_td0_and_refuse_the_others(algo: str) -> None:
    from torchrl.objectives import ValueEstimators

    import tdrl

    loss = tdrl.make_algorithm(algo, "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    for other in (ValueEstimators.TD1, ValueEstimators.TDLambda, ValueEstimators.GAE):
        with pytest.raises(NotImplementedError, match=r"supports \['TD0'\]"):
            loss.make_value_estimator(other)
        assert loss._value_estimator is None  # refused: the loss is as it was
    assert torch.isfinite(loss(_torchrl_batch(8))["loss_qvalue"])
    loss.make_value_estimator(ValueEstimators.TD0, gamma=0.5)
    td = _torchrl_batch(8)
    torch.manual_seed(1)
    out = loss(td)
    assert torch.isfinite(out["loss_qvalue"])
    torch.manual_seed(1)
    z = loss.next_value(td["next", "observation"])
    term = td["next", "terminated"].float()
    torch.testing.assert_close(td["returns"], td["next", "reward"] + 0.5 * (1 - term) * z)


# -------------------------------------------------------- 10: stateful transforms
def test_collector_on_a_step_counter_env_truncates_every_25_steps() -> None:
    from torchrl.envs import GymEnv, StepCounter, TransformedEnv

    from tdrl.data import Collector, VectorReplayBuffer

    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=25))
    buf = VectorReplayBuffer(200, 1)
    collector = Collector(None, env, buf)
    collector.reset()
    stats = collector.collect(n_episode=3, random=True)
    assert stats.n_collected_episodes == 3 and stats.n_collected_steps == 75
    assert stats.lens.tolist() == [25, 25, 25]
    done = np.flatnonzero(buf.truncated[: len(buf)])
    assert done.tolist() == [24, 49, 74]
    assert not buf.terminated[: len(buf)].any()
    collector.env.close()


def test_step_counter_counts_per_env_in_a_serial_env() -> None:
    from torchrl.envs import GymEnv, SerialEnv, StepCounter, TransformedEnv

    from tdrl.env import make_vector_env

    venv = make_vector_env(
        TransformedEnv(SerialEnv(2, lambda: GymEnv("Pendulum-v1")), StepCounter(max_steps=3))
    )
    venv.reset()
    for _ in range(2):
        *_, trunc, _ = venv.step(np.zeros((2, 1), dtype=np.float32))
        assert not trunc.any()
    *_, trunc, _ = venv.step(np.zeros((2, 1), dtype=np.float32))
    assert trunc.tolist() == [True, True]
    venv.reset(env_id=[0])  # env 0 starts over, env 1 keeps its count
    *_, trunc, _ = venv.step(np.zeros((2, 1), dtype=np.float32))
    assert trunc.tolist() == [False, True]
    venv.close()


# ------------------------------------------------------- 11: [n_envs, T] batches
def _trajectories(n: int, t: int, obs_dim: int, act: torch.Tensor) -> TensorDict:
    """A TorchRL collector's batch over ``n`` envs for ``t`` steps: ``[n, t]``."""
    return TensorDict(
        {
            "observation": torch.randn(n, t, obs_dim),
            "action": act,
            "next": {
                "observation": torch.randn(n, t, obs_dim),
                "reward": torch.randn(n, t, 1),
                "done": torch.zeros(n, t, 1, dtype=torch.bool),
                "terminated": torch.rand(n, t, 1) < 0.2,
            },
        },
        [n, t],
    )


@pytest.mark.parametrize(
    ("algo", "task"),
    [
        ("dqn", "CartPole-v1"),
        ("c51", "CartPole-v1"),
        ("qrdqn", "CartPole-v1"),
        ("iqn", "CartPole-v1"),
        ("fqf", "CartPole-v1"),
        ("td3", "Pendulum-v1"),
        ("sac", "Pendulum-v1"),
        ("ppo", "CartPole-v1"),
    ],
)
def test_every_family_flattens_n_envs_by_t_batches(algo: str, task: str) -> None:
    import tdrl

    loss = tdrl.make_algorithm(algo, task)
    loss.set_keys(observation="observation", action="action")
    n, t = 2, 5
    if task == "CartPole-v1":
        td = _trajectories(n, t, 4, torch.randint(2, (n, t)))
    else:
        td = _trajectories(n, t, 3, torch.rand(n, t, 1) * 4 - 2)
    if algo == "ppo":  # the behaviour policy's log-probabilities, as TorchRL records them
        td["action_log_prob"] = torch.full((n, t), -0.7)
    torch.manual_seed(0)
    out = loss(td.clone())
    torch.manual_seed(0)
    flat = loss(td.reshape(-1))
    keys = sorted(out.keys())
    assert keys == sorted(flat.keys()) and any(k.startswith("loss_") for k in keys)
    for k in keys:
        torch.testing.assert_close(out[k], flat[k], msg=k)
    shaped = td.clone()
    loss(shaped)
    if "td_error" in shaped:  # priorities come back in the batch's shape
        assert shaped["td_error"].shape[:2] == (n, t)
