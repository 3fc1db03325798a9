"""``python -m wizard`` runs ``sandbox-setup``."""

import sys

from wizard.cli import main

sys.exit(main())
