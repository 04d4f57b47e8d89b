"""The GPU path (issue 17): networks, sampled batches and replay storage on a CUDA device.

Skipped without CUDA (CI and the project's CPU machine have none); ``bash
benchmarks/gpu_check.sh`` runs them on a GPU machine (on an H200:
``benchmarks/results/gpu-2026-11-26/``, then all passing in
``benchmarks/results/gpu-2026-11-28/``). What they check:

* an update on the GPU (networks there; replay storage on the CPU or on the GPU) gives
  the CPU's losses and parameters to float tolerance;
* with the storage on the CPU, an off-policy update makes no synchronizing CUDA call
  (``torch.cuda.set_sync_debug_mode("error")``): the batch goes through pinned memory
  without blocking, n-step targets are combined on the device, the losses stay there;
* ``tdrl train ... --device cuda --buffer-device cuda`` trains end to end.

The CPU test ``test_host_sync.py`` checks the same "no host read" property everywhere.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import tdrl
from tdrl.algorithm.compile import synthetic_buffer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CASES = {"dqn": "CartPole-v1", "sac": "Pendulum-v1", "ppo": "CartPole-v1"}


def _spaces(task: str) -> tuple[gym.Space, gym.Space]:
    env = gym.make(task)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _pair(algo: str, buffer_device: str) -> tuple[Any, Any, Any, Any]:
    task = CASES[algo]
    obs_space, act_space = _spaces(task)
    algs = []
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        algs.append(
            tdrl.make_algorithm(
                algo, task, observation_space=obs_space, action_space=act_space, device=device
            )
        )
    # the same weights on both (initialised on the device, they would come from CUDA's
    # generator, not the CPU's)
    algs[1].load_state_dict(algs[0].state_dict())
    cpu_buf = synthetic_buffer(obs_space, act_space, n_envs=4, steps=64, seed=0)
    gpu_buf = synthetic_buffer(
        obs_space, act_space, n_envs=4, steps=64, seed=0, device=buffer_device
    )
    return algs[0], cpu_buf, algs[1], gpu_buf


@pytest.mark.parametrize("buffer_device", ["cpu", "cuda"])
@pytest.mark.parametrize("algo", list(CASES))
def test_gpu_update_matches_cpu(algo: str, buffer_device: str, monkeypatch: Any) -> None:
    # SAC's reparameterised noise from the CPU's generator on both sides, so the two
    # updates see the same samples (CUDA's generator draws other numbers from a seed)
    randn_like = torch.randn_like
    monkeypatch.setattr(torch, "randn_like", lambda t: randn_like(t, device="cpu").to(t.device))
    cpu, cpu_buf, gpu, gpu_buf = _pair(algo, buffer_device)
    for _ in range(3):
        torch.manual_seed(1)
        a = dict(cpu.update(cpu_buf, 32, repeat=1))
        torch.manual_seed(1)
        b = dict(gpu.update(gpu_buf, 32, repeat=1))
        for k in a:
            if k.startswith("loss"):
                assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-5), k
    for (name, p), q in zip(cpu.named_parameters(), gpu.parameters()):
        np.testing.assert_allclose(
            p.detach().numpy(), q.detach().cpu().numpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )


@pytest.mark.parametrize("algo", ["dqn", "sac"])
def test_off_policy_update_makes_no_synchronizing_call(algo: str) -> None:
    _, _, gpu, buf = _pair(algo, "cpu")
    gpu.update(buf, 32)  # first update: optimizer state, pinned staging
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        stats = gpu.update(buf, 32)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert not stats.is_materialized  # type: ignore[attr-defined]


def test_train_on_the_gpu_end_to_end(tmp_path: Any) -> None:
    from tdrl.experiment import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        "dqn",
        "CartPole-v1",
        epochs=1,
        step_per_epoch=500,
        device="cuda",
        buffer_device="cuda",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.gradient_step > 0 and result.env_step >= 500


def test_stats_of_a_cuda_graph_update_survive_the_next_updates() -> None:
    # compiled with CUDA graphs, a replay overwrites the previous replay's outputs: the
    # logged losses (read lazily) must be copies, or reading them fails
    _, _, gpu, buf = _pair("sac", "cuda")
    gpu.compile(mode="reduce-overhead")
    stats = [gpu.update(buf, 32) for _ in range(6)]
    values = [v for s in stats for k, v in dict(s).items() if k.startswith("loss")]
    assert values and all(np.isfinite(values))
