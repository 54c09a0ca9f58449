#!/usr/bin/env python
"""Write student copies of every notebook: solutions removed, exercise code turned into stubs.

Usage: python .ci/student.py OUT_DIR [SLUG ...]

- Markdown `:::{solution} … :::` blocks are removed (the exercise text stays).
- Code cells tagged `solution` are removed; code cells tagged `exercise` keep their first comment
  lines and raise `NotImplementedError` instead of running the answer.
- Outputs after the first exercise are cleared; everything before it is left exactly as in the
  executed original, so it runs as the original does.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_BLOCK = re.compile(r"^(:{3,})\{solution\}.*?^\1[ \t]*$\n?", re.S | re.M)
EXERCISE = re.compile(r"\{exercise(-start)?\}")
STUB = 'raise NotImplementedError("Exercise: write your solution here")'


def strip_solutions(text: str) -> str:
    """Remove every MyST solution block (colon fences of any length) from a markdown string."""
    out = SOLUTION_BLOCK.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", out)


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)
    cells, seen_exercise = [], False
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown":
            if EXERCISE.search(cell.source):
                seen_exercise = True
            cell.source = strip_solutions(cell.source)
        elif "solution" in tags:
            continue
        elif "exercise" in tags:
            comments = [line for line in cell.source.splitlines() if line.startswith("#")]
            cell.source = "\n".join(comments + [STUB])
            cell.outputs, cell.execution_count = [], None
        elif seen_exercise:
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    slugs = argv[1:] or sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for slug in slugs:
        nb = nbformat.read(ROOT / "notebooks" / f"{slug}.ipynb", as_version=4)
        nbformat.write(student_notebook(nb), out / f"{slug}.ipynb")
    print(f"wrote {len(slugs)} student notebooks to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
