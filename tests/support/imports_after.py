"""Run the ``skillward`` command in this process, then say which modules it imported.

``python -m tests.support.imports_after OUT ARGS...`` runs ``skillward ARGS...`` and
writes ``{"code", "modules"}`` as JSON to OUT (stdout is the command's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1])
    from skillward.cli import main as skillward  # noqa: PLC0415 (after the baseline)

    try:
        code: object = skillward(sys.argv[2:])
    except SystemExit as exit_:  # --version and --help end here
        code = exit_.code
    out.write_text(json.dumps({"code": code, "modules": sorted(sys.modules)}))


if __name__ == "__main__":
    main()
