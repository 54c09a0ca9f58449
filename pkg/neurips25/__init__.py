"""neurips25 — the package behind the book "NeurIPS 2025 in Code".

Shared modules: ``runtime`` (seeding, device, scale, quiet Lightning trainer), ``data`` (offline
datasets), ``nn`` (MLP, time embeddings), ``plotting`` (book style), ``display`` (source and tables),
``results`` (stored sweep results), ``stats`` (log-log rates and bootstrap intervals), ``lm`` (tiny
language models). One module per chapter, named by the chapter's slug, e.g.
``neurips25.sinkhorn_bridge``.
"""
__version__ = "0.1.0"

from .runtime import device, in_colab, make_trainer, pick, scale, seed_everything  # noqa: E402,F401
