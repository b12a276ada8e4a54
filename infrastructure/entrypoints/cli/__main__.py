"""``python -m countersign.infrastructure.entrypoints.cli``: the ``countersign`` command."""

import sys

from countersign.infrastructure.entrypoints.cli import main

sys.exit(main())
