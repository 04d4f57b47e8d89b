"""Compatibility alias of :mod:`tdrl.cli.gather`."""

from tdrl.cli.gather import *  # noqa: F403
from tdrl.cli.gather import __all__  # noqa: F401
