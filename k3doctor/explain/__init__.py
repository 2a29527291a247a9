"""``k3doctor explain``: recognise failures in pasted error text or rank logs.

The knowledge base is data (``kb/<category>.toml``, one file per category); this package
loads it (:mod:`.kb`), scans text or multi-GB logs with a two-stage prefilter
(:mod:`.scan`) and formats the ranked matches (:mod:`.render`). Nothing here imports rich
at import time; :mod:`.render` does so only when it prints.
"""

from __future__ import annotations

from .kb import CATEGORIES, Signature, load_kb
from .scan import Match, Report, Scanner, explain_paths, explain_text

__all__ = [
    "CATEGORIES",
    "Signature",
    "load_kb",
    "Match",
    "Report",
    "Scanner",
    "explain_text",
    "explain_paths",
]
