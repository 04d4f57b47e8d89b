"""Shared dataset fixtures of the offline and imitation tests.

``pendulum_dataset`` and ``cartpole_dataset`` are HDF5 paths of the datasets that
``tdrl gather sac Pendulum-v1`` and ``tdrl gather dqn CartPole-v1`` write (seed 0, 20,000
transitions). Each is gathered once and cached under ``<rootdir>/.cache/tdrl-datasets/``
(gitignored), keyed by tdrl's version and a hash of the code that gathers it, so later test
sessions reuse it; a file lock makes pytest-xdist workers gather it once. Set
``TDRL_DATASET_CACHE`` to use another cache directory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

GATHERED = {
    "pendulum": ("sac", "Pendulum-v1"),
    "cartpole": ("dqn", "CartPole-v1"),
}
"""Fixture name prefix -> (expert, task) of ``tdrl gather``."""


def _code_key(expert: str) -> str:
    """A hash of what decides the gathered data: the gather command, the buffer format and
    the expert's preset (registry and preset modules)."""
    import tdrl
    import tdrl.cli.gather
    import tdrl.data.buffer.persist
    import tdrl.presets.common
    import tdrl.presets.make
    import tdrl.presets.registry

    modules = [
        tdrl.cli.gather,
        tdrl.data.buffer.persist,
        tdrl.presets.registry,
        tdrl.presets.make,
        tdrl.presets.common,
    ]
    h = hashlib.sha256(getattr(tdrl, "__version__", "0").encode())
    for mod in modules:
        h.update(Path(str(mod.__file__)).read_bytes())
    preset_module = Path(str(tdrl.presets.registry.__file__)).parent / f"{expert}.py"
    if preset_module.exists():
        h.update(preset_module.read_bytes())
    return h.hexdigest()[:16]


def cache_dir(config: pytest.Config) -> Path:
    """Where gathered datasets are kept across test sessions."""
    env = os.environ.get("TDRL_DATASET_CACHE")
    root = Path(env) if env else Path(config.rootpath) / ".cache" / "tdrl-datasets"
    root.mkdir(parents=True, exist_ok=True)
    return root


def gathered_dataset(config: pytest.Config, expert: str, task: str, seed: int = 0) -> Path:
    """The cached dataset of ``tdrl gather EXPERT TASK --seed SEED``, gathered if missing."""
    from filelock import FileLock

    from tdrl.cli.gather import gather

    root = cache_dir(config)
    path = root / f"{expert}-{task}-seed{seed}-{_code_key(expert)}.hdf5"
    with FileLock(str(path) + ".lock"):
        if not path.exists():
            gather(expert, task, path, seed=seed)
            for stale in root.glob(f"{expert}-{task}-seed{seed}-*.hdf5"):  # older code's
                if stale != path:
                    stale.unlink(missing_ok=True)
    return path


@pytest.fixture(scope="session")
def pendulum_dataset(pytestconfig: pytest.Config) -> str:
    """Path of ``tdrl gather sac Pendulum-v1`` data (seed 0, 20,000 transitions)."""
    return str(gathered_dataset(pytestconfig, *GATHERED["pendulum"]))


@pytest.fixture(scope="session")
def cartpole_dataset(pytestconfig: pytest.Config) -> str:
    """Path of ``tdrl gather dqn CartPole-v1`` data (seed 0, 20,000 transitions)."""
    return str(gathered_dataset(pytestconfig, *GATHERED["cartpole"]))
