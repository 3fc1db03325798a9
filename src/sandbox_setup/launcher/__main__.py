"""``python -m sandbox_setup.launcher``."""

import sys

from sandbox_setup.launcher import main

sys.exit(main())
