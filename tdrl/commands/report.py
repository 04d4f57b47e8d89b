"""Compatibility alias of :mod:`tdrl.cli.report`."""

from tdrl.cli.report import *  # noqa: F403
from tdrl.cli.report import __all__  # noqa: F401
