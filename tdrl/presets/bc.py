"""Behaviour-cloning presets (plain data; the builder imports torch when called).

Offline (``tdrl train bc TASK --dataset FILE.hdf5``), from the datasets that
``tdrl gather`` writes:

* ``Pendulum-v1`` (continuous, from ``tdrl gather sac Pendulum-v1``; threshold -400): a
  128x128 tanh-bounded actor fitted to the raw actions by MSE, Adam 1e-3, batch 256.
  Tianshou has no Pendulum BC test; its ``examples/offline/d4rl_il.py`` uses 256x256, lr
  1e-4, batch 256 on MuJoCo: the larger lr and smaller net reach the threshold here in far
  fewer gradient steps.
* ``CartPole-v1`` (discrete, from ``tdrl gather dqn CartPole-v1``; threshold 185): a
  128x128 ReLU network's logits, cross-entropy, Adam 1e-3, batch 256.

The success thresholds (-400, 185) are the issue's; the registry's stop threshold of the
task (-250, 195) still stops a run early when a test reaches it.

>>> p = BCPreset()
>>> p.task, p.threshold, p.batch_size
('Pendulum-v1', -400.0, 256)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets.common import OfflineFields, Rules, among, offline_dims, register_classic

__all__ = ["BCPreset", "build"]


@dataclass(frozen=True)
class BCPreset(OfflineFields):
    """BC hyperparameters and offline-trainer settings (defaults: Pendulum-v1).

    ``step_per_epoch`` counts gradient steps; ``output`` is how a discrete actor's output
    is read (``"logits"``: cross-entropy; ``"probs"``: NLL of a softmax output).
    """

    algo: ClassVar[str] = "bc"
    rules: ClassVar[Rules] = {"output": among("logits", "probs")}

    task: str = "Pendulum-v1"
    threshold: float | None = -400.0
    hidden_sizes: tuple[int, ...] = (128, 128)
    lr: float = 1e-3
    output: str = "logits"


def build(p: BCPreset, observation_space: Any, action_space: Any, dataset: Any = None) -> Any:
    """Create the actor, policy and :class:`~tdrl.algorithm.imitation.bc.BC`; a dataset
    whose observations or actions do not fit the spaces is a one-line error.

    >>> import gymnasium as gym
    >>> alg = build(BCPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (4,)),
    ...             gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.policy.action_type
    ('BC', 'discrete')
    """
    import gymnasium as gym
    from torch import nn

    from tdrl.algorithm.imitation.bc import BC, ImitationPolicy
    from tdrl.utils.net import MLP, DeterministicActor

    d, a = offline_dims(dataset, observation_space, action_space)
    actor: nn.Module
    if not isinstance(action_space, gym.spaces.Discrete):
        actor = DeterministicActor(d, a, p.hidden_sizes)
    elif p.output == "probs":
        actor = nn.Sequential(MLP(d, a, p.hidden_sizes), nn.Softmax(dim=-1))
    else:
        actor = MLP(d, a, p.hidden_sizes, output_activation=None)
    policy = ImitationPolicy(
        actor=actor,
        action_space=action_space,
        observation_space=observation_space,
        output=p.output,  # type: ignore[arg-type]
        action_scaling=isinstance(action_space, gym.spaces.Box),
    )
    return BC(policy=policy, optim=p.lr)


_OFFLINE: dict[str, Any] = {"trainer": "offline", "exploration_noise": False, "action_space": "any"}
register_classic(__name__, BCPreset(), **_OFFLINE)
register_classic(
    __name__, BCPreset(task="CartPole-v1", threshold=185.0), task="CartPole-v1", **_OFFLINE
)
