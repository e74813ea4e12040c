"""``python -m skillward``: the same as the ``skillward`` command."""

import sys

from skillward.cli import main

sys.exit(main())
