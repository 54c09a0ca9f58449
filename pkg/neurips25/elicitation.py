r"""Quantifying elicitation of latent capabilities by training exactly $p$ parameters.

Donoway et al., "Quantifying Elicitation of Latent Capabilities in Language Models", NeurIPS 2025.

Pieces, in the paper's order:

* a *latent capability* at toy scale: a tiny GPT-2 pretrained (Lightning, ``neurips25.lm.train_lm``)
  on "majority symbol of a sequence", asked with marker ``?`` (answer a letter) or ``!`` (answer a
  digit), while marker ``#`` is only ever followed by a random digit; the downstream task asks for
  the majority digit after ``#`` (``majority_pairs``), so zero-shot accuracy is at chance;
* *information-constrained fine-tuning*: exactly ``p`` scalar entries of the LoRA adapters,
  chosen uniformly at random, are trained (``ExactPLoRA``: a trainable vector $\delta\in\mathbb R^p$
  scattered into frozen adapter tensors, so no optimiser or weight decay can touch anything else);
* the budget sweep (``sweep``), the frontier $f(p)$ and gap closure
  $G(p) = (f(p) - \mathrm{Acc}_0)/(\mathrm{Acc}_\text{ceil} - \mathrm{Acc}_0)$ (``frontier``, ``gap_closure``);
* the logistic fit in $\log p$ (and the paper's generalised logistic) with power-law, saturating-exponential,
  broken and smoothly broken power-law rivals (each with a ceiling) compared by AIC/BIC (``aic_null_test``:
  what a design can resolve),
  and bootstrap intervals for the budgets that close 50 % / 90 % of the gap (``fit_curve``,
  ``compare_fits``, ``params_for_gap``, ``bootstrap_params_for_gap``);
* prequential MDL (``prequential_mdl``), the paper's second measure of elicitation vs teaching;
* ``run_all`` / ``python -m neurips25.elicitation``: the stored sweep over three pretrained models.
* ``rise_study`` / ``python -m neurips25.elicitation --rise``: four more budgets inside the rise of the
  same three models, added to the stored sweep (the law contest needs points between the bends).
* ``subset_study`` / ``python -m neurips25.elicitation --subsets --models M``: all 19 budgets of the same
  models with several random subsets each and larger evaluation splits (the paper's 3-5 subsets per
  budget), the frontier the law contest is fitted to.

Fine-tuning runs are plain full-batch torch loops, not Lightning: a sweep is hundreds of
sub-second runs over one tensor batch, where a ``Trainer``'s setup would cost more than the run.
"""
from __future__ import annotations

import copy
import math
import random

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call

from neurips25.runtime import cap, check_int

__all__ = ["LETTERS", "DIGITS", "MARKERS", "majority_pairs", "task_tokenizer", "encode_pairs", "pretrain",
           "ExactPLoRA", "select_entries", "finetune", "accuracy", "run_budget", "sweep", "frontier",
           "gap_closure", "MODELS", "fit_curve", "compare_fits", "aic_null_test", "params_for_gap", "bootstrap_params_for_gap",
           "lr_grid", "prequential_mdl", "mdl_code", "make_data", "SWEEP", "RISE_BUDGETS", "run_all", "rise_study",
           "SUBSET_BUDGETS", "SUBSETS", "subset_study", "extend_lr_edges", "random_init", "TEACHING_BUDGETS",
           "teaching_study"]

LETTERS = "abcd"
DIGITS = "1234"
MARKERS = {"?": "letter", "!": "digit", "#": "digit"}  # "#": random answers in pretraining


