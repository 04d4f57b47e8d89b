"""``tdrl.utils.torch_utils``: a temporary train/eval mode and uniform action distributions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import distributions as D
from torch import nn

from tdrl.utils.torch_utils import create_uniform_action_dist, torch_train_mode


def _net() -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))


@pytest.mark.parametrize("start_training", [True, False])
@pytest.mark.parametrize("enabled", [True, False])
def test_mode_inside_and_restored_for_every_submodule(start_training: bool, enabled: bool) -> None:
    net = _net().train(start_training)
    with torch_train_mode(net, enabled) as yielded:
        assert yielded is net
        assert all(m.training is enabled for m in net.modules())
    assert all(m.training is start_training for m in net.modules())


def test_mode_restored_when_the_block_raises() -> None:
    net = _net().eval()
    with pytest.raises(KeyError), torch_train_mode(net):
        assert net.training
        raise KeyError("boom")
    assert not net.training and not net[2].training


def test_eval_mode_freezes_batchnorm_statistics() -> None:
    net = _net().train()
    bn = net[2]
    assert isinstance(bn, nn.BatchNorm1d) and bn.running_mean is not None
    before = bn.running_mean.clone()
    with torch_train_mode(net, False), torch.no_grad():
        net(torch.randn(8, 2) + 5.0)
    assert torch.equal(bn.running_mean, before)


@pytest.mark.parametrize("batch_size", [1, 7])
def test_box_bounds_shape_and_range(batch_size: int) -> None:
    space = gym.spaces.Box(np.array([-3.0, 0.0]), np.array([-1.0, 10.0]), dtype=np.float64)
    dist = create_uniform_action_dist(space, batch_size)
    assert isinstance(dist, D.Uniform)
    assert dist.low.shape == dist.high.shape == (batch_size, 2)
    assert dist.low.dtype == torch.float32
    samples = dist.sample(torch.Size([2000]))
    assert samples.shape == (2000, batch_size, 2)
    assert (samples[..., 0] >= -3).all() and (samples[..., 0] < -1).all()
    assert (samples[..., 1] >= 0).all() and (samples[..., 1] < 10).all()
    assert samples[..., 1].mean().item() == pytest.approx(5.0, abs=0.4)


def test_box_of_several_dims_keeps_its_shape() -> None:
    dist = create_uniform_action_dist(gym.spaces.Box(0.0, 1.0, (2, 3)), batch_size=4)
    assert dist.sample().shape == (4, 2, 3)


@pytest.mark.parametrize("batch_size", [1, 6])
def test_discrete_is_uniform_over_indices(batch_size: int) -> None:
    dist = create_uniform_action_dist(gym.spaces.Discrete(4), batch_size)
    assert isinstance(dist, D.Categorical)
    assert dist.probs.shape == (batch_size, 4)
    assert torch.allclose(dist.probs, torch.full((batch_size, 4), 0.25))
    samples = dist.sample(torch.Size([4000]))
    assert samples.shape == (4000, batch_size)
    counts = torch.bincount(samples.flatten(), minlength=4).float() / samples.numel()
    assert torch.allclose(counts, torch.full((4,), 0.25), atol=0.03)


def test_default_batch_size_is_one() -> None:
    assert create_uniform_action_dist(gym.spaces.Discrete(3)).sample().shape == (1,)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.MultiBinary(3),
        gym.spaces.MultiDiscrete([2, 3]),
        gym.spaces.Discrete(3, start=1),
        gym.spaces.Box(-np.inf, np.inf, (2,)),
        gym.spaces.Box(0.0, np.inf, (2,)),
    ],
    ids=["multibinary", "multidiscrete", "discrete-start-1", "unbounded", "half-bounded"],
)
def test_other_spaces_are_refused(space: gym.Space) -> None:
    with pytest.raises(ValueError, match="action_space"):
        create_uniform_action_dist(space)  # type: ignore[call-overload]


def test_non_positive_batch_size_is_refused() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        create_uniform_action_dist(gym.spaces.Discrete(3), 0)
