"""TRPO: the importance-sampled surrogate, the KL-bounded step and its line search,
TorchRL batches, the preset, and Tianshou 2.0.1 as the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tdrl.algorithm.modelfree.npg import NPG, flat_grad
from tdrl.algorithm.modelfree.trpo import TRPO
from tests.algorithm.test_npg import (
    _grads,
    assert_matches_tianshou,
    make_npg,
    minibatch,
    rollout,
    run_against_tianshou,
    torchrl_batch,
)


def make_trpo(continuous: bool = False, **kw: Any) -> TRPO:
    alg = make_npg(continuous, cls=TRPO, **kw)
    assert isinstance(alg, TRPO)
    return alg


def test_surrogate_is_the_ratio_objective_with_npg_gradient() -> None:
    trpo, npg = make_trpo(True), make_npg(True)
    npg.load_state_dict(trpo.state_dict())
    td = minibatch(trpo, continuous=True)
    # at pi = pi_old the ratio is 1: the loss is -mean(A) (0 with normalized advantages)
    loss = trpo.actor_losses(td)["loss_objective"]
    assert abs(loss.item()) < 1e-6
    params_t = list(trpo.policy.actor.parameters())
    params_n = list(npg.policy.actor.parameters())
    g_t = flat_grad(loss, params_t)
    g_n = flat_grad(npg.actor_losses(td)["loss_objective"], params_n)
    torch.testing.assert_close(g_t, g_n, atol=1e-6, rtol=1e-5)
    # away from pi_old: exp(log pi - logp_old)
    td["logp_old"] = td["logp_old"] + 0.5
    expected = -(torch.exp(torch.tensor(-0.5)) * td["adv"]).mean()
    assert trpo.actor_losses(td)["loss_objective"].item() == pytest.approx(
        expected.item(), abs=1e-6
    )


@pytest.mark.parametrize(
    ("continuous", "max_kl", "coeff", "backtracks"),
    [(False, 0.002, 0.8, 0), (True, 0.1, 0.5, 1)],  # the second rejects its first trial
)
def test_step_is_the_largest_of_the_quadratic_kl_model_shrunk_per_rejection(
    continuous: bool, max_kl: float, coeff: float, backtracks: int
) -> None:
    alg = make_trpo(continuous, max_kl=max_kl, backtrack_coeff=coeff)
    td = minibatch(alg, continuous)
    params = list(alg.policy.actor.parameters())
    before = torch.cat([p.detach().reshape(-1) for p in params])
    shs: list[torch.Tensor] = []
    step_along = alg.step_along

    def spy(td_: Any, old: Any, params_: Any, flat: Any, d: Any, fvp: Any, loss: Any) -> Any:
        shs.append(d.dot(fvp(d)))
        return step_along(td_, old, params_, flat, d, fvp, loss)

    alg.step_along = spy  # type: ignore[method-assign,assignment]
    stats = alg.actor_step(td)
    beta0 = float(np.sqrt(2 * max_kl / shs[0].item()))
    assert stats["backtracks"].item() == backtracks
    assert stats["step_size"].item() == pytest.approx(beta0 * coeff**backtracks, rel=1e-5)
    assert 0 < stats["kl"].item() < max_kl
    after = torch.cat([p.detach().reshape(-1) for p in params])
    assert not torch.equal(before, after)
    with torch.no_grad():
        assert alg.actor_losses(td)["loss_objective"] < stats["loss_objective"]


def test_failed_line_search_keeps_the_actor() -> None:
    alg = make_trpo(max_backtracks=3)
    td = minibatch(alg)
    surrogate = alg.surrogate

    def never_better(td_: Any, dist: Any) -> torch.Tensor:
        value = surrogate(td_, dist)
        return value if torch.is_grad_enabled() else value + 1.0  # trials never improve

    alg.surrogate = never_better  # type: ignore[method-assign,assignment]
    before = [p.detach().clone() for p in alg.policy.actor.parameters()]
    stats = alg.actor_step(td)
    for a, b in zip(before, alg.policy.actor.parameters()):
        assert torch.equal(a, b)
    assert stats["step_size"].item() == 0.0 and stats["backtracks"].item() == 3


def test_update_logs_step_size_and_backtracks() -> None:
    buf = rollout(True)
    alg = make_trpo(True)
    stats = alg.update(buf, batch_size=16, repeat=2)
    assert set(stats) == {
        "loss",
        "loss_objective",
        "loss_critic",
        "kl",
        "step_size",
        "backtracks",
        "gradient_steps",
    }
    assert stats["step_size"] > 0 and 0 < stats["kl"] < alg.max_kl
    assert all(np.isfinite(v) for v in stats.values())


def test_zero_policy_gradient_takes_no_step() -> None:
    alg = make_trpo(advantage_normalization=False)
    td = minibatch(alg)
    td["adv"] = torch.zeros_like(td["adv"])
    before = [p.detach().clone() for p in alg.policy.actor.parameters()]
    stats = alg.actor_step(td)
    assert stats["step_size"].item() == 0.0
    for a, b in zip(before, alg.policy.actor.parameters()):
        assert torch.equal(a, b)


def test_torchrl_batch_terms_reach_only_their_networks() -> None:
    alg = make_trpo(True)
    alg.set_keys(observation="observation", action="action")
    td = torchrl_batch(alg)
    out = alg(td)
    assert set(out.keys()) == {"loss_objective", "loss_critic"}
    # the policy's own samples: ratio 1
    torch.testing.assert_close(td["logp_old"].reshape(-1), td["action_log_prob"].reshape(-1))
    assert _grads(alg, out["loss_objective"]) == {
        n for n, _ in alg.named_parameters() if n.startswith("policy.actor.")
    }
    assert _grads(alg, out["loss_critic"]) == {
        n for n, _ in alg.named_parameters() if n.startswith("critic.")
    }
    stats = alg.actor_step(td)
    assert 0 < stats["kl"].item() < alg.max_kl


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_kl": 0.0}, r"max_kl: expected a value > 0, got 0\.0"),
        ({"backtrack_coeff": 1.0}, r"backtrack_coeff: expected a value in \(0, 1\), got 1\.0"),
        ({"max_backtracks": 0}, "max_backtracks: expected an int >= 1, got 0"),
        ({"optim_critic_iters": 0}, "optim_critic_iters: expected an int >= 1, got 0"),
    ],
)
def test_argument_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_trpo(**kwargs)


def test_preset_builds_trpo() -> None:
    import tdrl

    alg = tdrl.make_algorithm("trpo", "Pendulum-v1")
    assert isinstance(alg, TRPO) and isinstance(alg, NPG)
    assert alg.max_kl == 0.01 and alg.gamma == 0.95
    assert type(tdrl.make_algorithm("trpo", "CartPole-v1")).__name__ == "TRPO"


@pytest.mark.parametrize(
    ("continuous", "max_kl", "batch_size", "steps"),
    [
        (True, 0.005, None, 2),
        (False, 0.005, None, 2),
        (True, 0.1, None, 2),  # 0.1: the line search backtracks once
        (True, 0.005, 20, 4),  # 48 samples: minibatches of 20 + 28
    ],
)
def test_update_matches_tianshou_exactly(
    continuous: bool, max_kl: float, batch_size: int | None, steps: int
) -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm import TRPO as TTRPO

    kw = dict(
        gamma=0.95,
        gae_lambda=0.9,
        return_scaling=True,
        advantage_normalization=True,
        optim_critic_iters=3,
        max_kl=max_kl,
        backtrack_coeff=0.8,
        max_backtracks=10,
    )
    r = run_against_tianshou(TRPO, TTRPO, continuous, repeat=2, batch_size=batch_size, **kw)
    assert_matches_tianshou(r, steps)
    # the accepted step sizes (mean over the minibatches)
    assert r["got"]["step_size"] == pytest.approx(r["expected"].step_size.mean, rel=1e-5)
    if max_kl == 0.1:
        assert r["got"]["backtracks"] > 0


@pytest.mark.slow
def test_trpo_reaches_pendulum_threshold(tmp_path: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="trpo",
            task="Pendulum-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= -250.0
