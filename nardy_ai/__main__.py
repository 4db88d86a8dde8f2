"""``python -m nardy_ai ...`` is the ``nardy`` command (for Ray jobs and machines without the script)."""

import sys

from .cli import main

sys.exit(main())
