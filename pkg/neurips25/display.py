"""Notebook display helpers: show a package function's source, and result tables.

``show_source(fn)`` is how chapters show their implementation without copying it into the
notebook. ``ResultsTable`` renders as an HTML table in the book and in Colab and as aligned text in a terminal
or in nbval's comparison, so one table serves both.
"""
from __future__ import annotations

import html
import inspect
import numbers
import textwrap
from typing import Any, Iterable, Sequence

from .runtime import check_int

__all__ = ["show_source", "ResultsTable", "ClaimsTable", "status_badge", "paper_vs_ours", "fmt"]


class _Code:
    """A block of Python source that renders highlighted in notebooks and plainly elsewhere."""

    def __init__(self, source: str):
        self.source = source

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}\n```"

    def __repr__(self) -> str:
        return self.source


def show_source(obj: Any, lines: tuple[int, int] | None = None) -> _Code:
    """The source of a function, class or method (optionally a 1-based, inclusive line range)."""
    try:
        src = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(f"obj must be a Python function, class or method with source, got {obj!r}") from e
    src = textwrap.dedent(src).rstrip()
    if lines is not None:
        a, b = lines
        all_lines = src.splitlines()
        if not 1 <= a <= b <= len(all_lines):
            raise ValueError(f"lines must satisfy 1 <= start <= end <= {len(all_lines)}, got {lines}")
        src = "\n".join(all_lines[a - 1:b])
    return _Code(src)


def fmt(value: Any, digits: int = 3) -> str:
    """Format a cell: numbers rounded to ``digits`` significant places, None as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if v != v:
            return "nan"
        if v == 0:
            return "0"
        if abs(v) >= 10 ** digits or abs(v) < 10 ** -(digits + 1):
            return f"{v:.{max(digits - 1, 0)}e}"
        return f"{v:.{digits}g}"
    return str(value)


class ResultsTable:
    """A small table: rows of cells under named columns; Markdown in notebooks, text otherwise."""

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]] = (), digits: int = 3,
                 title: str | None = None):
        columns = list(columns)
        if not columns or not all(isinstance(c, str) for c in columns):
            raise ValueError("columns must be a non-empty sequence of strings")
        digits = check_int(digits, "digits")
        self.columns, self.digits, self.title = columns, digits, title
        self.rows: list[list[Any]] = []
        for r in rows:
            self.add(*r)

    def add(self, *cells: Any) -> ResultsTable:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row needs {len(self.columns)} cells ({self.columns}), got {len(cells)}")
        self.rows.append(list(cells))
        return self

    def _cells(self) -> list[list[str]]:
        return [[fmt(c, self.digits) for c in r] for r in self.rows]

    def _html_row(self, i: int, cells: list[str]) -> str:
        """Row ``i`` as HTML (subclasses add anchors or markup here)."""
        return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(c)}</th>" for c in self.columns)
        body = "".join(self._html_row(i, r) for i, r in enumerate(self._cells()))
        caption = f"<caption>{esc(self.title)}</caption>" if self.title else ""
        return (f'<table class="neurips25-table">{caption}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")

    def _repr_markdown_(self) -> str:
        head = "| " + " | ".join(self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(r) + " |" for r in self._cells()]
        title = [f"**{self.title}**", ""] if self.title else []
        return "\n".join(title + [head, sep, *body])

    def __repr__(self) -> str:
        cells = [self.columns, *self._cells()]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(([self.title] if self.title else []) + lines)

    __str__ = __repr__

    def column(self, name: str) -> list[Any]:
        if name not in self.columns:
            raise ValueError(f"unknown column {name!r}; columns are {self.columns}")
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def paper_vs_ours(rows: Iterable[Sequence[Any]], digits: int = 3, title: str | None = "Paper vs. ours") -> ResultsTable:
    """The chapter's comparison table. Each row: ``(quantity, paper's value, our value, note)``;
    the note states the difference in scale or setting (use "" when there is none)."""
    return ResultsTable(["quantity", "paper", "ours", "note"], rows, digits=digits, title=title)


def status_badge(status: str) -> str:
    """An inline-styled HTML badge for a claim status (see :data:`neurips25.results.STATUSES`)."""
    from .results import STATUS_COLORS

    if status not in STATUS_COLORS:
        raise ValueError(f"status must be one of {list(STATUS_COLORS)}, got {status!r}")
    return (f'<span class="claim-status" style="background:{STATUS_COLORS[status]};color:#fff;'
            f'padding:0 .45em;border-radius:.35em;white-space:nowrap">{html.escape(status)}</span>')


class ClaimsTable(ResultsTable):
    """A chapter's Paper-vs-ours table built from its :class:`~neurips25.results.Claims`: one row per
    headline claim (with an HTML anchor the scoreboard links to, and a coloured status), then context
    rows that are not claims. ``full``: the same chapter's claims recorded at ``full`` scale (a GPU
    run), shown as a "full scale (GPU)" column of "ours (status)" beside the book's scale."""

    FULL = "full scale (GPU)"

    def __init__(self, claims: Sequence[Any], extra: Iterable[Sequence[Any]] = (), title: str | None = None,
                 full: Iterable[Any] | None = None):
        at_full = {c.id: f"{c.ours} ({c.status})" for c in full} if full is not None else None
        cols = ["claim", "paper", "ours", "status"] + ([self.FULL] if at_full is not None else []) + ["note"]
        super().__init__(cols, title=title)
        self.anchors: list[str | None] = []
        for c in claims:
            gpu = [at_full.get(c.id, "—")] if at_full is not None else []
            self.add(c.statement, c.paper, c.ours, c.status, *gpu, c.note)
            self.anchors.append(c.anchor)
        for row in extra:
            if len(row) != 4:
                raise ValueError(f"extra rows are (quantity, paper, ours, note), got {row!r}")
            q, p, o, n = row
            self.add(q, p, o, "—", *(["—"] if at_full is not None else []), n)
            self.anchors.append(None)

    def _html_row(self, i: int, cells: list[str]) -> str:
        anchor = self.anchors[i]
        if anchor is None:
            return super()._html_row(i, cells)
        tds = [html.escape(c) for c in cells]
        tds[3] = status_badge(cells[3])
        return f'<tr id="{html.escape(anchor)}">' + "".join(f"<td>{c}</td>" for c in tds) + "</tr>"
