"""``SpaceInfo``: an env's shapes and bounds with Tianshou 2.0's names and values."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tdrl.utils.space_info import ActionSpaceInfo, ObservationSpaceInfo, SpaceInfo

SPACES = [
    (gym.spaces.Box(-1.0, np.array([1.0, 3.0]), (2,)), gym.spaces.Box(0, 1, (4, 3))),
    (gym.spaces.Discrete(3, start=1), gym.spaces.Discrete(5)),
]


def test_shapes_dims_and_bounds() -> None:
    cont = SpaceInfo.from_spaces(*SPACES[0])
    assert cont.action_info.action_shape == (2,) and cont.action_info.action_dim == 2
    assert (cont.action_info.min_action, cont.action_info.max_action) == (-1.0, 3.0)
    assert cont.observation_info.obs_shape == (4, 3) and cont.observation_info.obs_dim == 12
    disc = SpaceInfo.from_spaces(*SPACES[1])
    assert disc.action_info.action_dim == 3 and disc.action_info.max_action == 3.0
    assert disc.observation_info.obs_dim == 5


def test_other_spaces_are_refused_by_name() -> None:
    space = gym.spaces.MultiBinary(3)
    for info in (ActionSpaceInfo, ObservationSpaceInfo):
        with pytest.raises(ValueError, match="expected a gymnasium Box or Discrete space"):
            info.from_space(space)


@pytest.mark.parametrize("spaces", SPACES)
def test_the_values_are_tianshous(spaces: tuple[gym.Space, gym.Space]) -> None:
    ts = pytest.importorskip("tianshou.utils.space_info")
    mine, theirs = SpaceInfo.from_spaces(*spaces), ts.SpaceInfo.from_spaces(*spaces)
    for part in ("action_info", "observation_info"):
        a, b = getattr(mine, part), getattr(theirs, part)
        for name in (
            "action_shape",
            "min_action",
            "max_action",
            "action_dim",
            "obs_shape",
            "obs_dim",
        ):
            if hasattr(b, name):
                assert getattr(a, name) == getattr(b, name), (part, name)
