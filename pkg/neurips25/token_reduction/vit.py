"""The tiny ViT now lives in the shared module :mod:`neurips25.vision` (the LEFF chapter uses it
too); these names are re-exported for this chapter's notebook and tests."""
from ..vision import Attention, Block, LayerTrace, TinyViT, TokenState

__all__ = ["Attention", "Block", "LayerTrace", "TinyViT", "TokenState"]
