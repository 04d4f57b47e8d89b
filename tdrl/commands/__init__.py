"""Compatibility alias: the subcommands now live in :mod:`tdrl.cli` (``tdrl.cli.eval``,
``tdrl.cli.gather``, ``tdrl.cli.bench``, ``tdrl.cli.report``, ``tdrl.cli.plot``). Nothing in
the library imports this package."""
