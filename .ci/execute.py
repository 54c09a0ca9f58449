#!/usr/bin/env python
"""Re-execute notebooks in place in a fresh kernel and record seconds per notebook.

Usage: python .ci/execute.py [--out DIR] [--scale full] [SLUG ...]   (no slug: every notebook)

--out DIR: leave notebooks/ untouched; write the executed copies and runtimes.json to DIR instead
(`make test-gpu` uses it: on a GPU the asserts must hold, while printed digits may move).

--scale full (with --out): run the paper-sized configs (NEURIPS25_SCALE=full) and record each chapter's
claims at that scale in notebooks/results/claims/<slug>.full.json, the book's "full scale (GPU)"
column. The claims' asserts are calibrated at the book's scale, so at full scale a failing one is
reported (its claim is recorded with its computed status) and execution goes on; any other error, or
an assertion inside the package, fails the notebook.

Keeps cell tags and stores widget state (so the book shows widgets); no per-cell timing metadata.
Writes/updates notebooks/runtimes.json {slug: seconds}; notebooks record their claims
(NEURIPS25_RECORD_CLAIMS=1) and the README tally is refreshed. Exits non-zero if any notebook fails.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def cell_errors(nb) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """The errors an executed notebook's cells ended in, split into claim checks (an
    ``AssertionError`` raised by the notebook's own code: ``(cell, message)``) and everything else
    (``(cell, "Name: message", traceback)``: a crash, or an assertion inside the package)."""
    claims, other = [], []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") != "error":
                continue
            tb = ANSI.sub("", "\n".join(o.get("traceback", [])))
            if o["ename"] == "AssertionError" and f"neurips25{os.sep}" not in tb and "site-packages" not in tb:
                claims.append((i, o["evalue"][:300]))
            else:
                other.append((i, f"{o['ename']}: {o['evalue'][:300]}", tb[-3000:]))
    return claims, other


def execute(path: Path, out: Path | None = None, *, allow_claim_failures: bool = False,
            timeout: int = 900) -> tuple[float, object]:
    """Execute ``path`` in a fresh kernel; write it in place or into ``out``. Returns (seconds, nb).
    ``allow_claim_failures``: go on past failing cells (see :func:`cell_errors`), as at full scale."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            store_widget_state=True, allow_errors=allow_claim_failures,
                            resources={"metadata": {"path": str(NB_DIR)}})
    t0 = time.perf_counter()
    client.execute()
    secs = time.perf_counter() - t0
    for cell in nb.cells:  # keep stored notebooks free of volatile execution metadata
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, out / path.name if out else path)
    return secs, nb


def record(rt_path: Path, slug: str, secs: float) -> None:
    """Update one entry of runtimes.json under a lock (several notebooks may finish at once)."""
    with open(rt_path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runtimes = json.loads(rt_path.read_text()) if rt_path.exists() else {}
        runtimes[slug] = round(secs, 1)
        rt_path.write_text(json.dumps(dict(sorted(runtimes.items())), indent=1) + "\n")


def main(argv: list[str]) -> int:
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out, full = None, False
    while argv[:1] in (["--out"], ["--scale"]):
        if len(argv) < 2:
            print(f"{argv[0]} needs a value", file=sys.stderr)
            return 2
        if argv[0] == "--out":
            out = Path(argv[1]).resolve()
            out.mkdir(parents=True, exist_ok=True)
        elif argv[1] == "full":
            full = True
        elif argv[1] != "small":
            print(f"--scale must be small or full, got {argv[1]!r}", file=sys.stderr)
            return 2
        argv = argv[2:]
    if full and out is None:
        print("--scale full needs --out DIR (the stored notebooks are the book's small scale)", file=sys.stderr)
        return 2
    if full:  # paper-sized configs; claims go to notebooks/results/claims/<slug>.full.json
        os.environ["NEURIPS25_SCALE"] = "full"
        os.environ["NEURIPS25_RECORD_CLAIMS"] = "1"
    elif out is None:  # in place: notebooks write notebooks/results/claims/<slug>.json
        os.environ["NEURIPS25_RECORD_CLAIMS"] = "1"
    slugs = argv or sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
    rt_path = (out or NB_DIR) / "runtimes.json"
    failed = []
    for slug in slugs:
        path = NB_DIR / f"{slug}.ipynb"
        if not path.exists():
            print(f"no such notebook: {path.relative_to(ROOT)}", file=sys.stderr)
            return 2
        try:
            secs, nb = execute(path, out, allow_claim_failures=full)
        except Exception as e:  # noqa: BLE001 - report and go on to the next notebook
            print(f"FAILED {slug}: {e.__class__.__name__}: {str(e)[-2000:]}", file=sys.stderr)
            failed.append(slug)
            continue
        claim_failures, errors = cell_errors(nb)
        for i, msg in claim_failures:
            print(f"  {slug} cell {i}: a check calibrated at the book's scale failed: {msg}")
        if errors:
            for i, msg, tb in errors:
                print(f"FAILED {slug} cell {i}: {msg}\n{tb}", file=sys.stderr)
            failed.append(slug)
        print(f"{slug}: {secs:.1f} s")
        record(rt_path, slug, secs)
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
    if out is None:  # the README's one-line tally of the scoreboard follows the recorded claims
        subprocess.run([sys.executable, str(ROOT / ".ci" / "scoreboard.py")], check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
