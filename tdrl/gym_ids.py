"""tdrl's gymnasium ids, registered whenever gymnasium is loaded.

``import tdrl`` loads neither torch nor gymnasium, yet ``gymnasium.make("tdrl/NChain-v0")``
must work after it. :func:`install` registers the ids at once if gymnasium is already
imported, and otherwise puts a finder on ``sys.meta_path`` that registers them right after
gymnasium's own import finishes (and then removes itself). The entry points are strings,
so registering imports nothing of tdrl's; ``tdrl.env.nchain`` registers the same id when
imported (whichever comes first wins, with the same spec).

>>> import gymnasium
>>> install()
>>> gymnasium.spec("tdrl/NChain-v0").max_episode_steps
1000
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

__all__ = ["GYM_IDS", "install"]

GYM_IDS: dict[str, dict[str, Any]] = {
    "tdrl/NChain-v0": {
        "entry_point": "tdrl.env.nchain:NChainEnv",
        "max_episode_steps": 1000,
        "reward_threshold": 3400.0,
        "nondeterministic": False,
    },
}
"""Each id's ``gymnasium.register`` arguments."""


def _register(gym: ModuleType) -> None:
    for env_id, kwargs in GYM_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, **kwargs)


class _Loader(importlib.abc.Loader):
    """Gymnasium's own loader, registering tdrl's ids once the module has run."""

    def __init__(self, inner: Any, finder: _Finder) -> None:
        self._inner, self._finder = inner, finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        _register(module)

    def __getattr__(self, name: str) -> Any:  # resources, get_filename, ...
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``gymnasium`` through the other finders and wraps its loader."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, self)
                return spec
        return None


def install() -> None:
    """Register :data:`GYM_IDS` now (gymnasium loaded) or right after gymnasium loads."""
    gym = sys.modules.get("gymnasium")
    if gym is not None and hasattr(gym, "register"):
        _register(gym)
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
