#!/usr/bin/env python
"""Print a variant of _config.yml for one edition of the book: `instructor`.

instructor: exercise solutions shown open instead of in closed dropdowns.
(The default book already serves MathJax, require.js, the widget manager and the Colab badge itself.)
"""
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def variant(name: str) -> dict:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx_cfg = cfg.setdefault("sphinx", {}).setdefault("config", {})
    if name == "instructor":
        cfg["title"] = cfg["title"] + " — instructor edition"
        # sphinx-togglebutton folds every `.admonition.dropdown` (our solutions) by default; in this
        # edition only explicit `.toggle` blocks fold, so every solution is rendered open.
        sphinx_cfg["togglebutton_selector"] = ".toggle"
    else:
        raise SystemExit(f"unknown edition {name!r}: use 'instructor'")
    return cfg


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    yaml.safe_dump(variant(sys.argv[1]), sys.stdout, sort_keys=False, allow_unicode=True)
