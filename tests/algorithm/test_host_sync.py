"""An update never reads a device-resident tensor on the host (issue 17).

On a GPU, ``.item()``, ``.tolist()``, ``float(t)``, ``bool(t)``, ``.cpu()`` or ``.numpy()``
of a tensor that lives on the device makes the host wait until every queued kernel has
run. This CPU test finds such reads without a GPU: a ``TorchFunctionMode`` marks what
would live on the device (the algorithm's parameters and buffers, the sampled batch after
``_on_device``, and everything computed from them) and records every host read of a
marked tensor during ``update``. Reads of the replay buffer's own CPU arrays (indices,
rewards, flags) are not device reads and are allowed.

Deliberate exceptions, each said here and in ``docs/scaling.md``:

* on-policy algorithms read V(s) and V(s') on the host once per update, in
  ``preprocess``: GAE is a sequential scan over the whole collected buffer (a numba loop);
  their minibatch loop, the hot path, is checked;
* NPG/TRPO's line search and KL checks decide on the host by definition, and PSRL is a
  tabular numpy model: they are not listed.
"""

from __future__ import annotations

import weakref
from typing import Any

import gymnasium as gym
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import tdrl
from tdrl import registry
from tdrl.algorithm import distributional
from tdrl.algorithm.base import Algorithm
from tdrl.algorithm.compile import synthetic_buffer
from tdrl.algorithm.update_stats import UpdateStats

HOST_READS = {
    torch.Tensor.item,
    torch.Tensor.tolist,
    torch.Tensor.numpy,
    torch.Tensor.cpu,
    torch.Tensor.__float__,
    torch.Tensor.__int__,
    torch.Tensor.__bool__,
    torch.Tensor.__index__,
    torch.Tensor.__array__,
}


class DeviceReadSpy(TorchFunctionMode):
    """Marks "device" tensors and their descendants; records host reads of marked ones."""

    def __init__(self, roots: list[torch.Tensor]) -> None:
        super().__init__()
        self._marked: dict[int, weakref.ref[torch.Tensor]] = {}
        self.reads: list[str] = []
        for t in roots:
            self.mark(t)

    def mark(self, t: Any) -> None:
        if isinstance(t, torch.Tensor):
            self._marked[id(t)] = weakref.ref(t)

    def is_marked(self, t: Any) -> bool:
        ref = self._marked.get(id(t)) if isinstance(t, torch.Tensor) else None
        return ref is not None and ref() is t

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
        kwargs = kwargs or {}
        inputs, _ = tree_flatten((args, kwargs))
        from_device = any(self.is_marked(t) for t in inputs)
        if func in HOST_READS and from_device:
            self.reads.append(getattr(func, "__name__", str(func)))
        out = func(*args, **kwargs)
        if from_device:
            for t in tree_flatten(out)[0]:
                self.mark(t)
        return out


def _device_tensors(alg: Algorithm) -> list[torch.Tensor]:
    return [*alg.parameters(), *alg.buffers()]


def _build(algo: str) -> tuple[Algorithm, Any, int]:
    task = registry.default_task(algo)
    env = gym.make(task)
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    torch.manual_seed(0)
    dataset = None
    if registry.entry(algo, task).needs_dataset:
        dataset = synthetic_buffer(obs_space, act_space, n_envs=4, steps=40, seed=1)
    alg = tdrl.make_algorithm(
        algo, task, observation_space=obs_space, action_space=act_space, dataset=dataset
    )
    stored = act_space
    if algo == "bdqn":  # the buffer keeps bin indices of the Box
        p = alg.policy
        stored = gym.spaces.MultiDiscrete([p.n_actions] * p.num_branches)  # type: ignore[operator]
    buf = synthetic_buffer(obs_space, stored, n_envs=4, steps=40, seed=0)
    return alg, buf, 32


OFF_POLICY = [
    "dqn", "c51", "qrdqn", "iqn", "fqf", "rainbow", "bdqn", "discrete_sac",
    "sac", "td3", "ddpg", "redq",
    "bc", "bcq", "cql", "td3_bc", "iql", "discrete_bcq", "discrete_cql", "discrete_crr",
]  # fmt: skip
ON_POLICY = ["ppo", "a2c", "reinforce", "gail"]


@pytest.mark.parametrize("algo", OFF_POLICY)
def test_off_policy_update_reads_nothing_from_the_device(
    algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the compiled quantile pass (QR-DQN, IQN, FQF, discrete CQL) takes CPU tensors only, so
    # a device never reaches it; here the CPU stands in for a device: take the device path
    monkeypatch.setattr(distributional, "fused_quantile_huber", lambda *args: None)
    alg, buf, bs = _build(algo)
    alg.update(buf, bs)  # first update: lazy optimizer state, targets
    spy = DeviceReadSpy(_device_tensors(alg))
    to_device = alg._on_device

    def on_device(batch: Any) -> Any:  # the sampled batch is moved to the device here
        out = to_device(batch)  # a batch, or one column of it
        leaves = [out] if isinstance(out, torch.Tensor) else out.values(True, True)
        for t in leaves:
            spy.mark(t)
        return out

    monkeypatch.setattr(alg, "_on_device", on_device)
    with spy:
        stats = alg.update(buf, bs)
    assert spy.reads == [], f"{algo}: host reads of device tensors: {spy.reads}"
    assert isinstance(stats, UpdateStats) and not stats.is_materialized
    assert all(isinstance(v, float) for v in stats.values())  # read on demand


@pytest.mark.parametrize("algo", ON_POLICY)
def test_on_policy_minibatch_loop_reads_nothing_from_the_device(algo: str) -> None:
    alg, buf, bs = _build(algo)
    inner = alg._update_with_batch
    reads: list[str] = []

    def checked(batch: Any, batch_size: int | None, repeat: int) -> Any:
        leaves = list(batch.values(include_nested=True, leaves_only=True))
        with DeviceReadSpy(_device_tensors(alg) + leaves) as spy:
            out = inner(batch, batch_size, repeat)
        reads.extend(spy.reads)
        return out

    alg._update_with_batch = checked  # type: ignore[method-assign]
    stats = alg.update(buf, bs, repeat=2)
    assert reads == [], f"{algo}: host reads of device tensors: {reads}"
    assert stats["gradient_steps"] >= 2


def test_the_spy_finds_a_host_read() -> None:
    """The check can fail: ``.item()`` on a parameter's product is caught, a plain CPU
    tensor's is not."""
    w = torch.nn.Parameter(torch.ones(2))
    with DeviceReadSpy([w]) as spy:
        (w * 2).sum().item()
        torch.ones(2).sum().item()
        float(w[0])
    assert spy.reads == ["item", "__float__"]
