"""``python -m interrupt_sidecar`` is ``interrupt-sidecar``."""

import sys

from interrupt_sidecar.entry import main

sys.exit(main())
