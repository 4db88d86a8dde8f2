"""Make the package importable without installing it, and the test helpers importable."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
for path in (_ROOT, _ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
