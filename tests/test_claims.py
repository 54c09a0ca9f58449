"""Headline claims and the reproduction scoreboard: the Claims API, and every chapter's recorded claims
against its stored notebook (one source for the scoreboard and the Paper-vs-ours table)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from neurips25.results import STATUSES, Claims, claim_status, load_all_claims, tally, tally_sentence

ROOT = Path(__file__).resolve().parent.parent
CLAIMS_DIR = ROOT / "notebooks" / "results" / "claims"
NON_CHAPTERS = {"getting_started", "tiny_lms"}  # orientation and the language-model lab
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [c["file"].split("/", 1)[1] for p in TOC["parts"] for c in p["chapters"]
            if c["file"].startswith("notebooks/") and c["file"].split("/", 1)[1] not in NON_CHAPTERS]


# --- the API ---------------------------------------------------------------------------------------

def test_status_is_computed_from_the_criteria():
    assert claim_status({"a": True, "b": True}) == "reproduced"
    assert claim_status({"a": True, "b": False}) == "partial"
    assert claim_status({"a": False}) == "not reproduced"
    assert claim_status({"a": False}, trend={"moves toward the paper": True}) == "needs scale"
    assert claim_status({"a": False}, trend={"moves toward the paper": False}) == "not reproduced"
    assert claim_status({"a": np.bool_(True)}) == "reproduced"
    assert set(STATUSES) == {"reproduced", "partial", "needs scale", "not reproduced"}


@pytest.mark.parametrize("kwargs, match", [
    (dict(criteria={}), "criteria must be a non-empty dict"),
    (dict(criteria=None), "criteria must be a non-empty dict"),
    (dict(criteria={"x": 0.7}), r"criteria\['x'\] must be a bool"),
    (dict(criteria={"": True}), "keys must be non-empty strings"),
    (dict(criteria={"x": True}, trend={}), "trend must be a non-empty dict"),
])
def test_add_rejects_claims_without_a_criterion(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Claims("demo").add("c", "a claim", paper=1, ours=2, **kwargs)


def test_add_validates_ids_and_values():
    claims = Claims("demo")
    with pytest.raises(ValueError, match="id must match"):
        claims.add("Bad Id", "s", paper=1, ours=1, criteria={"x": True})
    with pytest.raises(ValueError, match="statement must be"):
        claims.add("ok", " ", paper=1, ours=1, criteria={"x": True})
    with pytest.raises(TypeError, match="paper/ours must be"):
        claims.add("ok", "s", paper=[1], ours=1, criteria={"x": True})
    claims.add("ok", "s", paper=1, ours=1, criteria={"x": True})
    with pytest.raises(ValueError, match="already recorded"):
        claims.add("ok", "s", paper=1, ours=1, criteria={"x": True})
    with pytest.raises(ValueError, match="slug must match"):
        Claims("Not a slug")
    with pytest.raises(KeyError, match="no claim 'nope'"):
        claims["nope"]


def test_round_trip_table_and_tally(tmp_path, monkeypatch):
    claims = Claims("demo")
    claims.add("fast", "it is fast", paper="10x", ours=12.3456, criteria={"speed-up > 5": True})
    claims.add("good", "it is good", paper=0.9, ours=0.7, criteria={"acc > 0.8": False},
               trend={"acc grows with n": True}, note="n = 100")
    claims.add("ok", "it is ok", paper=1, ours=0, criteria={"a": True, "b": False})
    table = claims.table(extra=[("context", 1, 2, "not a claim")])
    text = repr(table)
    assert "it is fast" in text and "needs scale" in text and "partial" in text and "—" in text
    assert 'id="claim-fast"' in table._repr_html_()
    monkeypatch.delenv("NEURIPS25_RECORD_CLAIMS", raising=False)
    assert claims.save() is None  # a reader's run writes nothing
    path = claims.save(tmp_path / "demo.json")
    back = Claims.load("demo", path)
    assert repr(back.table()) == text
    assert [c.status for c in back] == ["reproduced", "needs scale", "partial"]
    # save first, then the context rows: the file is rewritten whole
    late = Claims("demo")
    late.add("fast", "it is fast", paper="10x", ours=1, criteria={"x": True})
    late.save(tmp_path / "late.json")
    late.table(extra=[("context", 1, 2, "n")])
    assert Claims.load("demo", tmp_path / "late.json").context == [["context", "1", "2", "n"]]
    assert tally({"demo": back}) == {"reproduced": 1, "partial": 1, "needs scale": 1, "not reproduced": 0}
    assert tally_sentence({"demo": back}).startswith("1 of 3 headline claims from 1 papers")


def test_load_rejects_a_hand_typed_status(tmp_path):
    claims = Claims("demo")
    claims.add("c", "s", paper=1, ours=1, criteria={"x": False})
    path = claims.save(tmp_path / "demo.json")
    data = json.loads(path.read_text())
    data["claims"][0]["status"] = "reproduced"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="stored as 'reproduced' but its criteria give 'not reproduced'"):
        Claims.load("demo", path)


# --- the recorded claims ---------------------------------------------------------------------------

def _stored_texts(slug: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{slug}.ipynb").read_text())
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
    return out


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_records_3_to_6_claims_matching_its_notebook(slug):
    path = CLAIMS_DIR / f"{slug}.json"
    assert path.exists(), f"{slug}: no recorded claims; the notebook must call claims.save() (make execute NB={slug})"
    claims = Claims.load(slug, path)  # also re-derives every status from its criteria
    assert 3 <= len(claims) <= 6, f"{slug}: {len(claims)} headline claims recorded, want 3–6"
    table = repr(claims.table())
    assert any(table == t.strip() for t in _stored_texts(slug)), (
        f"{slug}: the notebook's stored Paper-vs-ours table differs from {path.name}; re-execute it")
    src = (ROOT / "notebooks" / f"{slug}.ipynb").read_text()
    for c in claims:  # every status is asserted in the notebook, so a change of status fails the tests
        assert re.search(rf'claims\[\\"{re.escape(c.id)}\\"\]|\b\w+\.status\b', src), c.id


@pytest.mark.parametrize("slug", CHAPTERS)
def test_every_claim_that_falls_short_says_why(slug):
    """DESIGN: a claim that does not reproduce comes with the measured cause (the scoreboard shows it)."""
    for c in Claims.load(slug, CLAIMS_DIR / f"{slug}.json"):
        if c.status != "reproduced":
            assert len(c.cause) >= 40, f"{slug}: claim {c.id!r} is {c.status} but records no cause"


def test_cause_round_trips_and_is_checked(tmp_path):
    claims = Claims("dqp")
    with pytest.raises(TypeError, match="cause must be a string"):
        claims.add("x", "a claim", paper="1", ours="2", criteria={"t": False}, cause=None)
    claims.add("x", "a claim", paper="1", ours="2", criteria={"t": False}, cause=" too slow here ")
    claims.save(tmp_path / "dqp.json")
    assert Claims.load("dqp", tmp_path / "dqp.json")["x"].cause == "too slow here"


def test_no_claims_for_unknown_chapters():
    assert set(load_all_claims(CLAIMS_DIR)) <= set(CHAPTERS)


def test_readme_tally_is_generated():
    r = subprocess.run([sys.executable, str(ROOT / ".ci" / "scoreboard.py"), "--check"])
    assert r.returncode == 0, "README.md's tally is stale: run python .ci/scoreboard.py"


def test_full_scale_claims_become_a_gpu_column(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURIPS25_RESULTS", str(tmp_path))
    monkeypatch.setenv("NEURIPS25_RECORD_CLAIMS", "1")

    def record(ours, ok):
        c = Claims("demo")
        c.add("gap", "A beats B", paper="0.2", ours=ours, criteria={"gap > 0.1": ok})
        c.add("other", "C holds", paper="1", ours="1", criteria={"C": True})
        return c, c.save()

    monkeypatch.setenv("NEURIPS25_SCALE", "full")
    _, full_path = record("0.19", True)
    assert full_path == tmp_path / "claims" / "demo.full.json"
    assert json.loads(full_path.read_text())["scale"] == "full"
    assert "full scale (GPU)" not in repr(Claims.load("demo", full_path).table())  # no column at full
    monkeypatch.setenv("NEURIPS25_SCALE", "small")
    small, small_path = record("0.05", False)
    assert small_path == tmp_path / "claims" / "demo.json"
    table = small.table()
    assert table.columns == ["claim", "paper", "ours", "status", "full scale (GPU)", "note"]
    assert table.rows[0][4] == "0.19 (reproduced)" and table.rows[0][3] == "not reproduced"
    assert repr(Claims.load("demo", small_path).table()) == repr(table)  # same table from the file
    assert set(load_all_claims(tmp_path / "claims")) == {"demo"}
    assert load_all_claims(tmp_path / "claims", "full")["demo"]["gap"].ours == "0.19"
    assert tally(load_all_claims(tmp_path / "claims"))["not reproduced"] == 1
    full_path.unlink()
    assert "full scale (GPU)" not in repr(small.table())
