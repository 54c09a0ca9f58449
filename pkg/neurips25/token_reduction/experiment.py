"""The chapter's experiment: live for one seed in the notebook, over seeds by the CLI."""
from __future__ import annotations

import torch

from ..runtime import cap, single_thread
from ..vision import TinyViT
from .core import ReductionPlan
from .diagnostics import dc_cosine_stats, evaluate, hf_energy_per_layer, measure_macs
from .training import fine_tune, train_tiny_vit

# --- the chapter's experiment (live in the notebook for one seed; over seeds by the CLI) --------------

#: label -> plan arguments of the compared reducers (besides keep_ratio and layers)
VARIANTS = {
    "ours": dict(method="ours"), "ours (abs)": dict(method="ours", score="abs"),
    "ours (w=2)": dict(method="ours", window=2), "EViT": dict(method="evit"), "ToMe": dict(method="tome"),
    "random": dict(method="random"), "keep LF": dict(method="keep_lf"),
    "ours (log-size)": dict(method="ours", proportional=True),
}

#: The paper's token-set ablations (Sec. 4): spend the whole budget on the HF (or the LF) tokens and drop
#: the rest, with no DC token. "LF only" is the paper's "keeping only the LF tokens"; the ``keep LF``
#: variant above keeps the LF tokens but still folds the HF ones into a DC token.
ABLATIONS = {"HF only": dict(method="ours", dc=False), "LF only": dict(method="keep_lf", dc=False)}

#: The five reducers of the main comparison (HF energy, figures, fine-tuning curves).
MAIN_VARIANTS = ("ours", "EViT", "ToMe", "random", "keep LF")

#: A second schedule, spaced like the paper's blocks 4/7/10 of 12 (every other block instead of three
#: in a row): training-free accuracy of these variants at ``ft_keep`` only (a diagnostic).
ALT_LAYERS, ALT_VARIANTS = (1, 3, 5), ("ours", "EViT", "ToMe", "keep LF")

#: The seed sweep behind ``notebooks/results/token_reduction.json`` (``small``: exactly the settings of
#: the stored sweep) and ``token_reduction.full.json`` (``full``, for a GPU). The paper fine-tunes DeiT/ViT
#: models on ImageNet-1K for 30 epochs with self-distillation, reducing 30% of the tokens at layers
#: 4/7/10 of 12; ``full`` moves toward that on the digits: a tiny ViT trained to convergence (40 epochs),
#: 10 fine-tuning epochs (1/3 of pre-training's length instead of 2/7), fine-tuned curves at every keep
#: ratio, 5 seeds.
SWEEP = {
    "small": dict(seeds=[0, 1, 2], epochs=7, ft_epochs=2, ft_keeps=(0.5, 0.7, 0.85)),
    "full": dict(seeds=[0, 1, 2, 3, 4], epochs=40, ft_epochs=10, ft_keeps=(0.5, 0.6, 0.7, 0.85)),
}


def plan_for(name: str, keep_ratio: float, layers, **extra) -> ReductionPlan:
    """The :class:`ReductionPlan` of variant ``name`` (a label of :data:`VARIANTS` or :data:`ABLATIONS`)."""
    known = {**VARIANTS, **ABLATIONS}
    if name not in known:
        raise ValueError(f"name must be one of {tuple(known)}, got {name!r}")
    return ReductionPlan(keep_ratio=keep_ratio, layers=tuple(layers), **known[name], **extra)


def training_free(model: TinyViT, X: torch.Tensor, y: torch.Tensor, layers, keep_ratios,
                  names=MAIN_VARIANTS) -> dict:
    """Training-free test accuracy and measured MACs of each variant (label of ``VARIANTS``) at each
    keep ratio: ``{"acc": {name: {str(kr): acc}}, "macs": {name: {str(kr): macs}}}``. Variants that
    cannot run at a ratio (too few tokens for their DC windows) are left out."""
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(f"X and y must be non-empty and of equal length, got {len(X)} and {len(y)}")
    out: dict = {"acc": {}, "macs": {}}
    for kr in keep_ratios:
        for name in names:
            try:
                plan = plan_for(name, kr, layers)
                acc = evaluate(model, X, y, plan)
            except ValueError:      # e.g. too few tokens for 4 DC windows
                continue
            out["acc"].setdefault(name, {})[str(kr)] = acc
            out["macs"].setdefault(name, {})[str(kr)] = measure_macs(model, plan)
    return out


