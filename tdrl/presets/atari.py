"""Atari presets of the DQN family (plain data; the builders import torch when called).

One ``atari`` family preset each for DQN, C51, QR-DQN, IQN, FQF and Rainbow, with the
hyperparameters of Tianshou 2.0.1's ``examples/atari/atari_<algo>.py`` (the file and value are
cited beside each field that differs between them), on the DeepMind wrappers
(``env_wrapper="tdrl.env.atari:wrap_deepmind"``: noop reset, frame skip 4 with max-pool,
episodic life, fire reset, 84x84 grayscale, reward clipping, 4 stacked frames) and the Nature
CNN (:mod:`tdrl.utils.net_atari`). The default task is ``PongNoFrameskip-v4`` (the ids the
wrappers expect are the frame-skip-free ``...NoFrameskip-v4`` ones ale-py registers).

Common settings, all from those examples: Adam, gamma 0.99, 3-step returns, a target sync
every 500 gradient steps, a 100k buffer, 10 training and 10 test envs, 10 env steps per
collect and 0.1 gradient steps of 32 samples per env step, epochs of 100k env steps (100 of
them), epsilon annealed linearly from 1.0 to 0.05 over the first 1M env steps (0.005 when
testing), a warm-up of ``batch_size * training_num`` = 320 env steps, raw 0..255 pixels into
the network (``scale_obs=False``).

What a launcher should do with the fields beyond the network and the algorithm:

* ``frames_stack``: the replay buffer keeps one frame per step and rebuilds the stack when
  sampling: ``VectorReplayBuffer(buffer_size, training_num, stack_num=frames_stack,
  save_only_last_obs=True, ignore_obs_next=True)``, as Tianshou's examples do;
* ``eps_train`` -> ``eps_train_final`` over ``eps_decay_steps`` env steps: the training
  epsilon each training step, ``LinearSchedule(eps_train, eps_train_final,
  eps_decay_steps)(env_step)`` (:mod:`tdrl.algorithm.exploration`); until a launcher applies
  it, the builders start the policy at the schedule's final value ``eps_train_final`` (a
  constant epsilon);
* Rainbow's ``prioritized_replay``, ``alpha``, ``beta`` (annealed to ``beta_final`` over
  ``beta_anneal_steps`` env steps) and ``weight_norm``: a ``PrioritizedVectorReplayBuffer``
  with the same compact frame options;
* test envs: ``wrap_deepmind(env, preset, training=False)`` (no episodic life, no reward
  clipping: test returns are game scores).

>>> p = AtariDQNPreset()
>>> p.task, p.lr, p.n_step, p.target_update_freq, p.buffer_size, p.frames_stack
('PongNoFrameskip-v4', 0.0001, 3, 500, 100000, 4)
>>> AtariFQFPreset().lr, AtariRainbowPreset().lr, AtariRainbowPreset().alpha
(5e-05, 6.25e-05, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_1, AT_LEAST_2, NONNEG, UNIT, QLearningFields, Rules
from tdrl.presets.fqf import FQF_RULES, fqf_learner
from tdrl.presets.iqn import IQN_RULES, IQN_SAMPLES
from tdrl.presets.registry import Preset, register

__all__ = [
    "AtariC51Preset",
    "AtariDQNPreset",
    "AtariFQFPreset",
    "AtariIQNPreset",
    "AtariPreset",
    "AtariQRDQNPreset",
    "AtariRainbowPreset",
    "build_c51",
    "build_dqn",
    "build_fqf",
    "build_iqn",
    "build_qrdqn",
    "build_rainbow",
]


@dataclass(frozen=True)
class AtariPreset(QLearningFields):
    """Settings every Atari preset shares (Tianshou's Atari examples; module docstring).

    ``hidden_sizes`` are the hidden widths of the head on the Nature CNN's 3136 features;
    ``frames_stack`` the frames per observation (wrapper and replay buffer); ``scale_obs``
    divides the pixels by 255 inside the network. The Q-learning fields not listed keep
    :class:`~tdrl.presets.common.QLearningFields`' values (the examples' too).
    """

    rules: ClassVar[Rules] = {
        "frames_stack": AT_LEAST_1,
        "eps_train_final": UNIT,
        "eps_decay_steps": AT_LEAST_1,
    }

    task: str = "PongNoFrameskip-v4"
    frames_stack: int = 4
    scale_obs: bool = False
    hidden_sizes: tuple[int, ...] = (512,)
    lr: float = 1e-4
    gamma: float = 0.99
    target_update_freq: int = 500
    eps_train: float = 1.0
    eps_train_final: float = 0.05
    eps_decay_steps: int = 1_000_000
    eps_test: float = 0.005
    buffer_size: int = 100_000
    test_num: int = 10
    warmup_steps: int = 320  # Tianshou: collect(n_step=batch_size * num_training_envs)
    max_epochs: int = 100
    step_per_epoch: int = 100_000
    batch_size: int = 32


@dataclass(frozen=True)
class AtariDQNPreset(AtariPreset):
    """DQN on Atari (``examples/atari/atari_dqn.py``); ``dueling``: a dueling head.

    >>> AtariDQNPreset().hidden_sizes
    (512,)
    """

    algo: ClassVar[str] = "dqn"

    dueling: bool = False


@dataclass(frozen=True)
class AtariC51Preset(AtariPreset):
    """C51 on Atari (``examples/atari/atari_c51.py``): 51 atoms on ``[-10, 10]``.

    >>> AtariC51Preset(v_min=1.0, v_max=1.0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: c51 preset field 'v_max': expected a float > v_min = 1.0, got 1.0
    """

    algo: ClassVar[str] = "c51"
    rules: ClassVar[Rules] = {**AtariPreset.rules, "num_atoms": AT_LEAST_2}

    num_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        common.check_support(self)


@dataclass(frozen=True)
class AtariQRDQNPreset(AtariPreset):
    """QR-DQN on Atari (``examples/atari/atari_qrdqn.py``): 200 quantiles.

    >>> AtariQRDQNPreset().num_quantiles
    200
    """

    algo: ClassVar[str] = "qrdqn"
    rules: ClassVar[Rules] = {**AtariPreset.rules, "num_quantiles": AT_LEAST_2}

    num_quantiles: int = 200


@dataclass(frozen=True)
class AtariIQNPreset(AtariPreset):
    """IQN on Atari (``examples/atari/atari_iqn.py``): 64 cosines, 32 fractions to act,
    8 online and 8 target fractions per sample, ``f`` with one 512 hidden layer
    (``hidden_sizes``).

    >>> AtariIQNPreset().sample_size, AtariIQNPreset().num_cosines
    (32, 64)
    """

    algo: ClassVar[str] = "iqn"
    rules: ClassVar[Rules] = {**AtariPreset.rules, **IQN_RULES}

    num_cosines: int = 64
    sample_size: int = 32
    online_sample_size: int = 8
    target_sample_size: int = 8


@dataclass(frozen=True)
class AtariFQFPreset(AtariPreset):
    """FQF on Atari (``examples/atari/atari_fqf.py``): Adam 5e-5 for the quantile function,
    RMSprop 2.5e-9 for the fraction proposal, 32 fractions, 64 cosines, entropy coefficient 10.

    The example builds its policy without an inference epsilon (its ``test_fn`` sets the
    training one), so it tests greedily; ``eps_test`` here is the family's 0.005.

    >>> AtariFQFPreset().fraction_lr
    2.5e-09
    """

    algo: ClassVar[str] = "fqf"
    rules: ClassVar[Rules] = {**AtariPreset.rules, **FQF_RULES}

    lr: float = 5e-5  # atari_fqf.py: lr=5e-5
    fraction_lr: float = 2.5e-9
    num_fractions: int = 32
    num_cosines: int = 64
    ent_coef: float = 10.0


@dataclass(frozen=True)
class AtariRainbowPreset(AtariPreset):
    """Rainbow on Atari (``examples/atari/atari_rainbow.py``): Adam 6.25e-5, 51 atoms on
    ``[-10, 10]``, dueling noisy streams (``noisy_std`` 0.1), prioritized replay with
    ``alpha`` 0.5 and ``beta`` 0.4 annealed to 1.0 over 5M env steps, importance weights
    normalised by the batch maximum (``weight_norm``).

    >>> p = AtariRainbowPreset()
    >>> p.noisy_std, p.beta, p.beta_final, p.beta_anneal_steps
    (0.1, 0.4, 1.0, 5000000)
    """

    algo: ClassVar[str] = "rainbow"
    rules: ClassVar[Rules] = {
        **AtariPreset.rules,
        "num_atoms": AT_LEAST_2,
        "noisy_std": NONNEG,
        "beta": NONNEG,
        "beta_final": NONNEG,
        "beta_anneal_steps": AT_LEAST_1,
    }

    lr: float = 6.25e-5  # atari_rainbow.py: lr=0.0000625
    num_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    noisy_std: float = 0.1
    dueling: bool = True
    noisy: bool = True
    prioritized_replay: bool = True
    alpha: float = 0.5
    beta: float = 0.4
    beta_final: float = 1.0
    beta_anneal_steps: int = 5_000_000
    weight_norm: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        common.check_support(self)


# ----------------------------------------------------------------------------- builders
def _net_args(p: AtariPreset, observation_space: Any, action_space: Any) -> dict[str, Any]:
    """``obs_shape``, ``n_actions`` and ``scale`` for the :mod:`tdrl.utils.net_atari` nets."""
    shape = tuple(observation_space.shape)
    if len(shape) != 3:
        raise PresetError(
            f"observation_space: expected stacked frames (C, H, W) from "
            f"tdrl.env.atari.wrap_deepmind, got shape {shape}"
        )
    return {
        "obs_shape": shape,
        "n_actions": int(action_space.n),
        "scale": 255.0 if p.scale_obs else None,
    }


# every builder starts the policy at a constant epsilon, the schedule's final value
# eps_train_final, until the launcher applies the schedule (module docstring)
def _eps_args(p: Any) -> dict[str, Any]:
    """The policy's epsilons: the schedule's final value until the launcher's ``train_fn``
    sets the decaying one, and the test epsilon."""
    return {"eps_training": p.eps_train_final, "eps_inference": p.eps_test}


def _learner(p: Any, policy_cls: Any, algo_cls: Any, net: Any, action_space: Any, **kw: Any) -> Any:
    """:func:`~tdrl.presets.common.q_learner` with the Atari epsilons (:func:`_eps_args`)."""
    return common.q_learner(p, policy_cls, algo_cls, net, action_space, eps=_eps_args(p), **kw)


def build_dqn(p: AtariDQNPreset, observation_space: Any, action_space: Any) -> Any:
    """DQN on :func:`~tdrl.utils.net_atari.dqn_net`.

    >>> import gymnasium as gym
    >>> alg = build_dqn(AtariDQNPreset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                 gym.spaces.Discrete(6))
    >>> type(alg).__name__, alg.n_step, alg.policy.eps_training
    ('DQN', 3, 0.05)
    """
    from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    from tdrl.utils.net_atari import dqn_net

    net_args = _net_args(p, observation_space, action_space)
    net = dqn_net(**net_args, hidden_sizes=p.hidden_sizes, dueling=p.dueling)
    return _learner(p, DQNPolicy, DQN, net, action_space)


def build_c51(p: AtariC51Preset, observation_space: Any, action_space: Any) -> Any:
    """C51 on :func:`~tdrl.utils.net_atari.c51_net`.

    >>> import gymnasium as gym
    >>> alg = build_c51(AtariC51Preset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                 gym.spaces.Discrete(6))
    >>> type(alg).__name__, alg.policy.support.shape
    ('C51', torch.Size([51]))
    """
    from tdrl.algorithm.modelfree.c51 import C51, C51Policy
    from tdrl.utils.net_atari import c51_net

    net_args = _net_args(p, observation_space, action_space)
    net = c51_net(**net_args, num_atoms=p.num_atoms, hidden_sizes=p.hidden_sizes)
    return _learner(p, C51Policy, C51, net, action_space, policy_args=common.support_args(p))


def build_qrdqn(p: AtariQRDQNPreset, observation_space: Any, action_space: Any) -> Any:
    """QR-DQN on :func:`~tdrl.utils.net_atari.qrdqn_net`.

    >>> import gymnasium as gym
    >>> alg = build_qrdqn(AtariQRDQNPreset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                   gym.spaces.Discrete(6))
    >>> type(alg).__name__, alg.num_quantiles
    ('QRDQN', 200)
    """
    from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
    from tdrl.utils.net_atari import qrdqn_net

    net_args = _net_args(p, observation_space, action_space)
    net = qrdqn_net(**net_args, num_quantiles=p.num_quantiles, hidden_sizes=p.hidden_sizes)
    return _learner(p, QRDQNPolicy, QRDQN, net, action_space, num_quantiles=p.num_quantiles)


def build_iqn(p: AtariIQNPreset, observation_space: Any, action_space: Any) -> Any:
    """IQN on :func:`~tdrl.utils.net_atari.iqn_net`.

    >>> import gymnasium as gym
    >>> alg = build_iqn(AtariIQNPreset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                 gym.spaces.Discrete(6))
    >>> type(alg).__name__, alg.policy.sample_size
    ('IQN', 32)
    """
    from tdrl.algorithm.modelfree.iqn import IQN, IQNPolicy
    from tdrl.utils.net_atari import iqn_net

    net_args = _net_args(p, observation_space, action_space)
    net = iqn_net(**net_args, num_cosines=p.num_cosines, hidden_sizes=p.hidden_sizes)
    return _learner(p, IQNPolicy, IQN, net, action_space, policy_args=common.pick(p, IQN_SAMPLES))


def build_fqf(p: AtariFQFPreset, observation_space: Any, action_space: Any) -> Any:
    """FQF on :func:`~tdrl.utils.net_atari.fqf_net`, the fraction proposal trained by RMSprop.

    >>> import gymnasium as gym
    >>> alg = build_fqf(AtariFQFPreset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                 gym.spaces.Discrete(6))
    >>> type(alg).__name__, alg.policy.fraction_model.num_fractions, alg.ent_coef
    ('FQF', 32, 10.0)
    """
    from tdrl.utils.net_atari import fqf_net

    net, fractions = fqf_net(
        **_net_args(p, observation_space, action_space),
        num_fractions=p.num_fractions,
        num_cosines=p.num_cosines,
        hidden_sizes=p.hidden_sizes,
    )
    return fqf_learner(p, net, fractions, action_space, eps=_eps_args(p))


def build_rainbow(p: AtariRainbowPreset, observation_space: Any, action_space: Any) -> Any:
    """Rainbow on :func:`~tdrl.utils.net_atari.rainbow_net`.

    >>> import gymnasium as gym
    >>> alg = build_rainbow(AtariRainbowPreset(), gym.spaces.Box(0, 255, (4, 84, 84)),
    ...                     gym.spaces.Discrete(6))
    >>> type(alg).__name__, type(alg.policy).__name__
    ('Rainbow', 'RainbowPolicy')
    """
    from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
    from tdrl.utils.net_atari import rainbow_net

    net = rainbow_net(
        **_net_args(p, observation_space, action_space),
        num_atoms=p.num_atoms,
        hidden_sizes=p.hidden_sizes,
        noisy_std=p.noisy_std,
        noisy=p.noisy,
        dueling=p.dueling,
    )
    return _learner(
        p, RainbowPolicy, Rainbow, net, action_space, policy_args=common.support_args(p)
    )


_PRESETS: tuple[Preset, ...] = (
    AtariDQNPreset(),
    AtariC51Preset(),
    AtariQRDQNPreset(),
    AtariIQNPreset(),
    AtariFQFPreset(),
    AtariRainbowPreset(),
)
for _p in _PRESETS:
    register(
        _p.algo,
        "atari",
        _p,
        builder=f"tdrl.presets.atari:build_{_p.algo}",
        trainer="offpolicy",
        exploration_noise=True,  # epsilon-greedy: eps_train in training, eps_test when testing
        action_space="discrete",
        env_wrapper="tdrl.env.atari:wrap_deepmind",
    )
