"""benchmarks/bench_floor.py: the bare updates compute tdrl's losses (so the floor is the
same math), and a row reports every column."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from benchmarks.bench_floor import (
    FloorC51,
    FloorDQN,
    FloorRainbow,
    FloorTD3,
    _fixed_batch,
    measure,
    mlp,
)
from benchmarks.bench_roofline import preset_algorithm
from benchmarks.tianshou_builders import preset


def _tdrl(algo: str) -> tuple[object, list[torch.nn.Parameter]]:
    alg = preset_algorithm(algo, "CartPole-v1")
    return alg, list(alg.policy.model.parameters())


def _copy(dst: torch.nn.Module, src: list[torch.nn.Parameter]) -> None:
    params = list(dst.parameters())
    assert [p.shape for p in params] == [p.shape for p in src]
    with torch.no_grad():
        for d, s in zip(params, src):
            d.copy_(s)


@pytest.mark.parametrize("algo", ["c51", "dqn"])
def test_the_floor_loss_is_tdrls_loss(algo: str) -> None:
    torch.manual_seed(0)
    alg, params = _tdrl(algo)
    p = preset(algo)
    batch = _fixed_batch(gym.spaces.Discrete(2), 4, p.batch_size, p.gamma, p.n_step)
    floor = (FloorC51 if algo == "c51" else FloorDQN)(p, 4, 2, batch)
    _copy(floor.q, params)
    _copy(floor.q_old, params)
    td = TensorDict(
        {"obs": batch["obs"], "act": batch["act"], "obs_next": batch["obs_next"]},
        [p.batch_size],
    )
    if algo == "c51":
        td["target_reward"], td["target_discount"] = batch["rew"], batch["discount"]
    else:  # tdrl's own bootstrap (online argmax, target value) as the n-step return
        v = alg.next_value(batch["obs_next"])  # type: ignore[attr-defined]
        td["returns"] = batch["rew"] + batch["discount"] * v
    expected = alg(td)["loss_qvalue"].detach()  # type: ignore[operator]
    assert floor.update() == pytest.approx(float(expected), rel=1e-5)


def test_the_rainbow_floor_loss_is_tdrls_loss() -> None:
    from tdrl.algorithm.modelfree.c51 import C51

    torch.manual_seed(0)
    alg, _ = _tdrl("rainbow")
    p = preset("rainbow")
    batch = _fixed_batch(gym.spaces.Discrete(2), 4, p.batch_size, p.gamma, p.n_step, True)
    floor = FloorRainbow(p, 4, 2, batch)
    model = alg.policy.model  # type: ignore[attr-defined]
    for net in (floor.q, floor.q_old):  # same weights and the same noise as tdrl's online net
        _copy(net, list(model.parameters()))
        with torch.no_grad():
            for d, s in zip(net.buffers(), model.buffers(), strict=True):
                d.copy_(s)
    td = TensorDict({k: batch[k] for k in ("obs", "act", "obs_next", "weight")}, [p.batch_size])
    td["target_reward"], td["target_discount"] = batch["rew"], batch["discount"]
    expected = C51.forward(alg, td)["loss_qvalue"].detach()  # type: ignore[arg-type]
    assert float(floor.loss().detach()) == pytest.approx(float(expected), rel=1e-5)


def test_td3_floor_updates_the_actor_every_second_step() -> None:
    torch.manual_seed(0)
    p = preset("td3")
    batch = _fixed_batch(gym.spaces.Box(-1, 1, (1,)), 3, p.batch_size, p.gamma, p.n_step)
    floor = FloorTD3(p, 3, 1, batch)
    before = [t.clone() for t in floor.actor.parameters()]
    old = [t.clone() for t in floor.actor_old.parameters()]
    losses = [floor.update() for _ in range(3)]
    assert all(np.isfinite(losses))
    assert any(not torch.equal(a, b) for a, b in zip(before, floor.actor.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(old, floor.actor_old.parameters()))
    assert floor.step == 3


def test_mlp_layers() -> None:
    net = mlp([3, 5, 5, 1], torch.nn.Tanh())
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear", "ReLU", "Linear", "Tanh"]


def test_a_row_reports_the_three_times() -> None:
    pytest.importorskip("tianshou")  # the peer (installed by `nox -s bench` and `oracle`)
    m = measure("dqn", rounds=1, number=2)
    assert set(m) == {"floor", "tdrl", "tianshou"} and all(v > 0 for v in m.values())
