"""Every chapter's ``full`` configuration runs end to end on a CPU, at a bounded cost.

Each notebook is executed in a fresh kernel with ``NEURIPS25_SCALE=full`` (the paper-sized settings
a GPU/Colab user switches on) and ``NEURIPS25_SMOKE=1`` (``neurips25.runtime.cap`` bounds every
training loop, epoch count, seed list and sweep size the modules run). That proves a ``full`` run
cannot crash on shapes, missing config keys or devices, without paying for it. A two-step run
cannot reproduce a claim, so the one error a cell may end in is an ``AssertionError`` raised by the
notebook's own code (a claim's check); any other error, or an assertion inside the package, fails
(the same rule as ``.ci/execute.py --scale full`` on a GPU).

Run with ``make test-full`` (part of ``make test``). Notebooks run through ``.ci/execute.py``'s
``execute`` (as on a GPU); claims are not recorded and the executed copies go to a temporary folder.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"
SLUGS = sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
# A smoke run that takes longer is not capped: it would run the full cost on a GPU. 480 s, not the
# former 120 s: this machine kind also comes with a CPU 2-3x slower than the one the 120 s were set on,
# where the slowest smoke runs (r2r, leapfactual, guitar; 40-60 s on the faster CPU) took 120-165 s
# alone and up to 313 s with another heavy one beside them on the second core (`-n 2`). An uncapped
# full-scale run takes half an hour or more on a CPU, so 480 s still tells the two apart.
BUDGET_S = 480
# RETRY_NOTE: a run over budget is run once more and the faster of the two counts. CI once measured
# frm's smoke run at 498 s where it takes 20-30 s: a stall of about the 480 s timeout that then ended
# without an error, the shape of the ipykernel 7 hang seen later in a `make execute` (900 s; see
# pkg/constraints.txt, which now holds ipykernel at 6.x). An uncapped run is over budget both times
# (each cell is also stopped at BUDGET_S), so the retry cannot hide one.

_spec = importlib.util.spec_from_file_location("ci_execute", ROOT / ".ci" / "execute.py")
ci_execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ci_execute)


@pytest.mark.parametrize("slug", SLUGS)
def test_full_config_runs_under_smoke(slug, monkeypatch, tmp_path):
    monkeypatch.setenv("NEURIPS25_SCALE", "full")
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    monkeypatch.delenv("NEURIPS25_RECORD_CLAIMS", raising=False)
    times = []
    for _ in range(2):  # a run over budget is measured once more (see RETRY_NOTE)
        secs, nb = ci_execute.execute(NB_DIR / f"{slug}.ipynb", tmp_path, allow_claim_failures=True,
                                      timeout=BUDGET_S)
        _, errors = ci_execute.cell_errors(nb)
        assert not errors, f"{slug}: full config under NEURIPS25_SMOKE=1 failed:\n" + "\n\n".join(
            f"cell {i}: {msg}\n{tb}" for i, msg, tb in errors)
        times.append(secs)
        if secs <= BUDGET_S:
            break
    assert min(times) <= BUDGET_S, (
        f"{slug}: smoke runs took {', '.join(f'{t:.0f}' for t in times)} s (> {BUDGET_S} s): loops not capped?")
