"""Instructor and student editions (.ci/student.py, .ci/book_config.py)."""
import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


student = _load("student")
book_config = _load("book_config")


def test_strip_solutions_keeps_exercises():
    md = (":::{exercise}\n:label: a\nDo it.\n:::\n\n:::{solution} a\n:class: dropdown\nSECRET\n"
          "```python\nx = 1\n```\n:::\n\nAfter.\n\n::::{solution} b\nMORE SECRET\n::::\n")
    out = student.strip_solutions(md)
    assert "Do it." in out and "After." in out
    assert "SECRET" not in out and "{solution}" not in out and "x = 1" not in out


def test_tagged_cells():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("a = 1"),
        nbformat.v4.new_markdown_cell(":::{exercise}\n:label: e\nQ\n:::"),
        nbformat.v4.new_code_cell("# compute the answer\nanswer = 42", metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell("print('solution')", metadata={"tags": ["solution"]}),
    ])
    out = student.student_notebook(nb)
    assert [c.source for c in out.cells][0] == "a = 1"
    assert out.cells[2].source == "# compute the answer\n" + student.STUB
    assert all("print('solution')" not in c.source for c in out.cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_copy_has_no_solution_and_keeps_what_precedes_exercises(path):
    nb = nbformat.read(path, as_version=4)
    out = student.student_notebook(nb)
    text = json.dumps([c.source for c in out.cells])
    assert "{solution}" not in text
    # Solutions live in markdown; a code line may legitimately also appear in the chapter's own code.
    md = "\n".join(c.source for c in out.cells if c.cell_type == "markdown")
    for block in student.SOLUTION_BLOCK.finditer("\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")):
        body = [ln for ln in block.group(0).splitlines()[1:-1] if len(ln.strip()) > 25 and not ln.startswith(":")]
        leaked = [line for line in body if line in md]
        assert not leaked, f"solution text left in the student copy: {leaked[:3]}"
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and student.EXERCISE.search(c.source))
    assert [c.source for c in out.cells[:first]] == [c.source for c in nb.cells[:first]]


def test_student_getting_started_runs_up_to_the_exercises(tmp_path):
    from nbclient import NotebookClient

    nb = student.student_notebook(nbformat.read(ROOT / "notebooks" / "getting_started.ipynb", as_version=4))
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and student.EXERCISE.search(c.source))
    nb.cells = nb.cells[:first]
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_edition_configs():
    # the default book is the offline one: MathJax served from the build
    default = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert default["sphinx"]["config"]["mathjax_path"] == "mathjax/tex-mml-chtml.js"
    assert "local_assets" in default["sphinx"]["local_extensions"]
    ins = book_config.variant("instructor")
    assert "instructor" in ins["title"]
    assert ins["sphinx"]["config"]["togglebutton_selector"] == ".toggle"
    with pytest.raises(SystemExit, match="unknown edition"):
        book_config.variant("draft")
    assert re.search(r"^book-instructor:", (ROOT / "Makefile").read_text(), re.M)
