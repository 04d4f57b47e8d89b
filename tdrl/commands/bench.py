"""Compatibility alias of :mod:`tdrl.cli.bench`."""

from tdrl.cli.bench import *  # noqa: F403
from tdrl.cli.bench import __all__  # noqa: F401
