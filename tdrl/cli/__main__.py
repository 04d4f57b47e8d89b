"""``python -m tdrl.cli ...`` is ``tdrl ...``."""

from tdrl.cli.main import main

raise SystemExit(main())
