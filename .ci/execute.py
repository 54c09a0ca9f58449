#!/usr/bin/env python
"""Re-execute notebooks in place in a fresh kernel and record seconds per notebook.

Usage: python .ci/execute.py [--out DIR] [SLUG ...]   (no slug: every notebook in notebooks/)

--out DIR: leave notebooks/ untouched; write the executed copies and runtimes.json to DIR instead
(`make test-gpu` uses it: on a GPU the asserts must hold, while printed digits may move).

Keeps cell tags and stores widget state (so the book shows widgets); no per-cell timing metadata.
Writes/updates notebooks/runtimes.json {slug: seconds}; notebooks record their claims
(NEURIPS25_RECORD_CLAIMS=1) and the README tally is refreshed. Exits non-zero if any notebook fails.
"""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"


def execute(path: Path, out: Path | None = None) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                            store_widget_state=True, resources={"metadata": {"path": str(NB_DIR)}})
    t0 = time.perf_counter()
    client.execute()
    secs = time.perf_counter() - t0
    for cell in nb.cells:  # keep stored notebooks free of volatile execution metadata
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, out / path.name if out else path)
    return secs


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
    out = None
    if argv[:1] == ["--out"]:
        if len(argv) < 2:
            print("--out needs a directory", file=sys.stderr)
            return 2
        out = Path(argv[1]).resolve()
        out.mkdir(parents=True, exist_ok=True)
        argv = argv[2:]
    else:  # in place: notebooks write notebooks/results/claims/<slug>.json
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
            secs = execute(path, out)
        except Exception as e:  # noqa: BLE001 - report and go on to the next notebook
            print(f"FAILED {slug}: {e.__class__.__name__}: {str(e)[-2000:]}", file=sys.stderr)
            failed.append(slug)
            continue
        print(f"{slug}: {secs:.1f} s")
        record(rt_path, slug, secs)
    if out is None:  # the README's one-line tally of the scoreboard follows the recorded claims
        subprocess.run([sys.executable, str(ROOT / ".ci" / "scoreboard.py")], check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