# ----------------------------------------------------------------------------- the task
def majority_pairs(n: int, *, marker: str = "?", length: int = 9, locked: bool = False,
                   seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (prompt, answer) pairs: ``"abacdaaba?"`` -> ``"a"`` (marker ``?``) or ``"1"`` (``!``/``#``).

    Sequences of ``length`` letters from ``abcd`` with a unique most frequent letter; the answer is
    that letter (``?``) or its digit ``a->1 ... d->4`` (``!``, and ``#`` downstream). ``locked=True``
    replaces the answer by a uniformly random digit: pretraining sees ``#`` only like that, so the
    capability is present but suppressed behind the ``#`` format (zero-shot accuracy = chance).
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if marker not in MARKERS:
        raise ValueError(f"marker must be one of {list(MARKERS)}, got {marker!r}")
    if not isinstance(length, int) or length < 3:
        raise ValueError(f"length must be an int >= 3, got {length!r}")
    rng, out = random.Random(seed), []
    while len(out) < n:
        s = [rng.choice(LETTERS) for _ in range(length)]
        counts = sorted((s.count(c) for c in LETTERS), reverse=True)
        if counts[0] == counts[1]:
            continue  # ties have no answer
        top = max(LETTERS, key=s.count)
        ans = top if MARKERS[marker] == "letter" else DIGITS[LETTERS.index(top)]
        if locked:
            ans = rng.choice(DIGITS if MARKERS[marker] == "digit" else LETTERS)
        out.append(("".join(s) + marker, ans))
    return out


def task_tokenizer():
    """Character tokenizer over ``abcd``, ``1234`` and the three markers (one token each)."""
    from neurips25.lm import build_tokenizer

    return build_tokenizer("char", [LETTERS + DIGITS + "".join(MARKERS)])


def _symbol_ids(tok, text: str) -> list[int]:
    """One token per symbol: the text's ids when the tokenizer already gives one per character (the
    task's char tokenizer), else each character encoded on its own — a real checkpoint's BPE would
    merge runs like ``"aab"`` and give prompts of unequal lengths."""
    ids = tok(text, add_special_tokens=False)["input_ids"]
    if len(ids) == len(text):
        return list(ids)
    ids = [tok(ch, add_special_tokens=False)["input_ids"] for ch in text]
    if any(len(i) != 1 for i in ids):
        raise ValueError("the tokenizer must have a single token for each symbol of the task")
    return [i[0] for i in ids]


def encode_pairs(tok, pairs) -> tuple[torch.Tensor, torch.Tensor]:
    """Equal-length prompts -> ``(X, y)``: ``X`` = BOS + prompt ids ``(N, T)``, ``y`` = answer ids ``(N,)``."""
    if not pairs:
        raise ValueError("pairs must be a non-empty list of (prompt, answer)")
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    ids = [[bos] + _symbol_ids(tok, p) for p, _ in pairs]
    if len({len(i) for i in ids}) != 1:
        raise ValueError("all prompts must have the same length (use one `length` in majority_pairs)")
    y = [tok(a, add_special_tokens=False)["input_ids"] for _, a in pairs]
    if any(len(t) != 1 for t in y):
        raise ValueError("answers must be single tokens")
    return torch.tensor(ids), torch.tensor([t[0] for t in y])


def pretrain(tok, *, n: int = 3000, steps: int = 300, n_embd: int = 64, n_layer: int = 2, lr: float = 3e-3,
             seed: int = 0):
    """Build the latent capability: a tiny GPT-2 trained (Lightning) on the ``?`` and ``!`` formats,
    plus ``#`` prompts with random digit answers (the capability is there, the format is locked)."""
    from neurips25.lm import tiny_model, train_lm

    k = n // 3
    data = (majority_pairs(k, marker="?", seed=seed) + majority_pairs(k, marker="!", seed=seed + 1)
            + majority_pairs(n - 2 * k, marker="#", locked=True, seed=seed + 2))
    model = tiny_model(tok, n_layer=n_layer, n_embd=n_embd, n_head=4, n_positions=16, seed=seed)
    train_lm(model, tok, data, steps=cap(steps), lr=lr, warmup=20, batch_size=64, mask="answer", seed=seed,
             accelerator="cpu")
    return model


# ----------------------------------------------------------------------------- exact-p LoRA
def select_entries(total: int, p: int, seed: int = 0) -> torch.Tensor:
    """``p`` distinct flat indices into ``total`` LoRA entries, uniformly at random (fixed per run)."""
    if not isinstance(p, int) or isinstance(p, bool):
        raise TypeError(f"p must be an int, got {type(p).__name__}")
    if not 0 <= p <= total:
        raise ValueError(f"p must be in [0, {total}] (the number of LoRA entries), got {p}")
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(total, generator=g)[:p].sort().values


class ExactPLoRA(torch.nn.Module):
    r"""A frozen (LoRA-wrapped) model whose only trainable tensor is $\delta \in \mathbb R^p$.

    The LoRA tensors are $\theta = \theta_0 + S\delta$ where $S$ scatters $\delta$ into ``p``
    random flat positions ($\theta_0$: ``A`` Kaiming-uniform, ``B = 0``). Because the adapter
    tensors are rebuilt from $\theta_0$ and $\delta$ at every forward (``torch.func.functional_call``),
    entries outside the subset cannot change, whatever the optimiser or weight decay does.
    """

    def __init__(self, model, p: int, *, r: int = 4, seed: int = 0):
        super().__init__()
        from neurips25.lm import add_lora, lora_parameters

        self.model = add_lora(copy.deepcopy(model), r=r, seed=seed)
        for q in self.model.parameters():
            q.requires_grad_(False)
        lp = lora_parameters(self.model)
        self.names = list(lp)
        self.shapes = [lp[k].shape for k in self.names]
        self.register_buffer("theta0", torch.cat([lp[k].detach().flatten() for k in self.names]))
        self.register_buffer("idx", select_entries(self.theta0.numel(), p, seed=seed))
        self.delta = torch.nn.Parameter(torch.zeros(p))

    @property
    def n_lora(self) -> int:
        return self.theta0.numel()

    def lora_tensors(self) -> dict[str, torch.Tensor]:
        flat = self.theta0.index_add(0, self.idx, self.delta)
        return dict(zip(self.names, (t.view(s) for t, s in zip(flat.split([math.prod(s) for s in self.shapes]),
                                                                 self.shapes))))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return functional_call(self.model, self.lora_tensors(), args=(), kwargs={"input_ids": input_ids}).logits

    def n_effective(self) -> int:
        """Chosen entries that can ever get a gradient: chosen ``B`` entries, and chosen ``A[i, :]``
        entries whose rank index ``i`` has a chosen ``B[:, i]`` partner (with ``B = 0`` at init,
        ``dL/dA = 0`` until its column of ``B`` moves)."""
        chosen = torch.zeros(self.n_lora, dtype=torch.bool, device=self.idx.device)
        chosen[self.idx] = True
        parts = dict(zip(self.names, (c.view(s) for c, s in zip(
            chosen.split([math.prod(s) for s in self.shapes]), self.shapes))))
        n = 0
        for k, c in parts.items():
            if "lora_B" in k:
                n += int(c.sum())
            else:
                live_rank = parts[k.replace("lora_A", "lora_B")].any(0)  # B: (d_out, r)
                n += int(c[live_rank].sum())
        return n

    def n_changed(self, atol: float = 0.0) -> int:
        """Entries of the LoRA tensors that differ from their initial values (the weight diff)."""
        with torch.no_grad():
            flat = torch.cat([t.flatten() for t in self.lora_tensors().values()])
        return int(((flat - self.theta0).abs() > atol).sum())


class _Full(torch.nn.Module):
    """Full fine-tuning baseline: every weight of a copy of the model is trainable."""

    def __init__(self, model):
        super().__init__()
        self.model = copy.deepcopy(model)
        for q in self.model.parameters():
            q.requires_grad_(True)

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def finetune(net: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, *, steps: int = 100, lr: float = 0.1) -> list[float]:
    """Full-batch Adam on the answer token's next-token loss; returns the loss per step (on the
    device of ``net`` and ``X``; the losses are read back once, after the loop)."""
    params = [q for q in net.parameters() if q.requires_grad]
    if not params or sum(q.numel() for q in params) == 0:
        return []  # p = 0: nothing to train, the model stays identical
    opt = torch.optim.Adam(params, lr=lr)
    hist = []
    for _ in range(cap(steps)):
        loss = F.cross_entropy(net(X)[:, -1], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.append(loss.detach())
    return torch.stack(hist).tolist()


@torch.no_grad()
def accuracy(net, X: torch.Tensor, y: torch.Tensor, choice_ids: torch.Tensor) -> float:
    """Restricted-choice accuracy: argmax of the last-position logits over the answer tokens."""
    logits = net(X)[:, -1][:, choice_ids]
    return float((choice_ids[logits.argmax(-1)] == y).float().mean())


def run_budget(model, p: int | str, lr: float, seed: int, data: dict, *, steps: int = 100, r: int = 4) -> dict:
    """One run: train budget ``p`` (an int, or ``"full"`` for full fine-tuning) and evaluate."""
    torch.manual_seed(seed)
    net = (_Full(model) if p == "full" else ExactPLoRA(model, p, r=r, seed=seed)).to(data["X_train"].device)
    finetune(net, data["X_train"], data["y_train"], steps=steps, lr=lr)
    out = {"p": p, "lr": lr, "seed": seed,
           "val": accuracy(net, data["X_val"], data["y_val"], data["choices"]),
           "test": accuracy(net, data["X_test"], data["y_test"], data["choices"])}
    if p != "full":
        out.update(n_effective=net.n_effective(), n_changed=net.n_changed())
    return out


def sweep(model, budgets: dict, seeds, data: dict, *, steps: int = 100) -> list[dict]:
    """All runs of a budget sweep; ``budgets`` maps each ``p`` (or ``"full"``) to its learning-rate grid."""
    return [run_budget(model, p, lr, s, data, steps=steps) for p, lrs in budgets.items() for lr in lrs for s in seeds]


def frontier(records: list[dict]) -> dict:
    """f(p): per budget, the learning rate with the best mean validation accuracy over seeds; returns
    ``{p: {"lr", "val", "test" (mean), "tests" (per seed)}}``."""
    out = {}
    for p in dict.fromkeys(r["p"] for r in records):
        best = None
        for lr in dict.fromkeys(r["lr"] for r in records if r["p"] == p):
            rs = [r for r in records if r["p"] == p and r["lr"] == lr]
            v = float(np.mean([r["val"] for r in rs]))
            if best is None or v > best["val"]:
                best = {"lr": lr, "val": v, "test": float(np.mean([r["test"] for r in rs])),
                        "tests": [r["test"] for r in rs]}
        out[p] = best
    return out


def gap_closure(acc, acc0: float, ceiling: float):
    r"""$G = (\mathrm{acc} - \mathrm{Acc}_0) / (\mathrm{Acc}_\text{ceil} - \mathrm{Acc}_0)$ (elementwise)."""
    if not ceiling > acc0:
        raise ValueError(f"ceiling ({ceiling}) must exceed acc0 ({acc0})")
    return (np.asarray(acc, dtype=float) - acc0) / (ceiling - acc0)


# ----------------------------------------------------------------------------- curve fits
def _logistic(p, acc_inf, a, b, acc0):
    return acc0 + (acc_inf - acc0) / (1.0 + np.exp(-a * (np.log(p) - b)))


def _generalised_logistic(p, acc_inf, a, b, nu, acc0):
    r"""The paper's generalised (Richards) logistic in $\log p$ (App. E),
    $\mathrm{Acc}_0 + (\mathrm{Acc}_\infty - \mathrm{Acc}_0)(1 + e^{-a(\log p - b)})^{-1/\nu}$, written as
    ``exp(-log(1 + e^-z) / nu)`` so that no exponent overflows; ``nu = 1`` is ``_logistic``."""
    return acc0 + (acc_inf - acc0) * np.exp(-np.logaddexp(0.0, -a * (np.log(p) - b)) / nu)


def _power(p, acc_inf, c, gamma, acc0):
    """Power law with a ceiling: it rises like ``c p^gamma`` until it meets ``acc_inf``."""
    return np.minimum(acc0 + c * np.power(p, gamma), acc_inf)


def _satexp(p, acc_inf, tau, acc0):
    return acc0 + (acc_inf - acc0) * (1.0 - np.exp(-p / tau))


def _smooth_broken_power(p, acc_inf, d, c, f, acc0):
    """Smoothly broken power law (Caballero et al. 2023, one break) for the remaining gap:
    flat for ``p << d``, then the error ``acc_inf - acc`` falls like ``p^-c`` (sharpness ``f``).
    Written as (1 + e^z)^(-cf) = exp(-cf log(1 + e^z)), z = log(p/d)/f, so that a sharp break
    (small f) tried by a fit's restart saturates instead of overflowing."""
    return acc_inf - (acc_inf - acc0) * np.exp(-c * f * np.logaddexp(0.0, np.log(p / d) / f))


def _broken_power(p, acc_inf, d, c, acc0):
    """(Piecewise) broken power law: flat at ``Acc_0`` up to the break ``d``, then the remaining gap
    ``acc_inf - acc`` falls like ``(p/d)^-c`` (the sharp-break limit ``f -> 0`` of the smooth one)."""
    return acc_inf - (acc_inf - acc0) * np.power(np.maximum(p / d, 1.0), -c)


# name -> (f, initial guess(p, acc, acc0), bounds); Acc_0 is fixed to the measured p = 0 accuracy.
# The claimed law comes in two forms (``LOGISTIC``): the logistic (nu = 1) and the paper's generalised one.
# Every law has a ceiling parameter acc_inf, so none is handicapped by an unbounded rise. The rivals are
# the paper's (App. F.1: saturating exponential, power law, piecewise and smooth broken power laws); the
# paper names them but its formulas are not in the text we read, so the forms here are ours.
MODELS = {
    "logistic": (_logistic, lambda p, a, a0: [a.max(), 1.0, np.log(np.median(p))],
                 ([0, 1e-3, -5], [1.5, 20, 30])),
    "generalised logistic": (_generalised_logistic, lambda p, a, a0: [a.max(), 1.0, np.log(np.median(p)), 1.0],
                             ([0, 1e-3, -5, 0.05], [1.5, 20, 30, 20])),
    "power law": (_power, lambda p, a, a0: [a.max(), max(a.max() - a0, 1e-3) / p.max() ** 0.3, 0.3],
                  ([0, 0, 0], [1.5, 10, 3])),
    "saturating exp": (_satexp, lambda p, a, a0: [a.max(), np.median(p)], ([0, 1e-3], [1.5, 1e9])),
    "broken power law": (_broken_power, lambda p, a, a0: [a.max(), np.median(p), 1.0],
                         ([0, 1e-2, 1e-2], [1.5, 1e6, 20])),
    "smooth broken power law": (_smooth_broken_power, lambda p, a, a0: [a.max(), np.median(p), 1.0, 1.0],
                                ([0, 1e-2, 1e-2, 1e-2], [1.5, 1e6, 20, 20])),
}


LOGISTIC = ("logistic", "generalised logistic")


def fit_curve(name: str, p, acc, acc0: float, *, restarts: int = 0, seed: int = 0) -> dict:
    """Least-squares fit (``scipy.optimize.curve_fit``) of one model; returns params, RSS, AIC, BIC.

    AIC = n log(RSS/n) + 2k and BIC = n log(RSS/n) + k log n (Gaussian errors, k free parameters).
    ``restarts`` > 0 also starts from that many random points inside the bounds (log-uniform where a
    bound spans decades) and keeps the lowest RSS, so no law loses a contest to a local minimum.
    """
    from scipy.optimize import curve_fit

    if name not in MODELS:
        raise ValueError(f"name must be one of {list(MODELS)}, got {name!r}")
    p, acc = np.asarray(p, dtype=float), np.asarray(acc, dtype=float)
    if p.shape != acc.shape or p.ndim != 1 or len(p) < 4:
        raise ValueError("p and acc must be 1-D arrays of the same length >= 4")
    if (p <= 0).any():
        raise ValueError("p must be positive (the fits are in log p)")
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        raise ValueError(f"restarts must be a non-negative int, got {restarts!r}")
    f, guess, bounds = MODELS[name]
    lo, hi = np.array(bounds[0], dtype=float), np.array(bounds[1], dtype=float)
    starts = [np.clip(guess(p, acc, acc0), lo + 1e-9, hi - 1e-9)]
    rng, wide = np.random.default_rng(seed), (lo > 0) & (hi > 100 * lo)
    span = np.ones_like(lo)
    span[wide] = hi[wide] / lo[wide]
    for _ in range(restarts):
        u = rng.uniform(size=len(lo))
        starts.append(np.where(wide, lo * span**u, lo + u * (hi - lo)))
    best = None
    for i, g in enumerate(starts):
        try:
            th, _ = curve_fit(lambda x, *t: f(x, *t, acc0), p, acc, p0=g, bounds=bounds, maxfev=20000)
        except RuntimeError:  # this start did not converge: try the next; raise only if none did
            if best is None and i == len(starts) - 1:
                raise
            continue
        r = float(np.sum((f(p, *th, acc0) - acc) ** 2))
        if best is None or r < best[0]:
            best = (r, th)
    rss, theta = best
    n, k = len(p), len(theta)
    ll = n * np.log(max(rss, 1e-12) / n)
    return {"name": name, "params": theta.tolist(), "acc0": acc0, "rss": rss, "aic": float(ll + 2 * k),
            "bic": float(ll + k * np.log(n)), "r2": float(1 - rss / np.sum((acc - acc.mean()) ** 2))}


def compare_fits(p, acc, acc0: float, *, restarts: int = 20) -> list[dict]:
    """All ``MODELS`` fitted to the same points, each from its default start plus ``restarts`` random
    ones (``fit_curve``), sorted by AIC (best first)."""
    return sorted((fit_curve(m, p, acc, acc0, restarts=restarts) for m in MODELS), key=lambda r: r["aic"])


def aic_null_test(p, acc, acc0: float, *, n_sim: int = 100, restarts: int = 2, seed: int = 0,
                  sigma: float | None = None) -> dict:
    """Can these points tell the laws apart? A parametric bootstrap under the logistic: ``n_sim`` data
    sets = the fitted logistic + Gaussian noise with the fit's residual sd (or ``sigma``), at the same
    budgets, each refitted with every law (``compare_fits``). A law of the claimed family ``LOGISTIC``
    (the logistic or the generalised logistic) "wins" a criterion when it is the lowest law by it.
    Returns the observed AIC margins (the family's best minus each rival; > 0: the rival is better),
    ``p_best`` (the share of simulated sets in which the family, true there, wins by AIC, by BIC and by
    both: the power of the test "lowest for this model"), ``p_not_best`` (``1 - p_best["aic"]``) and
    ``p_margin`` (per rival, the share in which it beats the family by at least its observed AIC margin:
    a p-value for that margin under the logistic), over the ``n_sim`` sets that every law could be
    fitted to (a set where one fails from every start is dropped)."""
    n_sim = check_int(n_sim, "n_sim")
    if sigma is not None and not sigma > 0:
        raise ValueError(f"sigma must be positive (or None: the fit's residual sd), got {sigma!r}")
    p, acc = np.asarray(p, dtype=float), np.asarray(acc, dtype=float)

    def margins(fits, c):  # the family's best minus each rival, by criterion c
        own = min(fits[k][c] for k in LOGISTIC)
        return {k: own - v[c] for k, v in fits.items() if k not in LOGISTIC}

    fits = {x["name"]: x for x in compare_fits(p, acc, acc0)}
    logi = fits["logistic"]
    sigma = math.sqrt(logi["rss"] / len(p)) if sigma is None else float(sigma)
    mu = MODELS["logistic"][0](p, *logi["params"], acc0)
    observed = margins(fits, "aic")
    rng, n = np.random.default_rng(seed), 0
    best, beat = dict.fromkeys(("aic", "bic", "both"), 0), dict.fromkeys(observed, 0)
    for _ in range(cap(n_sim)):
        try:
            sim = {x["name"]: x for x in compare_fits(p, mu + rng.normal(0, sigma, len(p)), acc0, restarts=restarts)}
        except RuntimeError:  # a law could not be fitted from any start: this simulated set is dropped
            continue
        n += 1
        d = {c: margins(sim, c) for c in ("aic", "bic")}
        won = {c: all(v <= 0 for v in d[c].values()) for c in d}
        best["aic"], best["bic"] = best["aic"] + won["aic"], best["bic"] + won["bic"]
        best["both"] += won["aic"] and won["bic"]
        for k in beat:
            beat[k] += d["aic"][k] >= observed[k]
    if n == 0:
        raise RuntimeError("no simulated set could be fitted by every law")
    return {"sigma": sigma, "observed": observed, "p_best": {k: v / n for k, v in best.items()},
            "p_not_best": 1 - best["aic"] / n, "p_margin": {k: v / n for k, v in beat.items()}, "n_sim": n}


def params_for_gap(fit: dict, q: float, ceiling: float) -> float:
    r"""Smallest $p$ with $G(p) \ge q$ on the fitted logistic (``inf`` if the fit never gets there)."""
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    acc_inf, a, b = fit["params"]
    acc0 = fit["acc0"]
    frac = q * (ceiling - acc0) / (acc_inf - acc0)  # needed fraction of the logistic's own rise
    if not 0 < frac < 1:
        return float("inf")
    return float(np.exp(b + np.log(frac / (1 - frac)) / a))


def bootstrap_params_for_gap(p, acc, acc0: float, ceiling: float, qs=(0.5, 0.9), *, n_boot: int = 200,
                             seed: int = 0) -> dict:
    """Point estimates and 95 % pairs-bootstrap intervals of ``params_for_gap`` for each ``q``."""
    p, acc = np.asarray(p, dtype=float), np.asarray(acc, dtype=float)
    point = fit_curve("logistic", p, acc, acc0)
    rng, draws = np.random.default_rng(seed), {q: [] for q in qs}
    for _ in range(cap(n_boot, 5)):
        i = rng.integers(0, len(p), len(p))
        if len(np.unique(p[i])) < 4:
            continue
        try:
            f = fit_curve("logistic", p[i], acc[i], acc0)
        except RuntimeError:  # curve_fit failed to converge on this resample
            continue
        for q in qs:
            draws[q].append(params_for_gap(f, q, ceiling))
    nan = float("nan")  # no resample could be fitted (only when a smoke run caps n_boot)
    return {q: {"p": params_for_gap(point, q, ceiling),
                "lo": _percentile(draws[q], 2.5) if draws[q] else nan,
                "hi": _percentile(draws[q], 97.5) if draws[q] else nan}
            for q in qs}


def _percentile(x, q: float) -> float:
    """``np.percentile`` (linear) of draws that may be ``inf`` (fits that never reach the gap): a
    percentile at or next to an ``inf`` draw is ``inf``, not the ``nan`` of ``inf - inf``."""
    x = np.asarray(x, dtype=float)
    finite = x[np.isfinite(x)]
    v = float(np.percentile(np.where(np.isinf(x), np.finfo(float).max, x), q))
    return float("inf") if finite.size == 0 or v > finite.max() else v


# ----------------------------------------------------------------------------- learning rates, MDL
def lr_grid(p) -> list[float]:
    """Three learning rates per budget, topped by ``3 / sqrt(p)`` capped at 3: that rate, a third
    and a tenth of it (sparse budgets need large rates: each of few entries must move far);
    ``[1e-3, 3e-3]`` for full fine-tuning. The same grid is used for the pretrained and the randomly
    initialised model."""
    if p == "full":
        return [1e-3, 3e-3]
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise ValueError(f"p must be a positive int or 'full', got {p!r}")
    mid = min(3.0, 3.0 / math.sqrt(p))
    return [round(mid / 10, 6), round(mid / 3, 6), round(mid, 6)]


def prequential_mdl(model, X: torch.Tensor, y: torch.Tensor, choices: torch.Tensor, *, p="full",
                    block: int = 8, steps_per_block: int = 2, lr: float = 3e-3, seed: int = 0) -> dict:
    r"""Prequential (online) code length of the labels over one epoch (Blier & Ollivier 2018).

    The examples are sent in blocks of ``block``: each block is encoded with the current model's
    distribution over the answer tokens ``choices`` (``-log2 p(y | x)`` bits), then the model takes
    ``steps_per_block`` Adam steps on that block. The first block is encoded by the untrained model.
    A model that only needs eliciting compresses the labels after a few blocks; one that must be
    taught pays close to the uniform code $\log_2 |\text{choices}|$ per example for longer.
    ``p``: ``"full"`` (every weight) or a LoRA budget (an int). Returns total bits, bits per
    example, the uniform code's bits and the per-block bits.
    """
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (N, T) and y (N,), got {tuple(X.shape)}, {tuple(y.shape)}")
    if not isinstance(block, int) or block < 1 or block > len(y):
        raise ValueError(f"block must be an int in [1, {len(y)}], got {block!r}")
    torch.manual_seed(seed)
    net = (_Full(model) if p == "full" else ExactPLoRA(model, p, seed=seed)).to(X.device)
    params = [q for q in net.parameters() if q.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    pos = (y[:, None] == choices[None]).float().argmax(1)
    per_block = []
    for i in range(0, len(y), block):
        xb, yb, cb = X[i:i + block], y[i:i + block], pos[i:i + block]
        with torch.no_grad():
            lp = torch.log_softmax(net(xb)[:, -1][:, choices], -1)
        per_block.append(-lp.gather(1, cb[:, None]).sum() / math.log(2))
        for _ in range(cap(steps_per_block, 1)):
            loss = F.cross_entropy(net(xb)[:, -1], yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    per_block = torch.stack(per_block).tolist()  # one read-back, after the loop
    bits = float(sum(per_block))
    return {"bits": bits, "n": len(y), "bits_per_example": bits / len(y),
            "uniform_bits": len(y) * math.log2(len(choices)), "per_block": per_block}


def mdl_code(runs: list[dict]) -> dict:
    r"""The prequential code with the learning rate chosen from a grid: the shortest of ``runs`` (one
    ``prequential_mdl`` result per rate, each with its ``"lr"``) plus $\log_2 K$ bits to name which of
    the ``K`` rates was used, so picking the rate is paid for inside the code (a two-part code)."""
    if not runs:
        raise ValueError("runs must be a non-empty list of prequential_mdl results")
    best = min(runs, key=lambda r: r["bits"])
    bits = best["bits"] + math.log2(len(runs))
    return dict(best, bits=bits, bits_per_example=bits / best["n"], n_rates=len(runs))


# ----------------------------------------------------------------------------- the stored sweep
def make_data(tok, *, n_train: int = 128, n_val: int = 128, n_test: int = 256) -> dict:
    """The downstream ``#`` task: train/val/test tensors (fixed seeds 100/101/102) and answer ids."""
    data = {}
    for name, n, s in [("train", n_train, 100), ("val", n_val, 101), ("test", n_test, 102)]:
        data[f"X_{name}"], data[f"y_{name}"] = encode_pairs(tok, majority_pairs(n, marker="#", seed=s))
    data["choices"] = torch.tensor([tok.convert_tokens_to_ids(c) for c in DIGITS])
    return data


def random_init(tok):
    """The teaching control: the pretrained models' architecture (``pretrain``'s defaults), not pretrained."""
    from neurips25.lm import tiny_model

    return tiny_model(tok, n_layer=2, n_embd=64, n_head=4, n_positions=16, seed=0)


BUDGETS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, "all")

# The stored sweep's settings per scale. `small` produced notebooks/results/elicitation.json
# (`python -m neurips25.elicitation`); `full` (`--scale full`, for a GPU or a long CPU run) moves toward
# the paper: it sweeps ~20 budgets per model with 3 random subsets per budget and trains to convergence
# (the paper: 1B/3B/8B Llama models, budgets from 1 parameter to full LoRA on a log grid, AdamW to
# convergence, the learning rate tuned per budget, several seeds at small p). The architecture is kept,
# so N (the LoRA entries) is the same 3,072 and the notebook's checks apply to both.
# The prequential code (the paper's MDL, an approximation by the first-epoch online loss) is measured
# with the same exact-p LoRA budgets as the accuracy sweep (``mdl_budgets``), over ``mdl_labels``
# labels of the downstream task, the learning rate picked from ``lr_grid(p)`` inside the code (``mdl_code``).
SWEEP = {
    "small": dict(models=(0, 1, 2), pretrain_steps=300, steps=40, seeds_per_budget=1, budgets=BUDGETS,
                  mdl_budgets=(100, "all"), mdl_labels=512, mdl_block=8, mdl_steps=2),
    "full": dict(models=(0, 1, 2, 3, 4), pretrain_steps=1000, steps=200, seeds_per_budget=3, budgets=BUDGETS,
                 mdl_budgets=(10, 100, 1000, "all"), mdl_labels=2048, mdl_block=8, mdl_steps=4),
}
# Extra budgets inside the rise (``rise_study``, ``python -m neurips25.elicitation --rise``): the sweep's
# floor (p <= 20) and ceiling (p >= 300) are observed for every model, and p = 1 is the smallest budget
# there is, so the only place where budgets can add shape information is between them.
RISE_BUDGETS = (15, 40, 70, 150)
# The law contest's sweep (``subset_study``, ``python -m neurips25.elicitation --subsets``): all 19 budgets,
# several random subsets per budget and larger evaluation splits (``SUBSETS[scale]``).
SUBSET_BUDGETS = tuple(sorted(b for b in BUDGETS + RISE_BUDGETS if b != "all")) + ("all",)
SUBSETS = {"small": dict(subsets=4, n_val=256, n_test=1024), "full": dict(subsets=5, n_val=512, n_test=4096)}


def _sweep_model(model, data, n_lora, *, steps, seeds, budgets=BUDGETS, full: bool = True) -> dict:
    """The budget sweep of one model (``"all"`` = every LoRA entry; ``full``: and full fine-tuning);
    under ``NEURIPS25_SMOKE=1`` the budgets (keeping the last) and seeds are capped."""
    budgets = list(budgets)
    if cap(len(budgets)) < len(budgets):
        budgets = budgets[:cap(len(budgets)) - 1] + budgets[-1:]
    grid = {(n_lora if b == "all" else b): lr_grid(n_lora if b == "all" else b) for b in budgets}
    if full:
        grid["full"] = lr_grid("full")
    records = sweep(model, grid, list(seeds)[:cap(len(seeds))], data, steps=steps)
    acc0 = accuracy(lambda X: model(input_ids=X).logits, data["X_test"], data["y_test"], data["choices"])
    return {"acc0": acc0, "records": records}


def _mdl_runs(model, X, y, choices, n_lora, *, budgets, block, steps) -> dict:
    """Prequential codes of one model at each LoRA budget, one per rate of ``lr_grid(p)`` (capped under
    smoke): ``{str(budget): [prequential_mdl result + "lr", ...]}``."""
    out = {}
    for b in budgets:
        p = n_lora if b == "all" else b
        lrs = lr_grid(p)
        out[str(b)] = [dict(lr=lr, **prequential_mdl(model, X, y, choices, p=p, block=block, steps_per_block=steps,
                                                     lr=lr)) for lr in lrs[:cap(len(lrs), 1)]]
    return out


def run_all(*, models=(0, 1, 2), pretrain_steps: int = 300, steps: int = 40, mdl_budgets=(100, "all"),
            mdl_labels: int = 512, mdl_block: int = 8, mdl_steps: int = 2, seeds_per_budget: int = 1,
            budgets=BUDGETS, tok=None, base_models=None) -> dict:
    """The chapter's stored sweep: for each pretraining seed in ``models`` a pretrained model, its
    zero-shot accuracy, the budget sweep with the per-budget learning-rate grid (subset seeds
    ``model seed + 0, 1, ...``, ``seeds_per_budget`` of them), and its prequential MDL; the same for a
    randomly initialised model (the teaching control, same grid). The prequential codes
    (``out["mdl"][model][budget]``) send the first ``mdl_labels`` downstream labels (the sweep's 128
    training labels and more from the same stream) with the exact-p LoRA budgets ``mdl_budgets``.

    ``tok`` and ``base_models`` (a dict ``{name: model}``) swap in other pretrained models, e.g.
    ``neurips25.lm.pretrained("gpt2")``: then ``models`` and ``pretrain_steps`` are not used.
    """
    if (tok is None) != (base_models is None):
        raise ValueError("give both tok and base_models (a real checkpoint), or neither (the toy models)")
    seeds_per_budget = check_int(seeds_per_budget, "seeds_per_budget")
    own = tok is None
    tok = task_tokenizer() if own else tok
    data = make_data(tok)
    X_mdl, y_mdl = encode_pairs(tok, majority_pairs(mdl_labels, marker="#", seed=100))
    out: dict = {"budgets": [str(b) for b in budgets], "steps": steps, "pretrain_steps": pretrain_steps,
                 "pretrained": {}, "mdl": {}, "mdl_settings": dict(budgets=[str(b) for b in mdl_budgets],
                                                                    labels=mdl_labels, block=mdl_block,
                                                                    steps_per_block=mdl_steps)}
    if seeds_per_budget > 1:
        out["seeds_per_budget"] = seeds_per_budget
    if own:
        models = tuple(models)[:cap(len(models))]
        base_models = {str(m): (lambda m=m: pretrain(tok, steps=pretrain_steps, seed=m)) for m in models}
    else:
        base_models = {str(k): (lambda v=v: v) for k, v in base_models.items()}
    for i, (name, make) in enumerate(base_models.items()):
        base = make()
        seed0 = int(name) if name.isdigit() else i
        n_lora = ExactPLoRA(base, 0).n_lora
        out["n_lora"] = n_lora
        out["pretrained"][name] = _sweep_model(base, data, n_lora, steps=steps, budgets=budgets,
                                               seeds=range(seed0, seed0 + seeds_per_budget))
        out["mdl"][f"pretrained {name}"] = _mdl_runs(base, X_mdl, y_mdl, data["choices"], n_lora,
                                                     budgets=mdl_budgets, block=mdl_block, steps=mdl_steps)
    if own:  # the teaching control: the same architecture, not pretrained
        rand = random_init(tok)
        out["random_init"] = _sweep_model(rand, data, out["n_lora"], steps=steps, budgets=budgets,
                                          seeds=range(seeds_per_budget))
        out["mdl"]["random init"] = _mdl_runs(rand, X_mdl, y_mdl, data["choices"], out["n_lora"],
                                              budgets=mdl_budgets, block=mdl_block, steps=mdl_steps)
    return out


def extend_lr_edges(model, records: list[dict], data: dict, *, steps: int = 40, factor: float = 3.0,
                    max_steps: int = 2) -> list[dict]:
    """Per budget, while the best learning rate (mean validation accuracy over the subsets, as in
    ``frontier``) is the highest or lowest rate tried and strictly better than its neighbour, run every
    subset once more at that edge times ``factor`` (or divided by it), at most ``max_steps`` times: the
    optimum of a grid that stops at its best rate may lie beyond it. Returns ``records`` plus the new runs."""
    if not factor > 1:
        raise ValueError(f"factor must be > 1, got {factor!r}")
    max_steps = check_int(max_steps, "max_steps", 0)
    out = list(records)
    for p in dict.fromkeys(r["p"] for r in records):
        seeds = list(dict.fromkeys(r["seed"] for r in records if r["p"] == p))
        for _ in range(cap(max_steps, 1)):
            val = {}
            for r in out:
                if r["p"] == p:
                    val.setdefault(r["lr"], []).append(r["val"])
            lrs = sorted(val)
            mean = {lr: float(np.mean(v)) for lr, v in val.items()}
            if len(lrs) < 2:
                break
            if mean[lrs[-1]] == max(mean.values()) and mean[lrs[-1]] > mean[lrs[-2]]:
                lr = lrs[-1] * factor
            elif mean[lrs[0]] == max(mean.values()) and mean[lrs[0]] > mean[lrs[1]]:
                lr = lrs[0] / factor
            else:
                break
            out += [run_budget(model, p, round(lr, 6), s, data, steps=steps) for s in seeds]
    return out


def _budget_study(budgets, *, models, pretrain_steps: int, steps: int, seeds_per_budget: int, n_val: int = 128,
                  n_test: int = 256, extend_lr: bool = False) -> dict:
    """The stored sweep's pretrained models (same pretraining seeds and steps, ``lr_grid(p)``, training
    steps; subset seeds ``model seed + 0, 1, ...``) swept over ``budgets`` (LoRA budgets only) with
    ``seeds_per_budget`` random subsets each, evaluated on ``n_val`` / ``n_test`` downstream examples (the
    first 128 / 256 of them are the stored sweep's own splits), the grids extended where their edge wins
    (``extend_lr``, ``extend_lr_edges``): ``{model: {"acc0", "records"}}``."""
    tok = task_tokenizer()
    data = make_data(tok, n_val=n_val, n_test=n_test)
    out = {}
    for m in tuple(models)[:cap(len(models))]:
        base = pretrain(tok, steps=pretrain_steps, seed=m)
        out[str(m)] = _lora_sweep(base, data, budgets, seeds=range(m, m + seeds_per_budget), steps=steps,
                                  extend_lr=extend_lr)
    return out


def _lora_sweep(model, data: dict, budgets, *, seeds, steps: int, extend_lr: bool) -> dict:
    """LoRA budgets only (no full fine-tuning) of one model, the rate grids extended where an edge wins."""
    res = _sweep_model(model, data, ExactPLoRA(model, 0).n_lora, steps=steps, budgets=budgets, seeds=seeds,
                       full=False)
    if extend_lr:
        res["records"] = extend_lr_edges(model, res["records"], data, steps=steps)
    return res


def rise_study(budgets=RISE_BUDGETS, *, models=(0, 1, 2), pretrain_steps: int = 300, steps: int = 40,
               seeds_per_budget: int = 1) -> dict:
    """More budgets inside the rise for the stored sweep's pretrained models, with the sweep's own
    protocol (same pretraining, data, subset seeds, ``lr_grid(p)`` and steps), so that their records
    can be pooled with ``run_all``'s: ``{model: {"acc0", "records"}}``. Under smoke the budgets are capped."""
    budgets = list(budgets)
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise ValueError(f"budgets must be a non-empty list of positive ints, got {budgets!r}")
    return _budget_study(budgets, models=models, pretrain_steps=pretrain_steps, steps=steps,
                         seeds_per_budget=seeds_per_budget)


def _check_subset_args(budgets, **sizes) -> list:
    """``budgets`` as a list (positive ints or ``"all"``); every size in ``sizes`` a positive int."""
    budgets = list(budgets)
    if not budgets or any(b != "all" and (isinstance(b, bool) or not isinstance(b, int) or b < 1) for b in budgets):
        raise ValueError(f"budgets must be a non-empty list of positive ints or 'all', got {budgets!r}")
    for name, v in sizes.items():
        check_int(v, name)
    return budgets


def subset_study(budgets=SUBSET_BUDGETS, *, models=(0, 1, 2), pretrain_steps: int = 300, steps: int = 40,
                 subsets: int = 4, n_val: int = 256, n_test: int = 1024) -> dict:
    """The law contest's measurement: every budget of the stored sweep and its rise (``SUBSET_BUDGETS``)
    for the same pretrained models and protocol, with ``subsets`` random subsets per budget (subset
    seeds ``model seed + 0, ..., subsets - 1``; the first is the stored sweep's subset) and larger
    validation/test splits, so that the frontier (``frontier``: per budget the rate with the best mean
    validation accuracy over the subsets, and its mean test accuracy) averages out the scatter of single
    subsets, as the paper does with 3-5 subsets per budget (App. E). Each budget's grid ``lr_grid(p)`` is
    extended by x3 steps where its highest (or lowest) rate wins (``extend_lr_edges``): in the stored
    sweep the top rate won at most budgets of the rise. ``{model: {"acc0", "records"}}``."""
    budgets = _check_subset_args(budgets, subsets=subsets, n_val=n_val, n_test=n_test)
    return _budget_study(budgets, models=models, pretrain_steps=pretrain_steps, steps=steps,
                         seeds_per_budget=subsets, n_val=n_val, n_test=n_test, extend_lr=True)


# The teaching control with the law contest's protocol (``teaching_study``, ``python -m neurips25.elicitation
# --teaching``): the random-init model's G = 0.9 crossing lay in (1000, 2000] of the single-subset grid, so
# the budgets are finer there, with several subsets each (pre-registered; see the chapter).
TEACHING_BUDGETS = (200, 300, 500, 700, 1000, 1100, 1250, 1500, 1750, 2000, 2500, "all")


def teaching_study(budgets=TEACHING_BUDGETS, *, steps: int = 40, subsets: int = 4, n_val: int = 256,
                   n_test: int = 1024) -> dict:
    """The randomly initialised control (the stored sweep's, ``random_init``) swept over
    ``budgets`` with ``subset_study``'s protocol: ``subsets`` random subsets per budget (subset seeds
    ``0, ..., subsets - 1``), ``lr_grid(p)`` extended where an edge rate wins, ``n_val`` / ``n_test``
    evaluation examples. Returns ``{"acc0", "records"}``."""
    budgets = _check_subset_args(budgets, subsets=subsets, n_val=n_val, n_test=n_test)
    tok = task_tokenizer()
    data = make_data(tok, n_val=n_val, n_test=n_test)
    return _lora_sweep(random_init(tok), data, budgets, seeds=range(subsets), steps=steps, extend_lr=True)


def main(argv=None) -> None:
    """``python -m neurips25.elicitation [--scale full]``: regenerate ``notebooks/results/elicitation.json``
    (or ``elicitation.full.json``) with the settings of ``SWEEP[scale]``. ``--rise`` / ``--subsets`` /
    ``--teaching`` run ``rise_study`` / ``subset_study`` / ``teaching_study`` and store it in that file under
    ``"rise"`` / ``"subsets"`` / ``"teaching"``; with
    ``--subsets --models M`` only model M is (re)run and merged (one model is ~15 min on one CPU core)."""
    import argparse

    from neurips25.results import add_scale_arguments, load_results, results_path, save_results
    from neurips25.runtime import seed_everything

    ap = argparse.ArgumentParser(description=main.__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--models", type=int, nargs="+", default=None, help="pretraining seeds (default: SWEEP's)")
    study = ap.add_mutually_exclusive_group()
    study.add_argument("--rise", action="store_true",
                       help="run only the extra budgets inside the rise (rise_study) and store them in the existing "
                            "sweep's file under 'rise'")
    study.add_argument("--teaching", action="store_true",
                       help="run the random-init control with several subsets per budget (teaching_study) and store "
                            "it in the existing sweep's file under 'teaching'")
    study.add_argument("--subsets", action="store_true",
                       help="run the multi-subset sweep of the law contest (subset_study) for --models and merge it "
                            "into the existing sweep's file under 'subsets'")
    args = ap.parse_args(argv)
    cfg = dict(SWEEP[args.scale])
    if args.models is not None:
        cfg["models"] = tuple(args.models)
    seed_everything(0)
    torch.set_num_threads(1)
    flag = "" if args.scale == "small" else f" --scale {args.scale}"
    if args.rise or args.subsets or args.teaching:
        old = load_results("elicitation", args.out or results_path("elicitation", args.scale), scale=args.scale)
        common = {k: cfg[k] for k in ("models", "pretrain_steps", "steps")}
        if args.rise:
            key, rerun = "rise", f"; python -m neurips25.elicitation{flag} --rise"
            new = rise_study(seeds_per_budget=cfg["seeds_per_budget"], **common)
        elif args.teaching:
            key, rerun = "teaching", f"; python -m neurips25.elicitation{flag} --teaching"
            new = teaching_study(steps=cfg["steps"], **SUBSETS[args.scale])
        else:
            key = "subsets"
            rerun = f"; python -m neurips25.elicitation{flag} --subsets --models " + " ".join(map(str, cfg["models"]))
            new = {**old["data"].get(key, {}), **subset_study(**common, **SUBSETS[args.scale])}
            new = {m: new[m] for m in sorted(new, key=int)}
        data = {**old["data"], key: new}
        if args.teaching:
            data["teaching_settings"] = dict(SUBSETS[args.scale], budgets=[str(b) for b in TEACHING_BUDGETS])
        if args.subsets:
            data["subset_settings"] = dict(SUBSETS[args.scale], budgets=[str(b) for b in SUBSET_BUDGETS])
        path = save_results("elicitation", data, command=old["command"].replace(rerun, "") + rerun,
                            seed=old["seed"], path=args.out, scale=args.scale)
        print("wrote", path)
        return
    res = run_all(**cfg)
    command = "python -m neurips25.elicitation" + flag
    if args.models is not None:
        command += " --models " + " ".join(map(str, args.models))
    path = save_results("elicitation", res, command=command, seed=0, path=args.out, scale=args.scale)
    print("wrote", path)


if __name__ == "__main__":
    main()
