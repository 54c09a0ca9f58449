"""Stored results: sweeps too heavy for the notebook budget (``notebooks/results/<slug>.json``) and
each chapter's headline claims (``notebooks/results/claims/<slug>.json``).

Every stored number carries the command that produced it, the seed and the package version, so
"never a number without the code that produced it" holds for stored figures too.
"""
from __future__ import annotations

import base64
import io
import json
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["results_dir", "results_path", "sweep_scale", "claims_path", "add_scale_arguments", "save_results", "load_results", "STATUSES", "Claim", "Claims", "claim_status",
           "load_all_claims", "tally", "tally_sentence"]

_SLUG = re.compile(r"^[a-z0-9_]+$")


def results_dir() -> Path:
    """``$NEURIPS25_RESULTS`` or ``notebooks/results`` of the repository (found from the cwd upwards)."""
    env = os.environ.get("NEURIPS25_RESULTS")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if (p / "notebooks").is_dir() and (p / "pkg").is_dir():
            return p / "notebooks" / "results"
        if p.name == "notebooks":
            return p / "results"
    return here / "results"


def _check_slug(slug: str) -> str:
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise ValueError(f"slug must match [a-z0-9_]+, got {slug!r}")
    return slug


def results_path(slug: str, scale: str = "small") -> Path:
    """Where a stored sweep lives: ``<results_dir>/<slug>.json`` for the book's ``small`` scale,
    ``<slug>.full.json`` for the paper-sized ``full`` scale (regenerated on a GPU)."""
    from .runtime import SCALES

    _check_slug(slug)
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return results_dir() / (f"{slug}.json" if scale == "small" else f"{slug}.{scale}.json")


def sweep_scale(slug: str) -> str:
    """The scale of the stored sweep a notebook reads: the running scale's when that sweep exists
    (``<slug>.full.json`` after ``python -m neurips25.<slug> --scale full``), else the book's ``small``."""
    from .runtime import scale

    s = scale()
    return s if results_path(slug, s).exists() else "small"


def add_scale_arguments(parser) -> None:
    """The two options every chapter CLI shares: ``--scale {small,full}`` (which sweep settings to run;
    ``full`` writes ``<slug>.full.json`` beside the book's ``<slug>.json``) and ``--out PATH``
    (write there instead). ``NEURIPS25_SMOKE=1`` caps the run's loops (``runtime.cap``)."""
    from .runtime import SCALES

    parser.add_argument("--scale", choices=SCALES, default="small",
                        help="small: the book's stored sweep; full: paper-sized (writes <slug>.full.json)")
    parser.add_argument("--out", type=Path, default=None, help="write the results here instead")


def save_results(slug: str, data: dict[str, Any], command: str, seed: int, path: Path | None = None,
                 scale: str = "small") -> Path:
    """Write ``data`` with provenance (command, seed, scale, versions, smoke flag) to ``path`` or
    :func:`results_path` ``(slug, scale)``."""
    _check_slug(slug)
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got {type(data).__name__}")
    import torch

    from . import __version__
    from .runtime import smoke

    path = Path(path) if path else results_path(slug, scale)
    payload = {
        "slug": slug,
        "command": command,
        "seed": seed,
        "scale": scale,
        "neurips25": __version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "data": data,
    }
    if smoke():  # a capped run: its numbers mean nothing, and say so
        payload["smoke"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return path


def encode_state(state: dict) -> str:
    """A state_dict as text, for shipping trained weights inside a results file: base64 of its
    ``torch.save`` bytes (tensors moved to the CPU)."""
    import torch

    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise TypeError("state must be a dict of tensors (a state_dict)")
    buf = io.BytesIO()
    torch.save({k: v.detach().cpu().clone() for k, v in state.items()}, buf)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_state(text: str) -> dict:
    """Inverse of :func:`encode_state` (tensors on the CPU)."""
    import torch

    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty base64 string from encode_state")
    return torch.load(io.BytesIO(base64.b64decode(text)), map_location="cpu", weights_only=True)


def load_results(slug: str, path: Path | None = None, scale: str = "small") -> dict[str, Any]:
    """The stored payload for ``slug`` at ``scale`` (``payload["data"]`` holds the numbers)."""
    _check_slug(slug)
    path = Path(path) if path else results_path(slug, scale)
    if not path.exists():
        flag = "" if scale == "small" else f" --scale {scale}"
        raise FileNotFoundError(f"no stored results for {slug!r} at {path}; regenerate with "
                                f"`python -m neurips25.{slug}{flag}`")
    return json.loads(path.read_text())


# --- headline claims ------------------------------------------------------------------------------
# Each chapter records its paper's headline claims through one `Claims` registry. A claim's status is
# computed from the same boolean criteria the notebook asserts on, never typed in; the executed
# notebook writes them to notebooks/results/claims/<slug>.json, from which the book's reproduction
# scoreboard is built. One source: the chapter's "Paper vs. ours" table is `Claims.table()`.

STATUSES = ("reproduced", "partial", "needs scale", "not reproduced")
STATUS_COLORS = {"reproduced": "#2e7d32", "partial": "#b26a00", "needs scale": "#1565c0",
                 "not reproduced": "#c62828"}
_CLAIM_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
RECORD_ENV = "NEURIPS25_RECORD_CLAIMS"


def _check_criteria(name: str, value: Any, *, required: bool) -> dict[str, bool] | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{name} must be a non-empty dict {{description: bool}}, got {value!r}")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k.strip():
            raise ValueError(f"{name} keys must be non-empty strings describing the test, got {k!r}")
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name}[{k!r}] must be a bool (the outcome of the test), got "
                            f"{type(v).__name__}")
        out[k] = bool(v)
    return out


