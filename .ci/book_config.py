#!/usr/bin/env python
"""Print a variant of _config.yml for one edition of the book: `offline` or `instructor`.

offline:    MathJax 3, require.js and the widget manager served from the build (`_vendor/`, made by
            .ci/vendor.sh), so math and widgets render with no internet.
instructor: exercise solutions shown open instead of in closed dropdowns.
"""
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def variant(name: str) -> dict:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx_cfg = cfg.setdefault("sphinx", {}).setdefault("config", {})
    if name == "offline":
        # Not under book/_static: Jupyter Book injects every .js found there into every page.
        sphinx_cfg["html_static_path"] = ["_vendor"]
        sphinx_cfg["mathjax_path"] = "mathjax/tex-mml-chtml.js"
        sphinx_cfg["nb_ipywidgets_js"] = {
            "require.js": {},
            "widgets/embed-amd.js": {"data-jupyter-widgets-cdn": "https://cdn.jsdelivr.net/npm/"},
        }
    elif name == "instructor":
        cfg["title"] = cfg["title"] + " — instructor edition"
        # sphinx-togglebutton folds every `.admonition.dropdown` (our solutions) by default; in this
        # edition only explicit `.toggle` blocks fold, so every solution is rendered open.
        sphinx_cfg["togglebutton_selector"] = ".toggle"
    else:
        raise SystemExit(f"unknown edition {name!r}: use 'offline' or 'instructor'")
    return cfg


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    yaml.safe_dump(variant(sys.argv[1]), sys.stdout, sort_keys=False, allow_unicode=True)
