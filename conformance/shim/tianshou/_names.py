"""How a shim module forwards names: an explicit table ``tianshou name -> tdrl dotted path``.

A name missing from the table resolves to a placeholder class (:func:`absent`): the test
module still imports, and the first use of the name raises ``NotImplementedError`` naming the
``tianshou`` name, so the test that needs it fails (an expected failure in
``conformance/expected.toml``). Nothing here changes behaviour: it only picks names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NoReturn


class _AbsentMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"{cls.__qualname__}.{name}: no tdrl counterpart")

    def __getitem__(cls, item: Any) -> Any:
        return cls


def absent(qualname: str) -> type:
    """A stand-in for a Tianshou name tdrl does not provide: it can be imported, subclassed
    and used in annotations, and raises ``NotImplementedError`` when instantiated."""

    def _raise(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"{qualname}: no tdrl counterpart")

    namespace = {"__init__": _raise, "__qualname__": qualname}
    return _AbsentMeta(qualname.rsplit(".", 1)[-1], (), namespace)


def inert(qualname: str) -> type:
    """A stand-in for a Tianshou name used only by tests that Tianshou itself switches off
    (its determinism snapshots, ``ENABLED = False``): it can be constructed, so such a test
    reaches its own skip, and any use of the object raises ``NotImplementedError``."""

    def _raise(self: Any, name: str) -> NoReturn:
        raise NotImplementedError(f"{qualname}.{name}: no tdrl counterpart")

    namespace = {
        "__init__": lambda self, *args, **kwargs: None,
        "__getattr__": _raise,
        "__enter__": lambda self: _raise(self, "__enter__"),
        "__qualname__": qualname,
    }
    return type(qualname.rsplit(".", 1)[-1], (), namespace)


def forwarder(
    module: str, table: dict[str, str], inert_names: tuple[str, ...] = ()
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` (``"pkg.mod:attr"``) from tdrl;
    ``inert_names`` resolve to :func:`inert` stand-ins."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in inert_names:
            return inert(f"{module}.{name}")
        target = table.get(name)
        if target is None:
            return absent(f"{module}.{name}")
        mod, _, attr = target.partition(":")
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError):
            return absent(f"{module}.{name} (-> {target})")

    return __getattr__
