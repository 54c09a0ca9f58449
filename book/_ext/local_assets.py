"""Sphinx extension: serve the "Open in Colab" badge from the book itself.

Each notebook's first cell shows Colab's badge from colab.research.google.com, which is right on
GitHub and in Colab; in the book the same image is swapped for a local copy
(book/images/colab-badge.svg), so a page renders with no internet (a USB stick, a course server).
MathJax, require.js and the widget manager are served from `_vendor/` (see _config.yml).
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform

REMOTE_BADGES = ("https://colab.research.google.com/assets/colab-badge.svg",)
LOCAL_BADGE = "/book/images/colab-badge.svg"  # leading "/" = relative to the book's root


class LocalColabBadge(SphinxTransform):
    default_priority = 100  # before Sphinx collects images (doctree-read)

    def apply(self, **kwargs) -> None:
        for img in self.document.findall(nodes.image):
            if img.get("uri") in REMOTE_BADGES:
                img["uri"] = LOCAL_BADGE
                if "candidates" in img:
                    del img["candidates"]


def setup(app):
    app.add_transform(LocalColabBadge)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
