"""Test-only shim: ``tianshou.*`` import names mapped onto tdrl's public API.

Put on ``sys.path`` only by ``conformance/run.py``; it is not a package of tdrl and no test
under ``tests/`` can import it.
"""

__version__ = "tdrl-shim"
