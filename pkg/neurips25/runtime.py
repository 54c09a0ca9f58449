"""Runtime helpers shared by every chapter: seeding, device choice, scale, a quiet Lightning trainer.

Every notebook starts with::

    from neurips25.runtime import seed_everything, device, scale, make_trainer
    seed_everything(0)
    CFG = {"small": dict(n=500), "full": dict(n=50_000)}[scale()]

so that the stored (CPU) outputs and a GPU/Colab run differ by one environment variable,
``NEURIPS25_SCALE=full``, not by an edit.
"""
from __future__ import annotations

import logging
import os
import random
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import numpy as np
import torch

__all__ = [
    "SCALES",
    "seed_everything",
    "device",
    "in_colab",
    "scale",
    "pick",
    "quiet",
    "single_thread",
    "make_trainer",
    "lightning_module",
    "smoke",
    "cap",
    "check_int",
]

SCALES = ("small", "full")


def seed_everything(seed: int = 0) -> int:
    """Seed Python, NumPy and torch (CPU and CUDA) and make torch's kernels deterministic.

    Returns the seed so a notebook can print it beside its results.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ["PYTHONHASHSEED"] = str(seed)
    # cuBLAS needs this for deterministic matmuls; harmless on CPU.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    return seed


def device(prefer: str | None = None) -> torch.device:
    """The device to compute on: CUDA when present, else CPU (``prefer="cpu"`` forces CPU).

    Apple's MPS is not chosen automatically: several chapters need float64, which MPS lacks.
    """
    if prefer is not None and prefer not in ("cpu", "cuda"):
        raise ValueError(f"prefer must be None, 'cpu' or 'cuda', got {prefer!r}")
    if prefer == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if prefer == "cuda":
        raise ValueError("prefer='cuda' but torch.cuda.is_available() is False")
    return torch.device("cpu")


def in_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules


def scale() -> str:
    """The experiment scale: ``"small"`` (default, the stored outputs) or ``"full"``.

    Set ``NEURIPS25_SCALE=full`` (e.g. on a GPU or in Colab) to run the paper-sized settings.
    """
    value = os.environ.get("NEURIPS25_SCALE", "small").strip().lower()
    if value not in SCALES:
        raise ValueError(f"NEURIPS25_SCALE must be one of {SCALES}, got {value!r}")
    return value


def smoke() -> bool:
    """True when ``NEURIPS25_SMOKE=1``: run any configuration (``full`` included) for a bounded number
    of steps, so a test can prove it runs end to end (shapes, keys, devices) without its cost."""
    value = os.environ.get("NEURIPS25_SMOKE", "0").strip()
    if value not in ("0", "1", ""):
        raise ValueError(f"NEURIPS25_SMOKE must be 0 or 1, got {value!r}")
    return value == "1"


def check_int(value: Any, name: str, low: int = 1) -> int:
    """``value`` as a Python int if it is an int (NumPy ints too) ``>= low``, else ``ValueError`` naming
    ``name``. Bools are rejected: ``True`` would silently count as 1."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        kind = {1: "a positive int", 0: "a non-negative int"}.get(low, f"an int >= {low}")
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def cap(n: int, smoke_value: int = 2) -> int:
    """``n`` — or ``min(n, smoke_value)`` under ``NEURIPS25_SMOKE=1``. Modules wrap their loop counts
    (training steps, epochs, seeds, sweep sizes) in it: ``for step in range(cap(cfg["steps"]))``."""
    n, smoke_value = check_int(n, "n", 0), check_int(smoke_value, "smoke_value")
    return min(n, smoke_value) if smoke() else n


def pick(config: Mapping[str, Any]) -> Any:
    """Select ``config[scale()]`` from a ``{"small": ..., "full": ...}`` dict."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping keyed by scale, got {type(config).__name__}")
    missing = [s for s in SCALES if s not in config]
    if missing:
        raise ValueError(f"config must have keys {SCALES}; missing {missing}")
    return config[scale()]


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one intra-op CPU thread inside the block (the old count is restored afterwards).

    The book's tensors are small: thread synchronisation costs more than it saves, badly so on a
    shared or oversubscribed CPU, and float results can depend on the thread count (reduction order),
    which stored outputs must not. Works as ``with single_thread(): ...`` and as a decorator.
    """
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def quiet() -> None:
    """Silence Lightning / Hugging Face chatter so notebook outputs stay clean.

    Lightning resets its loggers to INFO when it is imported, so import it first, then lower them.
    """
    import lightning  # noqa: F401

    for name in (
        "lightning",
        "lightning.pytorch",
        "lightning.fabric",
        "pytorch_lightning",
        "lightning_fabric",
        "transformers",
        "sentence_transformers",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    from lightning.fabric.utilities.warnings import PossibleUserWarning

    warnings.filterwarnings("ignore", category=PossibleUserWarning)
    # lightning 2.6 + torch 2.13: deprecation notices from Lightning's own internals.
    warnings.filterwarnings("ignore", message=r".*LeafSpec.*", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r".*does not have many workers.*")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_trainer(max_epochs: int | None = 10, *, verbose: bool = False, **kwargs: Any):
    """A Lightning ``Trainer`` that prints nothing and writes nothing to disk by default.

    No progress bar, model summary, logger, checkpoints or ``lightning_logs/``; deterministic;
    ``accelerator="auto"`` so the same call trains on a GPU when there is one. Any Trainer
    argument can be overridden, e.g. ``make_trainer(5, strategy="ddp", devices=2)`` to scale out.
    ``verbose=True`` turns the progress bar and summary back on for interactive use.
    """
    if max_epochs is not None and (not isinstance(max_epochs, int) or max_epochs < 1):
        raise ValueError(f"max_epochs must be a positive int or None, got {max_epochs!r}")
    quiet()
    import lightning as L

    defaults: dict[str, Any] = dict(
        max_epochs=max_epochs,
        accelerator="auto",
        devices=1,
        enable_progress_bar=verbose,
        enable_model_summary=verbose,
        logger=False,
        enable_checkpointing=False,
        deterministic=True,
        default_root_dir=os.path.join(os.environ.get("TMPDIR", "/tmp"), "neurips25-lightning"),
    )
    defaults.update(kwargs)
    return L.Trainer(**defaults)


def lightning_module() -> type:
    """``lightning.LightningModule``, imported quietly (Lightning's loggers lowered first).

    Chapters subclass it as ``class Model(lightning_module()): ...`` so that importing a chapter
    module prints nothing, and Lightning is imported in one place.
    """
    quiet()
    import lightning as L

    return L.LightningModule
