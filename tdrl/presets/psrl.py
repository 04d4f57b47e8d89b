"""PSRL presets (plain data; torch is imported by :func:`build` only).

``classic`` is tuned on ``tdrl/NChain-v0`` (:mod:`tdrl.env.nchain`, 1000-step episodes)
and starts from Tianshou's ``test/modelbased/test_psrl.py``: Dirichlet prior counts 1,
Normal reward priors N(0, 1), gamma 0.99, value-iteration precision 0.01, one training env,
one whole episode per collect (a new MDP is sampled after every episode), 10 test
episodes, 5 epochs of 1000 env steps. Tianshou first collects 50,000 random steps; tdrl
collects 1000 (``warmup_steps``). Without them PSRL reached the threshold on 8 of 10 seeds
in 10 epochs: the reward posterior of a pair it never tried has a mean of 0 and, after the
first update, almost no spread, so the reward of 10 at the end of the chain is found only
by four slips in a row; with them 10 of 10 seeds reached it after 1000-2000 env steps.

The stop threshold, 3400 per episode (Tianshou's, the registered id's
``reward_threshold``), is reached only by the optimal always-forward policy (~3660); a
uniform-random policy (~1000) and an epsilon-greedy tabular Q-learner given the same 6000
steps (~1600: it settles on moving back) both miss it (``tests/modelbased/test_psrl.py``).

>>> from tdrl.presets import registry
>>> p = registry.preset("psrl")
>>> p.task, p.threshold, registry.entry("psrl", p.task).trainer
('tdrl/NChain-v0', 3400.0, 'onpolicy')
>>> p.trainer_kwargs()["episode_per_collect"]
1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets.common import POSITIVE, EpisodeCollectFields, Rules, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelbased.psrl import PSRL

__all__ = ["PSRLPreset", "build"]


@dataclass(frozen=True)
class PSRLPreset(EpisodeCollectFields):
    """PSRL priors and trainer settings (defaults: ``tdrl/NChain-v0``).

    ``trans_count_prior``, ``rew_mean_prior`` and ``rew_std_prior`` fill the prior arrays
    (``[S, A, S]`` Dirichlet counts, ``[S, A]`` Normal means and standard deviations).
    Collect ``episode_per_collect`` whole episodes (or ``step_per_collect`` steps; exactly
    one of the two is set) per posterior update.
    """

    algo: ClassVar[str] = "psrl"
    rules: ClassVar[Rules] = {
        "trans_count_prior": POSITIVE,
        "rew_std_prior": POSITIVE,
        "epsilon": POSITIVE,
        "episode_per_collect": POSITIVE,
    }

    task: str = "tdrl/NChain-v0"
    threshold: float | None = 3400.0  # = tdrl.env.nchain.NCHAIN_THRESHOLD (no gymnasium here)
    trans_count_prior: float = 1.0
    rew_mean_prior: float = 0.0
    rew_std_prior: float = 1.0
    gamma: float = 0.99
    epsilon: float = 0.01
    add_done_loop: bool = False
    buffer_size: int = 50_000
    training_num: int = 1
    test_num: int = 10
    warmup_steps: int = 1000
    max_epochs: int = 5
    step_per_epoch: int = 1000
    episode_per_collect: int | None = 1
    repeat_per_collect: int = 1


def build(p: PSRLPreset, observation_space: Any, action_space: Any) -> PSRL:
    """Create the priors for the spaces' ``S`` states and ``A`` actions, the policy and PSRL.

    A non-``Discrete`` observation space is a one-line :class:`~tdrl.errors.PresetError`.
    """
    import gymnasium as gym
    import numpy as np

    from tdrl.algorithm.modelbased.psrl import PSRL, PSRLPolicy

    if not isinstance(observation_space, gym.spaces.Discrete):
        raise PresetError(
            f"psrl needs a Discrete observation space (a tabular MDP); "
            f"{p.task} has {observation_space}"
        )
    n_s, n_a = int(observation_space.n), int(action_space.n)
    policy = PSRLPolicy(
        trans_count_prior=np.full((n_s, n_a, n_s), p.trans_count_prior),
        rew_mean_prior=np.full((n_s, n_a), p.rew_mean_prior),
        rew_std_prior=np.full((n_s, n_a), p.rew_std_prior),
        action_space=action_space,
        discount_factor=p.gamma,
        epsilon=p.epsilon,
        observation_space=observation_space,
    )
    return PSRL(policy=policy, add_done_loop=p.add_done_loop)


register_classic(
    __name__,
    PSRLPreset(),
    trainer="onpolicy",
    exploration_noise=False,
    action_space="discrete",
    env_wrapper="tdrl.env.nchain:wrap",
)
