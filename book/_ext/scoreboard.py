"""Sphinx extension: the reproduction scoreboard, built at build time from the claims the executed
notebooks recorded (``notebooks/results/claims/<slug>.json``), so the page cannot drift from them.

Directives:
  ``scoreboard``        a table: chapter, claim, paper, ours, status badge, linking to the claim's
                        row in the chapter's Paper-vs-ours table; plus a "full scale (GPU)" column
                        once a GPU run has recorded ``claims/<slug>.full.json`` files.
  ``scoreboard-tally``  one sentence, e.g. "41 of 63 headline claims ... reproduce at CPU scale."
  ``scoreboard-causes`` every claim that falls short, with the cause its chapter measured.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import Directive

from neurips25.display import status_badge
from neurips25.results import STATUSES, load_all_claims, tally, tally_sentence

ROOT = Path(__file__).resolve().parents[2]
CLAIMS_DIR = ROOT / "notebooks" / "results" / "claims"


def chapter_order() -> list[str]:
    """Notebook slugs in _toc.yml order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"].split("/", 1)[1] for part in toc["parts"] for c in part["chapters"]
            if c["file"].startswith("notebooks/")]


def chapter_title(slug: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{slug}.ipynb").read_text())
    for cell in nb["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("# "):
                return line[2:].strip()
    return slug


def _claims_in_order(env, scale: str = "small"):
    """Every recorded chapter's claims in book order; the page is rebuilt when a claims file changes."""
    for p in CLAIMS_DIR.glob("*.json"):
        env.note_dependency(str(p))
    claims = load_all_claims(CLAIMS_DIR, scale)
    order = [s for s in chapter_order() if s in claims]
    return {s: claims[s] for s in order}


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for c in cells:
        entry = nodes.entry()
        entry += c
        row += entry
    return row


def _para(text: str) -> nodes.paragraph:
    return nodes.paragraph(text=text)


class ScoreboardTable(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        all_claims = _claims_in_order(env)
        at_full = {(slug, c.id): c for slug, cl in _claims_in_order(env, "full").items() for c in cl}
        headers = ["chapter", "claim", "paper", "ours", "status"] + (["full scale (GPU)"] if at_full else [])
        table = nodes.table(classes=["scoreboard"])
        tgroup = nodes.tgroup(cols=len(headers))
        table += tgroup
        for w in (14, 40, 14, 22, 10, 16)[:len(headers)]:
            tgroup += nodes.colspec(colwidth=w)
        thead = nodes.thead()
        thead += _row([_para(h) for h in headers])
        tgroup += thead
        tbody = nodes.tbody()
        for slug, claims in all_claims.items():
            title = chapter_title(slug)
            for i, c in enumerate(claims):
                chap = nodes.paragraph()
                if i == 0:
                    chap += nodes.reference("", title, refuri=f"../notebooks/{slug}.html")
                claim = nodes.paragraph()
                claim += nodes.reference("", c.statement, refuri=f"../notebooks/{slug}.html#{c.anchor}")
                status = nodes.paragraph()
                status += nodes.raw("", status_badge(c.status), format="html")
                status += nodes.raw("", c.status, format="latex")
                cells = [chap, claim, _para(c.paper), _para(c.ours), status]
                if at_full:
                    f = at_full.get((slug, c.id))
                    cells.append(_para(f"{f.ours} ({f.status})" if f else "—"))
                tbody += _row(cells)
        tgroup += tbody
        counts = tally(all_claims)
        legend = nodes.paragraph()
        for s in STATUSES:
            legend += nodes.raw("", status_badge(s) + f" {counts[s]} &nbsp; ", format="html")
        return [legend, table]


class ScoreboardCauses(Directive):
    has_content = False

    def run(self):
        items = nodes.bullet_list()
        for slug, claims in _claims_in_order(self.state.document.settings.env).items():
            for c in claims:
                if c.status == "reproduced":
                    continue
                head = nodes.paragraph()
                head += nodes.raw("", status_badge(c.status) + " ", format="html")
                head += nodes.raw("", f"[{c.status}] ", format="latex")
                head += nodes.strong(text=f"{chapter_title(slug)}: ")
                head += nodes.reference("", c.statement, refuri=f"../notebooks/{slug}.html#{c.anchor}")
                item = nodes.list_item()
                item += head
                item += _para(c.cause)
                items += item
        return [items] if len(items) else [_para("Every headline claim reproduces.")]


class ScoreboardTally(Directive):
    has_content = False

    def run(self):
        return [_para(tally_sentence(_claims_in_order(self.state.document.settings.env)))]


def setup(app):
    app.add_directive("scoreboard", ScoreboardTable)
    app.add_directive("scoreboard-tally", ScoreboardTally)
    app.add_directive("scoreboard-causes", ScoreboardCauses)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
