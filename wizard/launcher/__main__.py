"""``python -m wizard.launcher``."""

import sys

from wizard.launcher import main

sys.exit(main())
