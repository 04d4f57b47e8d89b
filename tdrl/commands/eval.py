"""Compatibility alias of :mod:`tdrl.cli.eval`."""

from tdrl.cli.eval import *  # noqa: F403
from tdrl.cli.eval import __all__  # noqa: F401
