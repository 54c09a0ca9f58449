"""Keep Hugging Face quiet: no progress bars, no advisory warnings in notebook outputs."""
from __future__ import annotations

import contextlib
import logging
import os
import warnings

_DONE = False


def silence_hf() -> None:
    """Lower transformers/peft/tokenizers chatter once per process (idempotent)."""
    global _DONE
    if _DONE:
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    for name in ("transformers", "peft", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is an extra
        pass
    _DONE = True


@contextlib.contextmanager
def hf_quiet():
    """Context for building/loading HF objects: silenced loggers, known-harmless warnings hidden."""
    silence_hf()
    with warnings.catch_warnings():
        # peft/transformers advisory notices about configs that are fine for tiny models.
        warnings.filterwarnings("ignore", module=r"(transformers|peft)(\.|$)")
        yield
