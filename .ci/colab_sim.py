#!/usr/bin/env python
"""Simulate a Google Colab runtime installing the book's package, and fail on any clash.

1. Build a wheel of ./pkg.
2. Create a fresh virtual environment holding only what Colab preinstalls that matters to us
   (torch, numpy, scipy, scikit-learn, matplotlib, ipywidgets, transformers, tokenizers, plus the
   Jupyter kernel); the versions pinned on this machine stand in for Colab's.
3. Run every notebook's install-cell command against the local wheel instead of the git URL
   (one pip call per distinct set of extras), exactly as `%pip install -q ...` would.
4. Fail if torch or numpy changed version, if `pip check` reports a conflict, if any `neurips25`
   module fails to import, or if the orientation notebook fails to run there.

Usage: python .ci/colab_sim.py [WORKDIR]   (default _build/colab)
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREINSTALLED = ["torch", "numpy", "scipy", "scikit-learn", "matplotlib", "ipywidgets", "transformers",
                "tokenizers", "ipykernel", "nbclient", "nbformat"]
INSTALL = re.compile(r'%pip install -q "neurips25(\[[a-z,]+\])? @ git\+\S+#subdirectory=pkg"')


def run(cmd: list[str], **kw) -> str:
    print("+", " ".join(cmd), flush=True)
    res = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if res.returncode:
        print(res.stdout[-4000:], res.stderr[-4000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"command failed ({res.returncode}): {' '.join(cmd)}")
    return res.stdout


def pinned(names: list[str]) -> list[str]:
    lock = {}
    for line in (ROOT / "pkg" / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, ver = line.split("==", 1)
            lock[name.lower().replace("_", "-")] = ver.strip()
    return [f"{n}=={lock[n]}" if n in lock else n for n in names]


def versions(py: Path) -> dict[str, str]:
    out = run([str(py), "-m", "pip", "list", "--format=json"])
    return {d["name"].lower(): d["version"] for d in json.loads(out)}


def main(argv: list[str]) -> int:
    t0 = time.time()
    work = Path(argv[0]) if argv else ROOT / "_build" / "colab"
    wheels, venv = work / "wheels", work / "venv"
    wheels.mkdir(parents=True, exist_ok=True)
    for old in wheels.glob("neurips25-*.whl"):
        old.unlink()
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT / "pkg")])
    wheel = next(wheels.glob("neurips25-*.whl"))
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    run([str(py), "-m", "pip", "install", "-q"] + pinned(PREINSTALLED))
    before = versions(py)

    extras_sets = set()
    for nb_path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text())
        first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        m = INSTALL.search("".join(first_code["source"]))
        if not m:
            raise SystemExit(f"{nb_path.name}: no Colab install cell in the shared pattern")
        extras_sets.add(m.group(1) or "")
    for extras in sorted(extras_sets):
        # What `%pip install -q "neurips25[extras] @ git+..."` does, with the local wheel.
        run([str(py), "-m", "pip", "install", "-q", f"neurips25{extras} @ {wheel.as_uri()}"])
    after = versions(py)

    changed = {n: (before[n], after.get(n)) for n in ("torch", "numpy") if before.get(n) != after.get(n)}
    if changed:
        raise SystemExit(f"installing neurips25 changed Colab's preinstalled packages: {changed}")
    run([str(py), "-m", "pip", "check"])
    run([str(py), "-c", (
        "import importlib, pkgutil, neurips25\n"
        "mods = [m.name for m in pkgutil.walk_packages(neurips25.__path__, 'neurips25.')\n"
        "        if not m.name.endswith('__main__')]  # importing a __main__ would run its CLI\n"
        "[importlib.import_module(m) for m in mods]\n"
        "print(len(mods), 'modules import')")], cwd=work)
    run([str(py), "-c", (
        "import nbformat; from nbclient import NotebookClient\n"
        f"nb = nbformat.read({str(ROOT / 'notebooks' / 'getting_started.ipynb')!r}, as_version=4)\n"
        f"NotebookClient(nb, timeout=600, kernel_name='python3', resources={{'metadata': {{'path': {str(work)!r}}}}}).execute()\n"
        "print('getting_started ran')")], cwd=work)
    print(f"Colab simulation passed in {time.time() - t0:.0f} s: extras {sorted(extras_sets)}; "
          f"torch {after['torch']}, numpy {after['numpy']} unchanged; pip check clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
