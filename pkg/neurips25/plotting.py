"""One book-wide figure style and a fixed colour per method name.

Call ``use_style()`` once per notebook; pass ``color=method_color("ours")`` (or any method name) so
the same method has the same colour in every chapter.
"""
from __future__ import annotations

import hashlib

from .runtime import check_int

__all__ = ["PALETTE", "METHOD_COLORS", "use_style", "method_color", "savefig_kwargs"]

# Okabe-Ito palette: distinguishable for colour-blind readers and in greyscale print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

# Roles used across the book. A chapter's own method is "ours"; the paper's reported values "paper".
METHOD_COLORS = {
    "ours": "#0072B2",
    "paper": "#000000",
    "theory": "#7F7F7F",
    "exact": "#7F7F7F",
    "baseline": "#D55E00",
    "random": "#BBBBBB",
    "oracle": "#009E73",
    "truth": "#009E73",
    "source": "#E69F00",
    "target": "#CC79A7",
}


def use_style(font_size: int = 11) -> None:
    """Apply the book's matplotlib style (sizes readable at book width, no top/right spines)."""
    import matplotlib as mpl
    from cycler import cycler

    font_size = check_int(font_size, "font_size", 6)
    mpl.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "savefig.bbox": "tight",
        "font.size": font_size,
        "axes.titlesize": font_size + 1,
        "axes.labelsize": font_size,
        "legend.fontsize": font_size - 1,
        "legend.frameon": False,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.25,
        "axes.prop_cycle": cycler(color=PALETTE),
        "image.cmap": "viridis",
        "lines.linewidth": 1.8,
        "svg.hashsalt": "neurips25",  # deterministic SVG ids
    })


def method_color(name: str) -> str:
    """The colour of a method: a fixed role colour if ``name`` is a known role, else a stable pick
    from the palette derived from the name (so "ToMe" is the same colour in every figure)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    key = name.lower()
    if key in METHOD_COLORS:
        return METHOD_COLORS[key]
    h = int(hashlib.md5(key.encode()).hexdigest(), 16)
    return PALETTE[1:7][h % 6]


def savefig_kwargs() -> dict:
    """Keyword arguments for ``fig.savefig`` that give byte-stable PNGs (no timestamp metadata)."""
    return {"metadata": {"Software": None}, "bbox_inches": "tight"}
