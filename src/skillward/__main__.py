"""``python -m skillward``: the same as the ``skillward`` command."""

import sys

from skillward.cli.command import main

sys.exit(main())
