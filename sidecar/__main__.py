"""``python -m sidecar`` is ``interrupt-sidecar``."""

import sys

from sidecar.cli import main

sys.exit(main())
