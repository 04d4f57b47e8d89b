"""Networks and normalizers (tdrl.utils.net, tdrl.utils.normalize)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.utils.net import (
    MLP,
    ActorCritic,
    DeterministicActor,
    DiscreteActor,
    DuelingHead,
    GaussianActor,
    QCritic,
    QNet,
    VCritic,
)
from tdrl.utils.normalize import ObsNormalizer, RunningNorm


def test_mlp_shapes_and_casting() -> None:
    m = MLP(6, 3, (8, 8))
    assert m(torch.zeros(5, 6)).shape == (5, 3)
    # float64 and int observations are cast; image-like observations are flattened
    assert m(torch.zeros(5, 6, dtype=torch.float64)).dtype == torch.float32
    assert MLP(6, 2, (4,))(torch.zeros(2, 2, 3)).shape == (2, 2)
    assert MLP(6, 0, (4, 7)).output_dim == 7


def test_dueling_head_advantages_are_centred() -> None:
    torch.manual_seed(0)
    head = DuelingHead(5, 4, (8,), (8,))
    x = torch.randn(10, 5)
    q = head(x)
    v = head.value(x)
    # Q - V averages to zero over actions
    torch.testing.assert_close((q - v).mean(-1), torch.zeros(10), atol=1e-6, rtol=0)
    assert QNet(5, 4, (8,), dueling=True)(x).shape == (10, 4)
    assert QNet(5, 4, (8,))(x).shape == (10, 4)


def test_actors_and_critics() -> None:
    torch.manual_seed(0)
    obs = torch.randn(7, 3) * 50
    assert DiscreteActor(3, 4, (8,))(obs).shape == (7, 4)
    a = DeterministicActor(3, 2, (8,), max_action=1.5)(obs)
    assert a.shape == (7, 2) and bool((a.abs() <= 1.5).all())
    loc, scale = GaussianActor(3, 2, (8,), log_std_bounds=(-5.0, 1.0))(obs)
    assert loc.shape == scale.shape == (7, 2)
    assert bool((scale >= np.exp(-5.0) - 1e-6).all()) and bool((scale <= np.e + 1e-5).all())
    free = GaussianActor(3, 2, (8,), state_dependent_std=False, init_log_std=-0.5)
    _, s = free(obs)
    torch.testing.assert_close(s, torch.full((7, 2), float(np.exp(-0.5))))
    assert VCritic(3, (8,))(obs).shape == (7, 1)
    assert QCritic(3, 2, (8,))(obs, torch.zeros(7, 2)).shape == (7, 1)
    ac = ActorCritic(DiscreteActor(3, 2, (4,)), VCritic(3, (4,)))
    n_actor = sum(p.numel() for p in ac.actor.parameters())
    n_critic = sum(p.numel() for p in ac.critic.parameters())
    assert sum(p.numel() for p in ac.parameters()) == n_actor + n_critic


@settings(max_examples=25, deadline=None)
@given(
    chunks=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=5),
    seed=st.integers(0, 1000),
)
def test_running_norm_matches_full_data_moments(chunks: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    data = rng.normal(3.0, 2.0, size=(sum(chunks), 2))
    rn = RunningNorm(2)
    start = 0
    for c in chunks:
        rn.update(torch.from_numpy(data[start : start + c]))
        start += c
    np.testing.assert_allclose(rn.mean.numpy(), data.mean(0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rn.var.numpy(), data.var(0), rtol=1e-9, atol=1e-9)
    assert int(rn.count) == len(data)


def test_running_norm_checkpoint_and_normalize() -> None:
    rn = RunningNorm(3, clip=2.0)
    rn.update(torch.randn(50, 3) * 4 + 1)
    sd = rn.state_dict()
    assert set(sd) == {"mean", "var", "count"}
    rn2 = RunningNorm(3, clip=2.0)
    rn2.load_state_dict(sd)
    x = torch.randn(10, 3) * 100
    torch.testing.assert_close(rn2.normalize(x), rn.normalize(x))
    assert float(rn2.normalize(x).abs().max()) <= 2.0


def test_obs_normalizer_updates_only_in_inference_mode() -> None:
    m = ObsNormalizer(torch.nn.Identity(), 2)
    x = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    m(x)  # autograd on: a training forward, no update
    with torch.no_grad():  # target computations, no update
        m(x)
    assert int(m.norm.count) == 0
    with torch.inference_mode():  # collection
        m(x)
    assert int(m.norm.count) == 2
    m.update_stats = False
    with torch.inference_mode():
        m(x)
    assert int(m.norm.count) == 2
    assert "norm.mean" in m.state_dict()


def test_running_norm_rejects_bad_shape() -> None:
    rn = RunningNorm(3)
    with pytest.raises(ValueError, match=r"x: expected samples of shape \(3,\), got .*\(4, 5\)"):
        rn.update(torch.zeros(4, 5))
