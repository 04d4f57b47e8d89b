"""Rainbow presets (plain data; the builder imports torch when called).

``classic`` (tuned on CartPole-v1, threshold 195) is Tianshou's
``test/discrete/test_rainbow.py``: a 4 x 128 ReLU trunk, dueling noisy streams of one noisy
layer each (``noisy_std`` 0.1), 51 atoms on ``[-10, 10]``, gamma 0.9, 3-step returns, a
target sync every 320 gradient steps, Adam 1e-3, batch 64, 8 training envs collecting 8
steps per 1 gradient step, epsilon 0.1 in training and 0.05 in tests, and prioritized replay
(``alpha`` 0.6, ``beta`` 0.4, weights normalised by the batch maximum: its ``test_prainbow``
variant). Tianshou anneals epsilon and ``beta`` from env step 10k on; CartPole is solved
before that, so the values stay fixed here. Epochs are 2000 env steps (Tianshou: 8000), so
the 100-episode test comes sooner; the threshold is reached after 4.5k-8k env steps.

``prioritized_replay``, ``alpha`` and ``beta`` describe the replay buffer the launcher
should create (``PrioritizedVectorReplayBuffer(buffer_size, training_num, alpha=alpha,
beta=beta, weight_norm=True)``).

>>> p = RainbowPreset()
>>> p.num_atoms, p.noisy_std, p.prioritized_replay
(51, 0.1, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_2, NONNEG, QLearningFields, Rules

__all__ = ["RainbowPreset", "build"]


@dataclass(frozen=True)
class RainbowPreset(QLearningFields):
    """Rainbow hyperparameters and trainer settings (defaults: CartPole-v1).

    Network: ``hidden_sizes`` (trunk), ``head_hidden_sizes`` (each dueling stream's hidden
    widths), ``num_atoms`` on ``[v_min, v_max]``, ``noisy_std``. Warm up with
    ``collect(n_step=warmup_steps, random=True)``; both collectors add epsilon-greedy noise
    (``eps_train`` inside training steps, ``eps_test`` outside) on top of the noisy layers.

    >>> RainbowPreset().replace(num_atoms=1)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: rainbow preset field 'num_atoms': expected an int >= 2, got 1
    """

    algo: ClassVar[str] = "rainbow"
    rules: ClassVar[Rules] = {"num_atoms": AT_LEAST_2, "noisy_std": NONNEG, "beta": NONNEG}

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (128, 128, 128, 128)
    head_hidden_sizes: tuple[int, ...] = ()
    num_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    noisy_std: float = 0.1
    prioritized_replay: bool = True
    alpha: float = 0.6
    beta: float = 0.4
    training_num: int = 8
    warmup_steps: int = 512
    step_per_epoch: int = 2000
    step_per_collect: int = 8
    update_per_step: float = 0.125

    def __post_init__(self) -> None:
        super().__post_init__()
        common.check_support(self)


def build(p: RainbowPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the :class:`~tdrl.utils.net_rainbow.RainbowNet`, policy and algorithm.

    >>> import gymnasium as gym
    >>> alg = build(RainbowPreset(hidden_sizes=(8,), num_atoms=11),
    ...             gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, alg.policy.support.shape
    ('Rainbow', 3, torch.Size([11]))
    """
    from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
    from tdrl.utils.net_rainbow import RainbowNet

    model = RainbowNet(
        common.space_dim(observation_space),
        common.space_dim(action_space),
        p.num_atoms,
        p.hidden_sizes,
        head_hidden_sizes=p.head_hidden_sizes,
        noisy_std=p.noisy_std,
    )
    support = common.support_args(p)
    return common.q_learner(p, RainbowPolicy, Rainbow, model, action_space, policy_args=support)


common.register_classic(
    __name__,
    RainbowPreset(),
    **common.EPSILON_GREEDY,  # epsilon-greedy on top of the noisy layers, as in Tianshou
)
