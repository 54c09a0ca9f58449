r"""Causal-LM training with Lightning: a data module, a module with a loss mask, a one-call helper.

The objective is next-token cross-entropy with an optional 0/1 loss mask $m_t$,

$$\mathcal L(\theta) = -\frac{\sum_t m_t \log p_\theta(x_t \mid x_{<t})}{\sum_t m_t},$$

so "train only on the answer" is ``m_t = 1`` on answer tokens and 0 on the prompt. The learning
rate warms up linearly for ``warmup`` steps, then follows a cosine to ``min_lr_ratio * lr``.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from ..runtime import check_int
from .models import context_length

__all__ = ["warmup_cosine", "TextDataModule", "CausalLM", "train_lm", "lm_loss"]


def warmup_cosine(step: int, *, warmup: int, total: int, min_lr_ratio: float = 0.1) -> float:
    """Learning-rate multiplier: linear warmup over ``warmup`` steps, cosine decay to ``min_lr_ratio``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def lm_loss(logits: torch.Tensor, input_ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Masked next-token cross-entropy (the equation above); logits ``(B, T, V)``, ids/mask ``(B, T)``."""
    logits, targets, m = logits[:, :-1], input_ids[:, 1:], loss_mask[:, 1:].float()
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), reduction="none")
    return (nll * m.reshape(-1)).sum() / m.sum().clamp(min=1.0)


# ----------------------------------------------------------------------------------------- data
class _Examples(Dataset):
    def __init__(self, ids: list[list[int]], masks: list[list[int]]):
        self.ids, self.masks = ids, masks

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.masks[i]


def _collate(pad_id: int):
    def collate(batch):
        T = max(len(x) for x, _ in batch)
        ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
        att = torch.zeros((len(batch), T), dtype=torch.long)
        lm = torch.zeros((len(batch), T), dtype=torch.long)
        for i, (x, m) in enumerate(batch):  # right padding: positions stay 0..len-1
            ids[i, : len(x)] = torch.tensor(x)
            att[i, : len(x)] = 1
            lm[i, : len(x)] = torch.tensor(m)
        return {"input_ids": ids, "attention_mask": att, "loss_mask": lm}

    return collate


def _encode_examples(data, tokenizer, mask, add_bos: bool, add_eos: bool):
    """→ (ids, masks) lists. Accepts strings, (prompt, answer) pairs, or lists of token ids."""
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise TypeError("data must be a list of strings, of (prompt, answer) pairs, or of token-id lists")
    if len(data) == 0:
        raise ValueError("data is empty; need at least one training sequence")
    bos = [tokenizer.bos_token_id] if add_bos else []
    eos = [tokenizer.eos_token_id] if add_eos else []
    enc = lambda s: list(tokenizer(s, add_special_tokens=False)["input_ids"])
    first = data[0]
    ids, masks = [], []
    if isinstance(first, str):
        if not all(isinstance(x, str) for x in data):
            raise TypeError("data mixes strings with other types")
        if mask not in (None, "all"):
            raise ValueError("mask must be None for plain texts; use (prompt, answer) pairs with mask='answer' "
                             "or token ids with a list of masks")
        for s in data:
            x = bos + enc(s) + eos
            ids.append(x)
            masks.append([1] * len(x))
    elif isinstance(first, tuple) and len(first) == 2 and isinstance(first[0], str):
        if mask not in (None, "answer", "all"):
            raise ValueError(f"mask for (prompt, answer) pairs must be 'answer' or 'all', got {mask!r}")
        only_answer = mask in (None, "answer")
        for pair in data:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
                raise TypeError(f"every item must be a (prompt, answer) pair of strings, got {pair!r}")
            p, a = bos + enc(pair[0]), enc(pair[1]) + eos
            ids.append(p + a)
            masks.append(([0] if only_answer else [1]) * len(p) + [1] * len(a))
    else:
        ids = [list(map(int, torch.as_tensor(x).tolist())) for x in data]
        if mask is None or mask == "all":
            masks = [[1] * len(x) for x in ids]
        elif isinstance(mask, Sequence) and not isinstance(mask, str) and len(mask) == len(ids):
            masks = [list(map(int, torch.as_tensor(m).tolist())) for m in mask]
            bad = [i for i, (x, m) in enumerate(zip(ids, masks)) if len(x) != len(m)]
            if bad:
                raise ValueError(f"mask {bad[0]} has {len(masks[bad[0]])} entries for {len(ids[bad[0]])} tokens")
        else:
            raise ValueError("mask for token-id data must be None or a list of 0/1 lists, one per sequence")
    if any(len(x) == 0 for x in ids):
        raise ValueError("data contains an empty sequence")
    return ids, masks


class TextDataModule(L.LightningDataModule):
    """Tokenised sequences for causal-LM training, padded or packed into ``block_size`` tokens.

    Args:
        data: list of strings; or ``(prompt, answer)`` pairs; or token-id lists (then ``mask`` may be
            one 0/1 list per sequence). Strings/pairs get ``<bos>`` ... ``<eos>`` around them.
        tokenizer: a HF tokenizer (e.g. ``build_tokenizer``).
        block_size: maximum tokens per training row (≤ the model's context).
        batch_size: rows per batch.
        mask: None (every token counts), "answer" (pairs: only answer tokens and EOS count), or a
            list of per-sequence masks for token-id data.
        mode: "pad" — one sequence per row, right-padded; a sequence longer than ``block_size`` raises
            ``ValueError``. "pack" — all sequences concatenated and cut into ``block_size`` rows (the
            nanoGPT way; no padding, sequences may straddle rows; the mask travels with the tokens).
        val_data: optional held-out data in the same format (enables ``val_loss``).
        seed: seeds the shuffling.
    """

    def __init__(self, data, tokenizer, block_size: int = 128, batch_size: int = 32, *, mask=None,
                 mode: str = "pad", val_data=None, add_bos: bool = True, add_eos: bool = True, seed: int = 0):
        super().__init__()
        if mode not in ("pad", "pack"):
            raise ValueError(f"mode must be 'pad' or 'pack', got {mode!r}")
        for name, v in dict(block_size=block_size, batch_size=batch_size).items():
            check_int(v, name)
        if mode == "pack" and block_size < 2:
            raise ValueError("block_size must be >= 2 to pack (a row needs an input and a target)")
        self.tokenizer, self.block_size, self.batch_size, self.mode, self.seed = (
            tokenizer, block_size, batch_size, mode, seed)
        self.train_ids, self.train_masks = self._prepare(data, mask, add_bos, add_eos, "data")
        self.val_ids = self.val_masks = None
        if val_data is not None:
            vmask = mask if (mask is None or isinstance(mask, str)) else None
            self.val_ids, self.val_masks = self._prepare(val_data, vmask, add_bos, add_eos, "val_data")

    def _prepare(self, data, mask, add_bos, add_eos, name):
        ids, masks = _encode_examples(data, self.tokenizer, mask, add_bos, add_eos)
        if self.mode == "pad":
            too_long = [i for i, x in enumerate(ids) if len(x) > self.block_size]
            if too_long:
                i = too_long[0]
                raise ValueError(f"{name}[{i}] has {len(ids[i])} tokens (with BOS/EOS), longer than block_size="
                                 f"{self.block_size}; raise block_size (≤ the model's context) or use mode='pack'")
            return ids, masks
        flat = [t for x in ids for t in x]
        fm = [t for m in masks for t in m]
        n = len(flat) // self.block_size
        if n == 0:
            raise ValueError(f"{name} has only {len(flat)} tokens, fewer than one block of {self.block_size}")
        B = self.block_size
        return [flat[i * B:(i + 1) * B] for i in range(n)], [fm[i * B:(i + 1) * B] for i in range(n)]

    @property
    def n_tokens(self) -> int:
        """Training tokens per epoch (excluding padding)."""
        return sum(len(x) for x in self.train_ids)

    def _pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

    def train_dataloader(self):
        g = torch.Generator().manual_seed(self.seed)
        return DataLoader(_Examples(self.train_ids, self.train_masks), batch_size=self.batch_size, shuffle=True,
                          generator=g, collate_fn=_collate(self._pad_id()), drop_last=False)

    def val_dataloader(self):
        if self.val_ids is None:
            return []
        return DataLoader(_Examples(self.val_ids, self.val_masks), batch_size=self.batch_size,
                          collate_fn=_collate(self._pad_id()))


# --------------------------------------------------------------------------------------- module
class CausalLM(L.LightningModule):
    """Trains any HF causal LM (tiny or pretrained, with or without LoRA) on masked next-token loss.

    Args:
        model: a ``transformers`` causal LM (``tiny_model``, ``pretrained``, or a peft model).
        lr: peak learning rate (AdamW); ``weight_decay`` applies to matrices only.
        warmup: linear warmup steps; then cosine decay to ``min_lr_ratio * lr`` at ``total_steps``
            (default: the trainer's estimated number of steps).

    ``self.history`` holds the training loss of every step (floats), for loss curves without a logger.
    """

    def __init__(self, model, lr: float = 3e-3, warmup: int = 20, *, weight_decay: float = 0.01,
                 betas: tuple[float, float] = (0.9, 0.98), min_lr_ratio: float = 0.1, total_steps: int | None = None):
        super().__init__()
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a transformers causal LM (torch.nn.Module), got {type(model).__name__}")
        if not (isinstance(lr, (int, float)) and lr > 0):
            raise ValueError(f"lr must be a positive float, got {lr!r}")
        warmup = check_int(warmup, "warmup", 0)
        self.save_hyperparameters(ignore=["model"])
        self.model = model
        self._history: list[torch.Tensor] = []

    @property
    def history(self) -> list[float]:
        return [float(x) for x in self._history]

    def forward(self, input_ids, attention_mask=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

    def _loss(self, batch):
        logits = self(batch["input_ids"], batch.get("attention_mask"))
        mask = batch.get("loss_mask")
        if mask is None:
            mask = batch.get("attention_mask", torch.ones_like(batch["input_ids"]))
        return lm_loss(logits, batch["input_ids"], mask)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self._history.append(loss.detach().cpu() if loss.device.type == "cpu" else loss.detach())
        self.log("train_loss", loss, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("val_loss", loss, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def configure_optimizers(self):
        hp = self.hparams
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("model has no trainable parameters")
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": hp.weight_decay},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=hp.lr, betas=tuple(hp.betas))
        total = hp.total_steps or int(self.trainer.estimated_stepping_batches)
        warm = min(hp.warmup, max(total - 1, 0))
        ratio = hp.min_lr_ratio
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: warmup_cosine(s, warmup=warm, total=total, min_lr_ratio=ratio))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def train_lm(model, tokenizer, data, *, steps: int | None = None, epochs: int | None = None, lr: float = 3e-3,
             warmup: int = 20, batch_size: int = 32, block_size: int | None = None, mask=None, mode: str = "pad",
             val_data=None, seed: int = 0, weight_decay: float = 0.01, **trainer_kwargs: Any) -> CausalLM:
    """One call: data module + ``CausalLM`` + quiet trainer; returns the trained ``CausalLM``.

    Give ``steps`` (optimizer steps) or ``epochs`` (not both). ``block_size`` defaults to the
    model's context. The trained network is ``result.model`` (the same object as ``model``, trained
    in place); ``result.history`` is the per-step training loss. Extra keyword arguments go to
    ``neurips25.runtime.make_trainer`` (e.g. ``accelerator="cpu"``).
    """
    from neurips25.runtime import cap, make_trainer

    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps= or epochs=")
    if steps is not None:
        steps = check_int(steps, "steps")
    if epochs is not None:
        epochs = check_int(epochs, "epochs")
    n_ctx = context_length(model)
    block_size = n_ctx if block_size is None else block_size
    if isinstance(block_size, int) and block_size > n_ctx:
        raise ValueError(f"block_size={block_size} is longer than the model's context of {n_ctx}")
    dm = TextDataModule(data, tokenizer, block_size, batch_size, mask=mask, mode=mode, val_data=val_data, seed=seed)
    L.seed_everything(seed, verbose=False)
    module = CausalLM(model, lr=lr, warmup=warmup, weight_decay=weight_decay)
    # NEURIPS25_SMOKE=1 bounds training (runtime.cap): at most 2 epochs, or 100 steps — enough for a
    # tiny model to emit well-formed text, which the chapters' parsers and encoders downstream need
    kw: dict[str, Any] = (dict(max_epochs=cap(epochs)) if epochs is not None
                          else dict(max_epochs=None, max_steps=cap(steps, 100)))
    kw.setdefault("num_sanity_val_steps", 0)
    if val_data is None:
        kw["limit_val_batches"] = 0
    kw.update(trainer_kwargs)
    trainer = make_trainer(**kw)
    model.train()
    trainer.fit(module, datamodule=dm)
    model.eval()
    return module