def reduced_energies(model: TinyViT, X: torch.Tensor, layers, keep_ratio: float, names=MAIN_VARIANTS,
                     sized: bool = False) -> dict[str, list[float]]:
    """Relative HF energy per block of the unreduced model and of each variant at ``keep_ratio``
    (per token, or on the unmerged map with ``sized``)."""
    out = {"no reduction": hf_energy_per_layer(model, X).tolist()}
    for name in names:
        out[name] = hf_energy_per_layer(model, X, plan_for(name, keep_ratio, layers), sized=sized).tolist()
    return out


def run_experiment(seed: int = 0, epochs: int = 7, ft_epochs: int = 2, layers=(1, 2, 3),
                   keep_ratios=(0.5, 0.6, 0.7, 0.85), ft_keep: float = 0.7, ft_keeps=None,
                   ft_variants=("ours", "ToMe", "EViT", "keep LF", "random")) -> dict:
    """Train the tiny ViT, then: training-free accuracy and MACs of every variant per keep ratio,
    training-free accuracy at ``ft_keep`` with the paper-spaced schedule ``ALT_LAYERS``
    (``acc_alt_layers``), LF/HF-to-DC cosines (with a random-partition control), HF energy per layer
    at ``ft_keep`` per token (``hf_energy``) and on the unmerged map (``hf_energy_sized``; after
    fine-tuning: ``hf_energy_ft``), and
    accuracy after ``ft_epochs`` of fine-tuning with self-distillation (``omega1, omega2`` for ours
    and keep-LF) at ``ft_keep`` -- and, in ``finetuned_curve``, at every ratio of ``ft_keeps``.
    Runs on one CPU thread (see :func:`single_thread`) so that its numbers do not depend on the machine's
    thread count."""
    with single_thread():
        return _run_experiment(seed, epochs, ft_epochs, layers, keep_ratios, ft_keep,
                               tuple(ft_keeps or ()), ft_variants)


def _run_experiment(seed, epochs, ft_epochs, layers, keep_ratios, ft_keep, ft_keeps, ft_variants):
    model, splits = train_tiny_vit(seed, epochs)
    X, y = splits["test"]
    out: dict = {"seed": seed, "acc_full": evaluate(model, X, y), "macs_full": measure_macs(model),
                 **training_free(model, X, y, layers, keep_ratios, tuple(VARIANTS)), "finetuned": {}}
    out["acc_alt_layers"] = {
        name: evaluate(model, X, y, ReductionPlan(keep_ratio=ft_keep, layers=ALT_LAYERS, **VARIANTS[name]))
        for name in ALT_VARIANTS}
    out["macs_alt_layers"] = measure_macs(model, ReductionPlan(keep_ratio=ft_keep, layers=ALT_LAYERS))
    out["hf_energy"] = reduced_energies(model, X, layers, ft_keep)
    out["hf_energy_sized"] = reduced_energies(model, X, layers, ft_keep, sized=True)
    out["hf_energy_ft"] = {}
    cos, ctl = dc_cosine_stats(model, X), dc_cosine_stats(model, X, control=True, seed=seed)
    out["cosine"] = {"lf": cos["lf"].tolist(), "hf": cos["hf"].tolist(),
                     "control_lf": ctl["lf"].tolist(), "control_hf": ctl["hf"].tolist()}
    out["finetuned_curve"] = {}
    for kr in sorted({ft_keep, *ft_keeps}):
        for name in ft_variants:
            kw = dict(VARIANTS[name])
            plan = ReductionPlan(keep_ratio=kr, layers=tuple(layers),
                                 reweight=kw["method"] in ("ours", "keep_lf"), **kw)
            tuned = fine_tune(model, plan, ft_epochs, seed)
            acc = evaluate(tuned, X, y, plan)
            if kr == ft_keep:
                out["finetuned"][name] = acc
                out["hf_energy_ft"][name] = hf_energy_per_layer(tuned, X, plan, sized=True).tolist()
            if kr in ft_keeps:
                out["finetuned_curve"].setdefault(name, {})[str(kr)] = acc
    out["ft_keep"] = ft_keep
    out["model"] = model
    return out


