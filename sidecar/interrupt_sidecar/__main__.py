"""``python -m interrupt_sidecar`` is ``interrupt-sidecar``."""

import sys

from interrupt_sidecar.cli import main

sys.exit(main())
