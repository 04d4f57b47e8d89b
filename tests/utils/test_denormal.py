"""Denormal flushing: the context switch, its restore, and the trainer's use of it."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import pytest
import torch

from tdrl.algorithm.presets import DQN_CARTPOLE
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.denormal import denormals_flushed, flush_denormal

SUPPORTED = torch.set_flush_denormal(False)  # also: start every test from the default mode


@pytest.fixture(autouse=True)
def _default_mode() -> Iterator[None]:
    torch.set_flush_denormal(False)
    yield
    torch.set_flush_denormal(False)


def _denormal_product() -> float:
    return float((torch.tensor([2e-38]) * 0.25).item())


def test_probe_reads_the_mode_torch_set() -> None:
    assert not denormals_flushed()
    assert _denormal_product() > 0.0  # IEEE gradual underflow by default
    if SUPPORTED:
        torch.set_flush_denormal(True)
        assert denormals_flushed() and _denormal_product() == 0.0


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero mode")
def test_context_flushes_inside_and_restores_off() -> None:
    with flush_denormal() as on:
        assert on and denormals_flushed() and _denormal_product() == 0.0
    assert not denormals_flushed()


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero mode")
def test_context_leaves_a_mode_the_user_turned_on_and_restores_after_an_error() -> None:
    torch.set_flush_denormal(True)
    with flush_denormal():
        pass
    assert denormals_flushed()  # the user's mode is kept, not switched off
    torch.set_flush_denormal(False)
    with pytest.raises(RuntimeError, match="boom"), flush_denormal():
        raise RuntimeError("boom")
    assert not denormals_flushed()


def _trainer(**kwargs: object) -> tuple[OffPolicyTrainer, list[bool]]:
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    alg = DQN_CARTPOLE.build(envs.observation_space[0], envs.action_space[0])
    train = Collector(alg.policy, envs, VectorReplayBuffer(500, 2))
    train.reset(seed=0)
    train.collect(n_step=64, random=True)
    seen: list[bool] = []
    trainer = OffPolicyTrainer(
        alg,
        train,
        max_epochs=1,
        step_per_epoch=20,
        step_per_collect=10,
        update_per_step=0.5,
        batch_size=16,
        train_fn=lambda epoch, step: seen.append(denormals_flushed()),
        show_progress=False,
        verbose=False,
        **kwargs,  # type: ignore[arg-type]
    )
    return trainer, seen


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero mode")
def test_trainer_flushes_during_run_only() -> None:
    trainer, seen = _trainer()
    result = trainer.run()
    assert result.gradient_step == 10
    assert seen == [True, True]  # inside every training step
    assert not denormals_flushed()  # and put back after the run


def test_trainer_with_flush_denormal_false_leaves_the_mode_alone() -> None:
    trainer, seen = _trainer(flush_denormal=False)
    trainer.run()
    assert seen == [False, False]
