"""The ``tdrl`` subcommands beside ``train`` (see :data:`tdrl.cli.COMMANDS`): one module
each with ``main(argv) -> exit status``, imported only when its command runs."""
