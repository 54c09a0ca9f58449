"""Every stored sweep can be regenerated at paper scale: ``python -m neurips25.<slug> --scale full``
writes ``notebooks/results/<slug>.full.json``. Here each CLI runs its ``full`` settings with
``NEURIPS25_SMOKE=1`` (loops capped by ``runtime.cap``) into a temporary file, so a GPU run of it
cannot crash on shapes or missing keys. Part of ``make test-full``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORED = sorted(p.name.removesuffix(".json") for p in (ROOT / "notebooks" / "results").glob("*.json")
                if not p.name.endswith(".full.json"))
BUDGET_S = 480  # as in test_full_scale.py: on the slower CPU guitar's took over 240 s beside another run


@pytest.mark.parametrize("slug", STORED)
def test_cli_full_scale_runs_under_smoke(slug, tmp_path):
    out = tmp_path / f"{slug}.full.json"
    env = {**os.environ, "NEURIPS25_SMOKE": "1", "NEURIPS25_RESULTS": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", f"neurips25.{slug}", "--scale", "full", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUDGET_S)
    assert proc.returncode == 0, f"{slug} --scale full failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    payload = json.loads(out.read_text())
    assert payload["slug"] == slug and payload["scale"] == "full" and payload.get("smoke") is True
    assert payload["data"], f"{slug}: empty results"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name], "the CLI wrote outside --out"
