#!/usr/bin/env python3
"""Config-only inventory vs real checkpoint totals over fixtures/checkpoint-totals (docs/validation.md)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from k3doctor.memory.totals import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
