"""ICM settings per wrapped algorithm, and :func:`apply_icm` (``tdrl train ALGO TASK --icm``).

ICM is a wrapper, not an algorithm: the launcher builds ``ALGO``'s preset as usual (its
networks, budget and threshold) and, with ``--icm`` (``ExperimentConfig(icm=True)``),
hands it to :func:`apply_icm`, which wraps it in :class:`~tdrl.algorithm.modelbased.icm.ICM`
with the settings of :data:`ICM_PRESETS` for that algorithm. The settings are Tianshou's
``test/modelbased/test_dqn_icm.py`` and ``test_ppo_icm.py``: a feature net of the wrapped
network's hidden sizes (features as wide as its last hidden layer), forward and inverse
models with one hidden layer of that width, the wrapped algorithm's learning rate,
``lr_scale`` 1, ``reward_scale`` 0.01, ``forward_loss_weight`` 0.2.

>>> ICM_PRESETS["dqn"].feature_hidden_sizes, ICM_PRESETS["ppo"].lr
((128, 128), 0.0003)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets.registry import Preset

if TYPE_CHECKING:
    from tdrl.algorithm.algorithm_base import Algorithm

__all__ = ["ICM_PRESETS", "ICMPreset", "apply_icm"]


@dataclass(frozen=True)
class ICMPreset(Preset):
    """Settings of the ICM wrapper for one wrapped algorithm.

    The feature net is an MLP ``obs -> feature_hidden_sizes -> feature_dim``; the forward
    and inverse models are MLPs with ``model_hidden_sizes``. ``bonus_in_targets``: also add
    the bonus to an off-policy algorithm's n-step targets (off, as Tianshou; see
    :class:`~tdrl.algorithm.modelbased.icm.ICM`).
    """

    algo: ClassVar[str] = "icm"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "feature_dim": ("> 0", lambda v: v > 0),
        "lr_scale": (">= 0", lambda v: v >= 0),
        "reward_scale": (">= 0", lambda v: v >= 0),
        "forward_loss_weight": ("in [0, 1]", lambda v: 0 <= v <= 1),
    }

    task: str = "CartPole-v1"
    feature_dim: int = 64
    feature_hidden_sizes: tuple[int, ...] = (64,)
    model_hidden_sizes: tuple[int, ...] = (64,)
    lr: float = 3e-4
    lr_scale: float = 1.0
    reward_scale: float = 0.01
    forward_loss_weight: float = 0.2
    bonus_in_targets: bool = False


ICM_PRESETS: dict[str, ICMPreset] = {
    # Tianshou's test_dqn_icm.py: hidden sizes (128,) * 4, Adam 1e-3 for both
    "dqn": ICMPreset(
        feature_dim=128, feature_hidden_sizes=(128, 128), model_hidden_sizes=(128,), lr=1e-3
    ),
    # Tianshou's test_ppo_icm.py: hidden sizes (64, 64), Adam 3e-4 for both
    "ppo": ICMPreset(feature_dim=64, feature_hidden_sizes=(64,), model_hidden_sizes=(64,)),
}
"""ICM settings by the name of the wrapped algorithm."""


def apply_icm(
    algorithm: Algorithm, algo: str, task: str, observation_space: Any, action_space: Any
) -> Algorithm:
    """Wrap ``algorithm`` (the preset of ``algo`` for ``task``) in ICM.

    An algorithm without ICM settings, a non-``Discrete`` action space or a non-``Box``
    observation space is a one-line :class:`~tdrl.errors.PresetError`.
    """
    import gymnasium as gym
    import numpy as np

    from tdrl.algorithm.modelbased.icm import ICM, IntrinsicCuriosityModule
    from tdrl.utils.net import MLP

    if algo not in ICM_PRESETS:
        raise PresetError(
            f"--icm: no ICM settings for {algo}; ICM wraps: {', '.join(sorted(ICM_PRESETS))}"
        )
    if not isinstance(action_space, gym.spaces.Discrete):
        raise PresetError(f"--icm needs a Discrete action space; {task} has {action_space}")
    if not isinstance(observation_space, gym.spaces.Box):
        raise PresetError(f"--icm needs a Box observation space; {task} has {observation_space}")
    p = ICM_PRESETS[algo]
    obs_dim = int(np.prod(observation_space.shape))
    param = next(algorithm.parameters(), None)
    device = param.device if param is not None else None
    feature_net = MLP(obs_dim, p.feature_dim, p.feature_hidden_sizes)
    model = IntrinsicCuriosityModule(
        feature_net=feature_net,
        feature_dim=p.feature_dim,
        action_dim=int(action_space.n),
        hidden_sizes=p.model_hidden_sizes,
    ).to(device)
    return ICM(
        wrapped=algorithm,
        model=model,
        optim=p.lr,
        lr_scale=p.lr_scale,
        reward_scale=p.reward_scale,
        forward_loss_weight=p.forward_loss_weight,
        bonus_in_targets=p.bonus_in_targets,
    )
