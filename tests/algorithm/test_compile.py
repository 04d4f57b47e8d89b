"""``algorithm.compile()``: compiled updates agree with eager ones, one test per family.

Q-learning (DQN), actor-critic (SAC) and policy-gradient (PPO) run the same updates on
identical copies, one eager and one compiled; losses and parameters must agree to float
tolerance. The default suite uses ``backend="aot_eager"`` (tracing, forward and backward
graphs, no code generation); the inductor variants are slow (a first compile takes tens
of seconds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch._dynamo as dynamo

from tdrl.algorithm.base import Algorithm, within_training_step
from tdrl.algorithm.compile import compile_options, is_compiled, uncompile, warmup
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.algorithm.modelfree.sac import SAC, SACPolicy
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DiscreteActor, GaussianActor, QCritic, QNet, VCritic

pytestmark = pytest.mark.slow  # inductor compiles: tens of seconds; CI runs them in `nox -s slow`


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    dynamo.reset()


def _buffer(obs_dim: int, act: Callable[[np.random.Generator], np.ndarray], n: int = 60) -> Any:
    rng = np.random.default_rng(0)
    buf = VectorReplayBuffer(4 * n, 4, seed=0)
    for t in range(n):
        buf.add(
            {
                "obs": rng.normal(size=(4, obs_dim)).astype(np.float32),
                "act": act(rng),
                "rew": rng.normal(size=4).astype(np.float32),
                "terminated": rng.random(4) < 0.05,
                "truncated": np.full(4, t % 25 == 24),
                "obs_next": rng.normal(size=(4, obs_dim)).astype(np.float32),
            }
        )
    return buf


def _dqn() -> tuple[Algorithm, Any, int]:
    torch.manual_seed(0)
    policy = DQNPolicy(model=QNet(4, 2, (32, 32)), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=policy, optim=1e-3, gamma=0.9, n_step=3, target_update_freq=2)
    return alg, _buffer(4, lambda r: r.integers(0, 2, 4)), 32


def _sac() -> tuple[Algorithm, Any, int]:
    torch.manual_seed(0)
    space = gym.spaces.Box(-1.0, 1.0, (2,))
    policy = SACPolicy(actor=GaussianActor(3, 2, (32,)), action_space=space)
    alg = SAC(policy=policy, critic=QCritic(3, 2, (32,)), alpha=0.2, tau=0.05)
    return alg, _buffer(3, lambda r: r.uniform(-1, 1, (4, 2)).astype(np.float32)), 32


def _sac_auto_alpha() -> tuple[Algorithm, Any, int]:
    # the actor stage has two optimizer steps (actor, temperature) over one compiled graph
    from tdrl.algorithm.modelfree.sac import AutoAlpha

    torch.manual_seed(0)
    space = gym.spaces.Box(-1.0, 1.0, (2,))
    policy = SACPolicy(actor=GaussianActor(3, 2, (32,)), action_space=space)
    alpha = AutoAlpha("auto", log_alpha=float(np.log(0.2)), optim=3e-4)
    alg = SAC(policy=policy, critic=QCritic(3, 2, (32,)), alpha=alpha, tau=0.05)
    return alg, _buffer(3, lambda r: r.uniform(-1, 1, (4, 2)).astype(np.float32)), 32


def _ppo() -> tuple[Algorithm, Any, int]:
    torch.manual_seed(0)
    policy = ActorPolicy(actor=DiscreteActor(3, 2, (16,)), action_space=gym.spaces.Discrete(2))
    alg = PPO(policy=policy, critic=VCritic(3, (16,)), max_grad_norm=0.5)
    return alg, _buffer(3, lambda r: r.integers(0, 2, 4)), 64


FAMILIES = {"dqn": _dqn, "sac": _sac, "sac_auto_alpha": _sac_auto_alpha, "ppo": _ppo}


def _same_updates(
    make: Callable[[], tuple[Algorithm, Any, int]], backend: str, optimizer: bool | None = None
) -> None:
    # two independent builds (same seed): a deepcopy would cut the target networks' sharing
    eager, buf, batch_size = make()
    compiled, buf_c, _ = make()
    compiled.compile(backend=backend, compile_optimizer=optimizer)
    compiled_steps = ["step" in gs.__dict__ for gs in compiled._grad_steps]
    assert all(compiled_steps) if optimizer else not any(compiled_steps)  # CPU default: eager
    assert is_compiled(compiled) and not is_compiled(eager)
    for step in range(3):
        torch.manual_seed(step)
        stats_e = eager.update(buf, batch_size, repeat=2)
        torch.manual_seed(step)
        stats_c = compiled.update(buf_c, batch_size, repeat=2)
        assert stats_e.keys() == stats_c.keys()
        for key in stats_e:
            assert stats_c[key] == pytest.approx(stats_e[key], rel=1e-4, abs=1e-5), key
    for (name, p_e), (_, p_c) in zip(eager.named_parameters(), compiled.named_parameters()):
        torch.testing.assert_close(p_c, p_e, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_compiled_update_matches_eager(family: str) -> None:
    _same_updates(FAMILIES[family], "aot_eager")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_compiled_optimizer_step_matches_eager(family: str) -> None:
    """``compile_optimizer=True`` (the CUDA default) also compiles clipping + step."""
    _same_updates(FAMILIES[family], "aot_eager", optimizer=True)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_inductor_update_matches_eager(family: str) -> None:
    _same_updates(FAMILIES[family], "inductor")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_loss_stages_have_no_graph_breaks(family: str) -> None:
    alg, buf, batch_size = FAMILIES[family]()
    with within_training_step(alg.policy):
        if alg.on_policy:
            idx = buf.sample_indices(0)
            batch = alg.preprocess(buf[idx], buf, idx)
        else:
            batch, idx = buf.sample(batch_size)
            batch = alg.preprocess(batch, buf, idx)
        for stage in alg._stages:
            explained = dynamo.explain(stage.losses)(batch)
            assert explained.graph_break_count == 0, explained.break_reasons


def test_torchrl_forward_uses_the_compiled_stages() -> None:
    alg, buf, _ = _dqn()
    batch, idx = buf.sample(16)
    batch = alg.preprocess(batch, buf, idx)
    eager = alg(batch)
    alg.compile(backend="aot_eager")
    compiled = alg(batch)
    for key in eager.keys():  # noqa: SIM118 (iterating a TensorDict walks its rows)
        torch.testing.assert_close(compiled[key], eager[key])


def test_warmup_compiles_and_restores_everything() -> None:
    alg, buf, batch_size = _sac()
    reference, buf_ref, _ = _sac()
    alg.compile(backend="aot_eager")
    torch.manual_seed(5)
    seconds = warmup(alg, buf, batch_size)
    assert seconds > 0
    for (name, p), (_, q) in zip(alg.state_dict().items(), reference.state_dict().items()):
        if isinstance(p, torch.Tensor):
            torch.testing.assert_close(p, q, msg=name)
    assert alg._stage_calls == reference._stage_calls == 0
    # the next update is the one a fresh eager copy makes (same batch, same RNG draws)
    torch.manual_seed(6)
    got = alg.update(buf, batch_size)
    torch.manual_seed(6)
    want = reference.update(buf_ref, batch_size)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-5), key


def test_uncompile_and_recompile() -> None:
    alg, _, _ = _ppo()
    alg.compile(backend="aot_eager", dynamic=True)
    assert compile_options(alg) == {
        "mode": None,
        "backend": "aot_eager",
        "fullgraph": False,
        "dynamic": True,
        "compile_optimizer": None,
    }
    alg.compile(backend="eager")  # compiling again replaces the options
    assert compile_options(alg)["backend"] == "eager"
    uncompile(alg)
    assert not is_compiled(alg) and compile_options(alg) == {}
    assert all("step" not in gs.__dict__ for gs in alg._grad_steps)


def test_bad_arguments_are_named() -> None:
    alg, _, _ = _dqn()
    with pytest.raises(ValueError, match=r"mode: expected one of .*got 'fast'"):
        alg.compile(mode="fast")
    with pytest.raises(ValueError, match=r"backend: expected a backend name or a callable"):
        alg.compile(backend="")
    assert not is_compiled(alg)


def test_warmup_on_a_synthetic_buffer_before_the_first_collect() -> None:
    from tdrl.algorithm.compile import synthetic_buffer

    alg, buf, batch_size = _ppo()
    reference, buf_ref, _ = _ppo()
    alg.compile(backend="aot_eager")
    scratch = synthetic_buffer(
        gym.spaces.Box(-1.0, 1.0, (3,), dtype=np.float32), gym.spaces.Discrete(2), 4, 30
    )
    assert len(scratch) == 120
    warmup(alg, scratch, batch_size)
    torch.manual_seed(1)
    got = alg.update(buf, batch_size, repeat=2)
    torch.manual_seed(1)
    want = reference.update(buf_ref, batch_size, repeat=2)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-5), key


@pytest.mark.parametrize("family", ["sac", "ppo"])
def test_compare_with_eager_times_both_and_restores_everything(family: str) -> None:
    from tdrl.algorithm.compile import compare_with_eager

    build = _sac if family == "sac" else _ppo
    alg, buf, batch_size = build()
    reference, _, _ = build()
    alg.compile(backend="aot_eager")
    compiled_losses = [stage.losses for stage in alg._stages]
    warmup(alg, buf, batch_size)
    fast, slow = compare_with_eager(alg, buf, batch_size, repeats=2)
    assert fast > 0 and slow > 0
    assert [stage.losses for stage in alg._stages] == compiled_losses  # still compiled
    for (name, p), (_, q) in zip(alg.state_dict().items(), reference.state_dict().items()):
        if isinstance(p, torch.Tensor):
            torch.testing.assert_close(p, q, msg=name)
    uncompile(alg)
    with pytest.raises(ValueError, match="expected a compiled algorithm"):
        compare_with_eager(alg, buf, batch_size)


def test_a_stage_of_several_steps_is_compiled_without_cuda_graphs(monkeypatch: Any) -> None:
    # CUDA graph trees overwrite what SAC's actor graph saved for the temperature's backward
    # (H200, 2026-11-28): that stage opts out of CUDA graphs, the one-step stages keep them
    seen: list[tuple[str, bool]] = []

    def record(fn: Any, **kwargs: Any) -> Any:
        seen.append((getattr(fn, "__name__", ""), kwargs["options"]["triton.cudagraphs"]))
        return fn

    monkeypatch.setattr(torch, "compile", record)
    alg, _, _ = _sac_auto_alpha()
    alg.compile(mode="reduce-overhead", compile_optimizer=False)
    steps = [len(stage.steps) for stage in alg._stages]
    assert sorted(steps) == [1, 2]
    assert [graphs for _, graphs in seen] == [n == 1 for n in steps]