def main(argv=None) -> None:
    """``python -m neurips25.token_reduction [--scale small|full] [--seeds 0 1 2] [--model tiny|vit64]``:
    the experiment over seeds (settings: ``SWEEP[scale]``), stored in
    ``notebooks/results/token_reduction.json`` (small) or ``token_reduction.full.json`` (full); with
    ``--model vit64`` the 64-token ViT is trained and shipped instead (see :mod:`.vit64`)."""
    import argparse

    from ..results import add_scale_arguments, save_results

    ap = argparse.ArgumentParser(prog="python -m neurips25.token_reduction", description=main.__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="override SWEEP[scale]['seeds']")
    ap.add_argument("--model", choices=("tiny", "vit64"), default="tiny",
                    help="tiny: the 17-token ViT (token_reduction.json); vit64: train and ship the "
                         "64-token ViT (token_reduction_vit64.json with its weights, VIT64_SWEEP[scale])")
    ap.add_argument("--paper-protocols", action="store_true",
                    help="with --model vit64: the paper's Fig. 5a/6 protocols on the shipped weights "
                         "(token_reduction_paper.json, PAPER_PROTOCOLS[scale])")
    ap.add_argument("--paper-ablations", action="store_true",
                    help="with --model vit64: the paper's analyses, training-free, on the shipped weights "
                         "(token_reduction_ablations.json, PAPER_ABLATIONS[scale])")
    ap.add_argument("--replication", action="store_true",
                    help="with --model vit64: the fine-tuned comparison on 30 fresh seeds "
                         "(token_reduction_replication.json, REPLICATION[scale])")
    ap.add_argument("--early", action="store_true",
                    help="with --replication: the same seeds with the budget started at block 0, also "
                         "training-free (token_reduction_early.json, EARLY[scale])")
    ap.add_argument("--ft-epochs", type=int, default=None,
                    help="with --replication: fine-tune this many epochs instead of the protocol's "
                         "(stored with _ft<N> added to the name)")
    args = ap.parse_args(argv)
    for flag in ("early", "ft_epochs"):
        if getattr(args, flag) not in (False, None) and not args.replication:
            ap.error(f"--{flag.replace('_', '-')} needs --replication")
    runs = ("paper_protocols", "paper_ablations", "replication")
    for flag in runs:
        if getattr(args, flag) and args.model != "vit64":
            ap.error(f"--{flag.replace('_', '-')} needs --model vit64")
    if sum(getattr(args, flag) for flag in runs) > 1:
        ap.error("--paper-protocols, --paper-ablations and --replication are separate runs: give one")
    if args.model == "vit64":
        from .vit64 import main_paper_ablations, main_paper_protocols, main_replication, main_vit64

        if args.replication:
            print(main_replication(args.scale, args.seeds, args.out, early=args.early, ft_epochs=args.ft_epochs))
            return
        run = main_paper_protocols if args.paper_protocols else main_paper_ablations if args.paper_ablations else main_vit64
        print(run(args.scale, args.seeds, args.out))
        return
    cfg = dict(SWEEP[args.scale])
    seeds = cfg.pop("seeds") if args.seeds is None else args.seeds
    cfg.pop("seeds", None)
    runs = []
    for s in seeds[:cap(len(seeds), 1)]:   # NEURIPS25_SMOKE=1: one seed
        r = run_experiment(s, **cfg)
        r.pop("model")
        runs.append(r)
        print(f"seed {s}: full {r['acc_full']:.3f}", {k: round(v["0.7"], 3) for k, v in r["acc"].items()
                                                         if "0.7" in v}, r["finetuned"], flush=True)
    cmd = "python -m neurips25.token_reduction " + ("--scale full " if args.scale == "full" else "")
    print(save_results("token_reduction", {"runs": runs}, cmd + "--seeds " + " ".join(map(str, seeds)),
                       seed=seeds[0], path=args.out, scale=args.scale))