def claim_status(criteria: dict[str, bool], trend: dict[str, bool] | None = None) -> str:
    """The status a claim's criteria imply.

    ``reproduced``: every criterion holds. ``needs scale``: not all hold, but every ``trend``
    criterion does (the measured trend moves toward the paper as size grows). ``partial``: some
    criteria hold. ``not reproduced``: none does.
    """
    criteria = _check_criteria("criteria", criteria, required=True)
    trend = _check_criteria("trend", trend, required=False)
    held = sum(criteria.values())
    if held == len(criteria):
        return "reproduced"
    if trend is not None and all(trend.values()):
        return "needs scale"
    return "partial" if held else "not reproduced"


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper, the paper's number, ours, and the tests behind the status."""

    id: str
    statement: str
    paper: str
    ours: str
    criteria: dict[str, bool]
    trend: dict[str, bool] | None = None
    note: str = ""
    cause: str = ""  # for a claim that falls short: the measured cause, in a sentence or two

    @property
    def status(self) -> str:
        return claim_status(self.criteria, self.trend)

    @property
    def anchor(self) -> str:
        """The HTML id of this claim's row in its chapter's Paper-vs-ours table."""
        return f"claim-{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "statement": self.statement, "paper": self.paper, "ours": self.ours,
                "status": self.status, "criteria": self.criteria, "trend": self.trend, "note": self.note,
                "cause": self.cause}

    def __repr__(self) -> str:
        tests = "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in
                          {**self.criteria, **(self.trend or {})}.items())
        return f"claim {self.id!r} ({self.status}) — {self.statement} [{tests}]"


def _cell(value: Any) -> str:
    from .display import fmt

    if not isinstance(value, (str, int, float, np.integer, np.floating)):
        raise TypeError(f"paper/ours must be a string or a number, got {type(value).__name__}")
    return fmt(value) if not isinstance(value, str) else value


