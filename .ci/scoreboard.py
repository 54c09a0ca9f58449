#!/usr/bin/env python
"""Write the reproduction tally (from notebooks/results/claims/) into README.md between markers.

Usage: python .ci/scoreboard.py [--check]   (--check: exit 1 if README.md is out of date)
`make execute` runs it after re-executing notebooks; tests/test_claims.py checks it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from neurips25.results import load_all_claims, tally_sentence

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARK = re.compile(r"(<!-- tally -->).*?(<!-- /tally -->)", re.S)


def readme_text() -> str:
    sentence = tally_sentence(load_all_claims(ROOT / "notebooks" / "results" / "claims"))
    text = README.read_text()
    if not MARK.search(text):
        raise SystemExit("README.md has no <!-- tally --> ... <!-- /tally --> markers")
    return MARK.sub(lambda m: f"{m.group(1)}{sentence}{m.group(2)}", text)


if __name__ == "__main__":
    new = readme_text()
    if "--check" in sys.argv[1:]:
        sys.exit(0 if new == README.read_text() else 1)
    README.write_text(new)
