"""Random vector-buffer add sequences shared by the differential tests."""

from __future__ import annotations

import numpy as np


def random_subset_steps(
    rng: np.random.Generator,
    n_env: int,
    steps: int,
    obs_dim: int = 3,
    n_act: int = 5,
    p_truncated: float = 0.1,
) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """``steps`` pairs ``(buffer_ids, batch)``: a random sorted subset of the ``n_env`` envs
    each step, terminated with probability 0.15 and truncated with ``p_truncated``."""
    out = []
    for _ in range(steps):
        k = int(rng.integers(1, n_env + 1))
        ids = np.sort(rng.choice(n_env, size=k, replace=False))
        batch = {
            "obs": rng.standard_normal((k, obs_dim)),
            "act": rng.integers(0, n_act, k),
            "rew": np.round(rng.standard_normal(k), 3),
            "terminated": rng.random(k) < 0.15,
            "truncated": rng.random(k) < p_truncated,
            "obs_next": rng.standard_normal((k, obs_dim)),
        }
        out.append((ids, batch))
    return out
