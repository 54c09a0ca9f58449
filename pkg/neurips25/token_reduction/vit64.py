"""The over-smoothed model (issue 30): the digits at one-pixel patches -- 64 patch tokens + CLS,
8 blocks, width 64 -- trained once per seed by ``python -m neurips25.token_reduction --model vit64``
(alias ``python -m neurips25.token_reduction_vit64``). Its state_dicts ship inside the stored
measurements, ``notebooks/results/token_reduction_vit64.json`` (base64 of ``torch.save``, 1.1 MB of
float32 per seed), so the notebook loads the trained weights and only evaluates.

The 17-token model of the chapter's first experiment is barely over-smoothed (its unreduced tokens
keep 0.8-0.9 of their high-frequency energy to the last block), which removes the premise of the
frequency-aware method; this model's relative HF energy falls with depth (rank collapse, Sec. 3.1).
The reduction budget is the paper's: keep 70% of the tokens at three spaced blocks (the paper's
4/7/10 of 12 become 2/4/6 of 8), about a third fewer MACs.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..results import decode_state, encode_state
from ..runtime import cap, check_int, single_thread
from ..vision import TinyViT
from .core import ReductionPlan
from .diagnostics import (
    cls_probe,
    dc_cosine_stats,
    evaluate,
    hf_amplitude_per_layer,
    hf_energy_per_layer,
    measure_macs,
    reduction_step,
)
from .experiment import MAIN_VARIANTS, plan_for, reduced_energies, training_free
from .training import fine_tune, train_tiny_vit

__all__ = ["VIT64", "VIT64_SWEEP", "PAPER_PROTOCOLS", "encode_state", "decode_state", "train_vit64", "load_vit64",
           "run_vit64", "main_vit64", "paper_ablations", "PAPER_ABLATIONS", "main_paper_ablations", "paper_protocols",
           "main_paper_protocols"]

#: The architecture: 8x8 digits, 1x1-pixel patches (64 tokens + CLS), 8 blocks, width 64, 4 heads.
VIT64 = dict(patch_size=1, dim=64, depth=8, heads=4, mlp_ratio=2.0)

#: ``small``: the settings of the stored ``token_reduction_vit64.json`` and shipped weights. The paper
#: reduces 30% of the tokens at blocks 4/7/10 of 12 (DeiT, 197 tokens) and fine-tunes 30 epochs with
#: self-distillation; ``full`` trains longer, fine-tunes every keep ratio and adds seeds.
VIT64_SWEEP = {
    "small": dict(seeds=[0, 1, 2], epochs=15, ft_epochs=2, layers=(2, 4, 6),
                  keep_ratios=(0.5, 0.6, 0.7, 0.85), ft_keeps=(0.5, 0.7)),
    "full": dict(seeds=[0, 1, 2, 3, 4], epochs=60, ft_epochs=10, layers=(2, 4, 6),
                 keep_ratios=(0.5, 0.6, 0.7, 0.85), ft_keeps=(0.5, 0.7, 0.85)),
}

#: The paper's own protocols for its two analyses (its full text, Secs. 6.2-6.3), on the shipped 64-token
#: ViTs: Fig. 6 -- every model fine-tuned, *one* reduction of 50% of the tokens (w = 1) at the 4th or 7th
#: of 12 layers (here blocks 2 and 4 of 8, the chapter's mapping), the Fourier HF amplitude after it;
#: Fig. 5a -- "LF only" vs "HF only" at the main budget, "during fine-tuning". The paper fine-tunes 30
#: epochs; ``small`` uses the chapter's 2, ``full`` 10. Stored in ``token_reduction_paper.json``.
PAPER_PROTOCOLS = {
    "small": dict(seeds=[0, 1, 2], ft_epochs=2, single_layers=(2, 4), single_keep=0.5,
                  methods=("ours", "EViT", "ToMe"), ablation_layers=(2, 4, 6), ablation_keep=0.7, n_amp=300),
    "full": dict(seeds=[0, 1, 2, 3, 4], ft_epochs=10, single_layers=(2, 4), single_keep=0.5,
                 methods=("ours", "EViT", "ToMe"), ablation_layers=(2, 4, 6), ablation_keep=0.7, n_amp=300),
}


#: A fresh replication of the fine-tuned comparison behind ``token_reduction_replication.json``
#: (``--replication``): each scale's protocol of :data:`VIT64_SWEEP` (small: train 15 epochs, fine-tune
#: 2 at keep 0.7 in blocks 2/4/6) on 30 seeds that scale's sweep never used, for the three reducers the
#: paper's table compares; ``small`` ~80 s a seed on one core.
REPLICATION = {
    scale: dict(seeds=list(range(first, first + 30)), epochs=VIT64_SWEEP[scale]["epochs"],
                ft_epochs=VIT64_SWEEP[scale]["ft_epochs"], layers=VIT64_SWEEP[scale]["layers"], ft_keep=0.7,
                methods=("ours", "EViT", "ToMe"))
    for scale, first in (("small", 3), ("full", 5))
}

#: The replication's seeds and base models with the same budget started at block 0 (``--replication
#: --early``, ``token_reduction_early.json``): the earliest start at which this model's reducers separate
#: training-free (the ablations' schedule 0,1,2), so each of ``free_methods`` is also measured
#: training-free. ``small`` ~80 s a seed on one core.
EARLY = {scale: dict(cfg, layers=(0, 1, 2), free_methods=("ours", "EViT", "ToMe", "random"))
         for scale, cfg in REPLICATION.items()}

#: :func:`paper_ablations` as the notebook calls it on the shipped weights: the main budget (keep 0.7 at
#: ``VIT64_SWEEP[scale]["layers"]``) on every test image, the CLS probe fitted on the first ``n_train``
#: training images. Stored in ``token_reduction_ablations.json`` (the notebook recomputes seed 0 live).
PAPER_ABLATIONS = {"small": dict(keep_ratio=0.7, n_train=600), "full": dict(keep_ratio=0.7, n_train=600)}


def train_vit64(seed: int = 0, epochs: int = 15) -> tuple[TinyViT, dict]:
    """Train the 64-token ViT (:data:`VIT64`) on the digits with Lightning; ``(model, splits)``."""
    epochs = check_int(epochs, "epochs")
    return train_tiny_vit(seed, epochs, **VIT64)


def load_vit64(seed: int = 0, stored: dict | None = None, device=None) -> TinyViT:
    """The shipped 64-token ViT of ``seed`` (eval mode, on ``device``), from the payload ``stored``
    (default: ``load_results("token_reduction_vit64")``)."""
    if stored is None:
        from ..results import load_results

        stored = load_results("token_reduction_vit64")
    weights = stored.get("data", {}).get("weights") if isinstance(stored, dict) else None
    if not isinstance(weights, dict):
        raise ValueError("stored must be a token_reduction_vit64 payload with data['weights']")
    if str(seed) not in weights:
        raise ValueError(f"seed must be one of the shipped seeds {sorted(weights)}, got {seed!r}")
    model = TinyViT(**VIT64)
    model.load_state_dict(decode_state(weights[str(seed)]))
    return model.to(device or "cpu").eval()


def fine_tuned(model: TinyViT, name: str, keep: float, layers=(2, 4, 6), epochs: int = 2,
               seed: int = 0) -> tuple[TinyViT, ReductionPlan]:
    """``(tuned, plan)``: ``model`` fine-tuned ``epochs`` with reducer ``name`` at ``keep`` in ``layers``
    (self-distillation; the reweighting ``omega1, omega2`` for ours and keep-LF), as every stored run does."""
    plan = plan_for(name, keep, layers, reweight=name in ("ours", "keep LF"))
    return fine_tune(model, plan, epochs, seed), plan


def run_vit64(model: TinyViT, splits: dict, seed: int = 0, layers=(2, 4, 6), keep_ratios=(0.5, 0.6, 0.7, 0.85),
              ft_keep: float = 0.7, ft_keeps=(0.5, 0.7), ft_epochs: int = 2,
              ft_variants=("ours", "EViT", "ToMe", "keep LF")) -> dict:
    """Everything the chapter measures on a trained 64-token ViT: full accuracy and MACs, training-free
    accuracy/MACs (:func:`training_free`, the five main reducers and ``ours (abs)``), HF energy per
    block at ``ft_keep`` (per token and on the unmerged map), LF/HF-to-DC cosines (half/half split,
    with a random-split control), and accuracy after ``ft_epochs`` of reduced fine-tuning with self-distillation
    (``omega1, omega2`` for ours and keep-LF) at each ratio of ``ft_keeps`` (``ft_epochs=0``: none)."""
    if ft_keep not in keep_ratios:
        raise ValueError(f"ft_keep must be one of keep_ratios {tuple(keep_ratios)}, got {ft_keep!r}")
    X, y = splits["test"]
    n = cap(len(X), 64)                       # NEURIPS25_SMOKE=1: 64 test images, 2 ratios, 2 variants
    X, y, keep_ratios = X[:n], y[:n], tuple(keep_ratios)[:cap(len(keep_ratios))]
    ft_keeps, ft_variants = tuple(ft_keeps)[:cap(len(ft_keeps), 1)], tuple(ft_variants)[:cap(len(ft_variants))]
    ft_keep = ft_keep if ft_keep in keep_ratios else keep_ratios[-1]
    with single_thread():
        out = {"seed": seed, "acc_full": evaluate(model, X, y), "macs_full": measure_macs(model),
               **training_free(model, X, y, layers, keep_ratios, (*MAIN_VARIANTS, "ours (abs)")),
               "hf_energy": reduced_energies(model, X, layers, ft_keep),
               "hf_energy_sized": reduced_energies(model, X, layers, ft_keep, sized=True),
               "finetuned": {}, "hf_energy_ft": {}, "ft_keep": ft_keep, "layers": list(layers)}
        cos, ctl = dc_cosine_stats(model, X), dc_cosine_stats(model, X, control=True, seed=seed)
        out["cosine"] = {"lf": cos["lf"].tolist(), "hf": cos["hf"].tolist(),
                         "control_lf": ctl["lf"].tolist(), "control_hf": ctl["hf"].tolist()}
        for kr in ft_keeps if ft_epochs else ():
            for name in ft_variants:
                tuned, plan = fine_tuned(model, name, kr, layers, ft_epochs, seed)
                out["finetuned"].setdefault(name, {})[str(kr)] = evaluate(tuned, X, y, plan)
                if kr == ft_keep:
                    out["hf_energy_ft"][name] = hf_energy_per_layer(tuned, X, plan, sized=True).tolist()
    return out


@torch.no_grad()
def paper_ablations(model: TinyViT, X: torch.Tensor, y: torch.Tensor, layers=(2, 4, 6), keep_ratio: float = 0.7,
                    schedules=((0, 1, 2), (1, 2, 3)), tome_every_keep: float = 0.85, n_amp: int = 300,
                    train: tuple | None = None, noise: float = 0.05, n_step: int = 200) -> dict:
    """The paper's two analyses, measured its way on a trained model (training-free):

    * ``acc``: its token-set ablations at ``keep_ratio`` on ``layers`` -- "LF only" (keep the LF tokens,
      drop the HF ones, no DC token) and "HF only" (no DC token); ``schedule``: ours, "LF only", ToMe, EViT
      and random pruning when the same budget starts earlier (each of ``schedules``);
    * ``amplitude``: the Fourier high-frequency amplitude per block (:func:`hf_amplitude_per_layer`, the
      paper's Fig. 1 measure) on the first ``n_amp`` images, unreduced, for every main reducer and "LF
      only", and for ToMe merging at *every* block with ``tome_every_keep`` (ToMe's own schedule; its
      MACs ratio is in ``macs_ratio``, beside ours'); ``amplitude_noisy``: the same for the four
      reducers on the first ``n_step`` images plus Gaussian pixel noise of std ``noise`` (no two
      patches alike);

    and the two causes behind them:

    * ``step``: :func:`reduction_step` of each main reducer at the first block of ``layers`` on the first
      ``n_step`` images -- how much HF energy one reduction removes, and how alike the averaged tokens are;
    * ``probe``: with ``train = (X_train, y_train)``, the :func:`cls_probe` accuracy of the unreduced
      model's CLS token after each block (how early the class is read)."""
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(f"X and y must be non-empty and equally long, got {len(X)} and {len(y)}")
    for name, v in (("n_amp", n_amp), ("n_step", n_step)):
        check_int(v, name)
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or noise < 0:
        raise ValueError(f"noise must be a non-negative number, got {noise!r}")
    every = ReductionPlan("tome", tome_every_keep, tuple(range(model.depth)))
    out = {"acc": {name: evaluate(model, X, y, plan_for(name, keep_ratio, layers)) for name in ("LF only", "HF only")},
           "schedule": {}, "amplitude": {}, "macs_ratio": {}}
    for sched in schedules:
        out["schedule"][",".join(map(str, sched))] = {
            name: evaluate(model, X, y, plan_for(name, keep_ratio, sched))
            for name in ("ours", "LF only", "ToMe", "EViT", "random")}
    Xa = X[:n_amp]
    out["amplitude"]["no reduction"] = hf_amplitude_per_layer(model, Xa).tolist()
    for name in (*MAIN_VARIANTS, "LF only"):
        out["amplitude"][name] = hf_amplitude_per_layer(model, Xa, plan_for(name, keep_ratio, layers)).tolist()
    out["amplitude"]["ToMe (every block)"] = hf_amplitude_per_layer(model, Xa, every).tolist()
    g = torch.Generator().manual_seed(0)
    Xs = X[:n_step]
    Xn = Xs + noise * torch.randn(Xs.shape, generator=g).to(Xs.device)     # CPU stream: same on any device
    out["amplitude_noisy"] = {name: hf_amplitude_per_layer(model, Xn, plan_for(name, keep_ratio, layers)).tolist()
                              for name in ("ours", "EViT", "ToMe", "random")}
    out["step"] = {name: reduction_step(model, Xs, plan_for(name, keep_ratio, layers[:1]), layers[0])
                   for name in ("ours", "EViT", "ToMe", "random")}
    if train is not None:
        out["probe"] = cls_probe(model, train, (X, y)).tolist()
    full = measure_macs(model)
    out["macs_ratio"] = {"ours": measure_macs(model, plan_for("ours", keep_ratio, layers)) / full,
                         "ToMe (every block)": measure_macs(model, every) / full}
    return out


def paper_protocols(model: TinyViT, X: torch.Tensor, y: torch.Tensor, seed: int = 0, ft_epochs: int = 2,
                    single_layers=(2, 4), single_keep: float = 0.5, methods=("ours", "EViT", "ToMe"),
                    ablation_layers=(2, 4, 6), ablation_keep: float = 0.7, n_amp: int = 300) -> dict:
    """The paper's two analyses with its own protocols (Secs. 6.2-6.3), each reducer fine-tuned for
    ``ft_epochs`` with self-distillation (:func:`fine_tune`, seed ``seed``) and also measured training-free:

    * ``single[str(layer)][name]``: one reduction keeping ``single_keep`` of the tokens at ``layer``
      (Fig. 6a/b; ``w = 1``): test accuracy (``acc``, ``acc_free``) and the Fourier HF amplitude per
      block on the first ``n_amp`` images (:func:`hf_amplitude_per_layer`; ``amp``, ``amp_free``);
    * ``ablation[name]``: "LF only", "HF only" and ours at ``ablation_keep`` on ``ablation_layers``
      (Fig. 5a), accuracy after fine-tuning (``ft``) and training-free (``free``)."""
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(f"X and y must be non-empty and equally long, got {len(X)} and {len(y)}")
    ft_epochs = check_int(ft_epochs, "ft_epochs")
    n_amp = check_int(n_amp, "n_amp")
    Xa = X[:n_amp]
    out = {"single": {}, "ablation": {}}
    for layer in single_layers:
        for name in methods:
            plan = plan_for(name, single_keep, (layer,))
            tuned = fine_tune(model, plan, ft_epochs, seed)
            out["single"].setdefault(str(layer), {})[name] = {
                "acc": evaluate(tuned, X, y, plan), "acc_free": evaluate(model, X, y, plan),
                "amp": hf_amplitude_per_layer(tuned, Xa, plan).tolist(),
                "amp_free": hf_amplitude_per_layer(model, Xa, plan).tolist()}
    for name in ("LF only", "HF only", "ours"):
        plan = plan_for(name, ablation_keep, ablation_layers)
        out["ablation"][name] = {"ft": evaluate(fine_tune(model, plan, ft_epochs, seed), X, y, plan),
                                 "free": evaluate(model, X, y, plan)}
    return out


def _shipped_vit64s(scale: str, seeds):
    """``(seed, model)`` for each of ``seeds`` (``NEURIPS25_SMOKE=1``: the first only): the shipped 64-token
    ViT of ``token_reduction_vit64[.full].json``, or, where that file is missing (e.g. before a GPU run of
    ``--model vit64 --scale full``), one trained here with ``VIT64_SWEEP[scale]``."""
    from ..results import load_results

    try:
        stored = load_results("token_reduction_vit64", scale=scale)
    except FileNotFoundError:
        stored = None
    for s in seeds[:cap(len(seeds), 1)]:
        with single_thread():
            yield s, (load_vit64(s, stored) if stored else train_vit64(s, VIT64_SWEEP[scale]["epochs"])[0])


def main_paper_protocols(scale: str = "small", seeds=None, out: Path | None = None) -> Path:
    """:func:`paper_protocols` on the shipped 64-token ViT of each seed of ``PAPER_PROTOCOLS[scale]``
    (:func:`_shipped_vit64s`), stored in ``token_reduction_paper.json`` (``.full.json`` for ``full``;
    ``out`` when given)."""
    from ..results import save_results
    from .training import digits_loaders

    cfg = dict(PAPER_PROTOCOLS[scale])
    default_seeds = cfg.pop("seeds")
    all_seeds = default_seeds if seeds is None else list(seeds)
    # NEURIPS25_SMOKE=1: one fine-tuning epoch, one reduction block, two reducers, 64 test images
    cfg["ft_epochs"] = cap(cfg["ft_epochs"], 1)
    cfg["single_layers"] = cfg["single_layers"][:cap(len(cfg["single_layers"]), 1)]
    cfg["methods"] = cfg["methods"][:cap(len(cfg["methods"]))]
    runs = []
    for s, model in _shipped_vit64s(scale, all_seeds):
        X, y = digits_loaders(s)[1]["test"]
        n = cap(len(X), 64)
        with single_thread():
            r = {"seed": s, **paper_protocols(model, X[:n], y[:n], s, **cfg)}
        runs.append(r)
        print(f"seed {s}:", {L: {k: round(v["acc"], 3) for k, v in d.items()} for L, d in r["single"].items()},
              {k: round(v["ft"], 3) for k, v in r["ablation"].items()}, flush=True)
    cmd = "python -m neurips25.token_reduction --model vit64 --paper-protocols " + (
        "--scale full " if scale == "full" else "")
    return save_results("token_reduction_paper", {"runs": runs, "settings": cfg},
                        cmd + "--seeds " + " ".join(map(str, all_seeds)), seed=all_seeds[0], path=out, scale=scale)


def main_paper_ablations(scale: str = "small", seeds=None, out: Path | None = None) -> Path:
    """:func:`paper_ablations` (training-free) on the shipped 64-token ViT of each seed of
    ``VIT64_SWEEP[scale]`` (:func:`_shipped_vit64s`) with ``PAPER_ABLATIONS[scale]``, stored in
    ``token_reduction_ablations.json`` (``.full.json`` for ``full``; ``out`` when given): about 40 s a seed
    on a fast CPU core, too much for three seeds live in the notebook, which recomputes seed 0."""
    from ..results import save_results
    from .training import digits_loaders

    cfg = dict(PAPER_ABLATIONS[scale])
    layers = tuple(VIT64_SWEEP[scale]["layers"])
    all_seeds = VIT64_SWEEP[scale]["seeds"] if seeds is None else list(seeds)
    runs = []
    for s, model in _shipped_vit64s(scale, all_seeds):
        split = digits_loaders(s)[1]
        (X, y), (Xt, yt) = split["test"], split["train"]
        n, nt = cap(len(X), 64), cap(cfg["n_train"], 64)  # NEURIPS25_SMOKE=1: 64 images each
        with single_thread():
            r = {"seed": s, **paper_ablations(model, X[:n], y[:n], layers, cfg["keep_ratio"], train=(Xt[:nt], yt[:nt]))}
        runs.append(r)
        print(f"seed {s}:", {k: round(v, 3) for k, v in r["acc"].items()}, flush=True)
    cmd = "python -m neurips25.token_reduction --model vit64 --paper-ablations " + (
        "--scale full " if scale == "full" else "")
    return save_results("token_reduction_ablations", {"runs": runs, "settings": {**cfg, "layers": layers}},
                        cmd + "--seeds " + " ".join(map(str, all_seeds)), seed=all_seeds[0], path=out, scale=scale)


def main_vit64(scale: str = "small", seeds=None, out: Path | None = None) -> Path:
    """Train the 64-token ViT for each seed of ``VIT64_SWEEP[scale]`` and store the measurements with
    the trained state_dicts (``data["weights"][str(seed)]``, :func:`encode_state`) in
    ``token_reduction_vit64.json`` (``.full.json`` for ``full``; ``out`` when given)."""
    from ..results import save_results

    cfg = dict(VIT64_SWEEP[scale])
    default_seeds, epochs = cfg.pop("seeds"), cfg.pop("epochs")
    all_seeds = default_seeds if seeds is None else list(seeds)
    runs, weights = [], {}
    for s in all_seeds[:cap(len(all_seeds), 1)]:   # NEURIPS25_SMOKE=1: one seed
        with single_thread():
            model, splits = train_vit64(s, epochs)
        weights[str(s)] = encode_state(model.state_dict())
        r = run_vit64(model, splits, s, **cfg)
        runs.append(r)
        print(f"seed {s}: full {r['acc_full']:.3f}", {k: round(v["0.7"], 3) for k, v in r["acc"].items()
                                                         if "0.7" in v}, r["finetuned"], flush=True)
    cmd = "python -m neurips25.token_reduction --model vit64 " + ("--scale full " if scale == "full" else "")
    return save_results("token_reduction_vit64", {"runs": runs, "weights": weights},
                        cmd + "--seeds " + " ".join(map(str, all_seeds)), seed=all_seeds[0], path=out,
                        scale=scale)


def main_replication(scale: str = "small", seeds=None, out: Path | None = None, early: bool = False,
                     ft_epochs: int | None = None) -> Path:
    """Train the 64-token ViT for each seed of ``REPLICATION[scale]`` and store its unreduced accuracy and
    the accuracy of each reducer after fine-tuning (:func:`fine_tuned`) on the seed's test digits, in
    ``token_reduction_replication.json`` (``.full.json`` for ``full``; ``out`` when given). ``early``:
    the protocol of ``EARLY[scale]`` instead, with each reducer's training-free accuracy and MACs
    (:func:`training_free`), in ``token_reduction_early.json``. ``ft_epochs``: fine-tune that many
    epochs instead of the protocol's (same trained models), stored with ``_ft<ft_epochs>`` added to the
    name."""
    from ..results import save_results

    cfg = dict((EARLY if early else REPLICATION)[scale])
    slug = "token_reduction_early" if early else "token_reduction_replication"
    if ft_epochs is not None:
        ft_epochs = check_int(ft_epochs, "ft_epochs")
        cfg["ft_epochs"], slug = ft_epochs, f"{slug}_ft{ft_epochs}"
    default_seeds, epochs = cfg.pop("seeds"), cfg.pop("epochs")
    all_seeds = default_seeds if seeds is None else list(seeds)
    keep, layers = cfg["ft_keep"], cfg["layers"]
    runs = []
    for s in all_seeds[:cap(len(all_seeds), 1)]:   # NEURIPS25_SMOKE=1: one seed, 64 test images
        with single_thread():
            model, splits = train_vit64(s, epochs)
            X, y = splits["test"]
            X, y = X[:cap(len(X), 64)], y[:cap(len(y), 64)]
            run = {"seed": s, "n_test": len(X), "acc_full": evaluate(model, X, y)}
            if early:
                free = training_free(model, X, y, layers, (keep,), cfg["free_methods"])
                run["free"] = {k: v[str(keep)] for k, v in free["acc"].items()}
                run["macs"] = {"full": measure_macs(model), **{k: v[str(keep)] for k, v in free["macs"].items()}}
            run["finetuned"] = {}
            for name in cfg["methods"]:
                tuned, plan = fine_tuned(model, name, keep, layers, cfg["ft_epochs"], s)
                run["finetuned"][name] = evaluate(tuned, X, y, plan)
        runs.append(run)
        print(f"seed {s}: full {run['acc_full']:.4f}", {k: round(v, 4) for k, v in run.get("free", {}).items()},
              {k: round(v, 4) for k, v in run["finetuned"].items()}, flush=True)
    cmd = "python -m neurips25.token_reduction --model vit64 --replication " + ("--early " if early else "") + (
        f"--ft-epochs {ft_epochs} " if ft_epochs is not None else "") + ("--scale full " if scale == "full" else "")
    return save_results(slug, {"runs": runs, "settings": {**cfg, "epochs": epochs}},
                        cmd + "--seeds " + " ".join(map(str, all_seeds)), seed=all_seeds[0], path=out, scale=scale)