class Claims:
    """A chapter's headline claims, in the order the notebook establishes them.

    >>> claims = Claims("dqp")
    >>> c = claims.add("speedup", "dQP is faster than OptNet", paper="2541x", ours=f"{s:.0f}x",
    ...                criteria={"speed-up >= 10 at the largest n": s >= 10})
    >>> assert c.status == "reproduced", c
    """

    def __init__(self, slug: str):
        self.slug = _check_slug(slug)
        self._claims: dict[str, Claim] = {}
        self.context: list[list[str]] = []  # Paper-vs-ours rows that are not headline claims
        self._saved_to: Path | None = None
        self._loaded_from: Path | None = None

    def add(self, id: str, statement: str, *, paper: Any, ours: Any, criteria: dict[str, bool],
            trend: dict[str, bool] | None = None, note: str = "", cause: str = "") -> Claim:
        """Record a claim; ``criteria`` map a description of each test to its boolean outcome.

        ``cause``: why a claim falls short, as the chapter measured it (shown on the book's
        scoreboard); every stored claim that is not reproduced must have one (``tests/test_claims.py``).
        """
        if not isinstance(id, str) or not _CLAIM_ID.match(id):
            raise ValueError(f"id must match [a-z0-9][a-z0-9-]*, got {id!r}")
        if id in self._claims:
            raise ValueError(f"claim id {id!r} is already recorded for {self.slug!r}")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError(f"statement must be a non-empty string, got {statement!r}")
        for name, text in (("note", note), ("cause", cause)):
            if not isinstance(text, str):
                raise TypeError(f"{name} must be a string, got {type(text).__name__}")
        c = Claim(id, statement.strip(), _cell(paper), _cell(ours),
                  _check_criteria("criteria", criteria, required=True),
                  _check_criteria("trend", trend, required=False), note, cause.strip())
        self._claims[id] = c
        return c

    def __getitem__(self, id: str) -> Claim:
        if id not in self._claims:
            raise KeyError(f"no claim {id!r} recorded for {self.slug!r}; have {list(self._claims)}")
        return self._claims[id]

    def __iter__(self):
        return iter(self._claims.values())

    def __len__(self) -> int:
        return len(self._claims)

    def table(self, extra: Iterable[Sequence[Any]] | None = None, title: str | None = "Paper vs. ours"):
        """The chapter's Paper-vs-ours table: every claim with its status, then context rows
        ``(quantity, paper, ours, note)`` that are not headline claims (status "—"). ``extra`` replaces
        the stored context rows, which :meth:`save` records with the claims."""
        from .display import ClaimsTable

        full = self.full_scale()
        if extra is None:
            return ClaimsTable(list(self), extra=self.context, title=title, full=full)
        rows = [[_cell(v) if v is not None else "—" for v in row] for row in extra]
        table = ClaimsTable(list(self), extra=rows, title=title, full=full)  # checks the rows' shape
        self.context = rows
        if self._saved_to is not None:  # saved before the context rows were given: keep the file whole
            self.save(self._saved_to)
        return table

    def full_scale(self) -> Claims | None:
        """The same chapter's claims recorded at ``full`` scale (on a GPU: ``claims/<slug>.full.json``
        beside this chapter's claims file), shown as the "full scale (GPU)" column; None if never run."""
        from .runtime import scale

        if scale() != "small":
            return None
        here = self._saved_to or self._loaded_from
        path = here.with_name(f"{self.slug}.full.json") if here else claims_path(self.slug, "full")
        return Claims.load(self.slug, path) if path.exists() else None

    def to_dict(self) -> dict[str, Any]:
        from .runtime import scale

        return {"slug": self.slug, "scale": scale(), "claims": [c.to_dict() for c in self],
                "context": self.context}

    def save(self, path: Path | None = None) -> Path | None:
        """Write :func:`claims_path` (``claims/<slug>.json``, or ``<slug>.full.json`` at ``full`` scale)
        under :func:`results_dir`: the claims and the context rows (a later ``table(extra=...)``
        rewrites the file, so the two calls may come in either order).

        Only when ``path`` is given or ``$NEURIPS25_RECORD_CLAIMS=1`` (``make execute`` sets it), so a
        reader running the notebook in Colab or Jupyter leaves no files behind.
        """
        if path is None and os.environ.get(RECORD_ENV) != "1":
            return None
        if len(self) == 0:
            raise ValueError(f"no claims recorded for {self.slug!r}")
        from .runtime import scale

        path = Path(path) if path else claims_path(self.slug, scale())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n")
        self._saved_to = path
        return path

    @classmethod
    def load(cls, slug: str, path: Path | None = None) -> Claims:
        """The claims a chapter's executed notebook recorded."""
        _check_slug(slug)
        path = Path(path) if path else claims_path(slug)
        if not path.exists():
            raise FileNotFoundError(f"no recorded claims for {slug!r} at {path}; run `make execute NB={slug}`")
        data = json.loads(path.read_text())
        claims = cls(data["slug"])
        for d in data["claims"]:
            c = claims.add(d["id"], d["statement"], paper=d["paper"], ours=d["ours"],
                           criteria=d["criteria"], trend=d.get("trend"), note=d.get("note", ""),
                           cause=d.get("cause", ""))
            if c.status != d["status"]:
                raise ValueError(f"{path}: claim {c.id!r} is stored as {d['status']!r} but its criteria "
                                 f"give {c.status!r}")
        claims.context = [list(r) for r in data.get("context", [])]
        claims._loaded_from = path
        return claims


def claims_path(slug: str, scale: str = "small") -> Path:
    """``<results_dir>/claims/<slug>.json`` (the book's scale) or ``<slug>.full.json`` (paper scale)."""
    name = results_path(slug, scale).name
    return results_dir() / "claims" / name


def load_all_claims(directory: Path | None = None, scale: str = "small") -> dict[str, Claims]:
    """Every chapter's claims recorded at ``scale``, keyed by slug (sorted by slug)."""
    directory = Path(directory) if directory else results_dir() / "claims"
    full = [p for p in directory.glob("*.full.json")]
    paths = full if scale == "full" else [p for p in directory.glob("*.json") if p not in full]
    slugs = {p: p.name.split(".", 1)[0] for p in paths}
    return {slugs[p]: Claims.load(slugs[p], p) for p in sorted(paths, key=slugs.get)}


def tally(all_claims: dict[str, Claims]) -> dict[str, int]:
    """Counts of claims per status (every status present, in :data:`STATUSES` order)."""
    counts = {s: 0 for s in STATUSES}
    for claims in all_claims.values():
        for c in claims:
            counts[c.status] += 1
    return counts


def tally_sentence(all_claims: dict[str, Claims]) -> str:
    """One line for the intro and the README, e.g. "41 of 63 headline claims reproduce at CPU scale"."""
    t = tally(all_claims)
    total = sum(t.values())
    rest = ", ".join(f"{t[s]} {s}" for s in STATUSES[1:] if t[s])
    return (f"{t['reproduced']} of {total} headline claims from {len(all_claims)} papers reproduce at "
            f"CPU scale" + (f" ({rest})" if rest else "") + ".")
