"""``python -m sandbox_setup`` runs ``sandbox-setup``."""

import sys

from sandbox_setup.cli import main

sys.exit(main())
