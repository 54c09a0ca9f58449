"""Shared pytest setup: headless matplotlib, offline Hugging Face, quiet Lightning."""
import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: needs headless Chromium and the offline book build")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


import pytest  # noqa: E402


def save_gpt2_style_checkpoint(path, n_positions: int = 64):
    """Save a tiny GPT-2-style checkpoint the way a real one is laid out: byte-level vocabulary with
    id 0 a real token ("!"), ``<|endoftext|>`` last, pad = eos (as GPT-2 and Qwen tokenizers have),
    written with ``save_pretrained``. Returns the folder, loadable by ``neurips25.lm.pretrained``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(alphabet + ["<|endoftext|>"])}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                  clean_up_tokenization_spaces=False)
    eos = tok.eos_token_id
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=eos, eos_token_id=eos)
    import torch

    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def gpt2_style_checkpoint(tmp_path_factory):
    """A folder holding a tiny GPT-2-style checkpoint (see :func:`save_gpt2_style_checkpoint`)."""
    return save_gpt2_style_checkpoint(tmp_path_factory.mktemp("gpt2-style"))


@pytest.fixture(scope="session")
def gpt2_style_checkpoint_384(tmp_path_factory):
    """The same checkpoint with 384 positions, for chapters whose examples (reasoning chains, teaser
    scripts: ~300 bytes) do not fit 64; a real GPT-2 has 1024. Vocabulary, tokenizer, pad = eos unchanged."""
    return save_gpt2_style_checkpoint(tmp_path_factory.mktemp("gpt2-style-384"), n_positions=384)


def _devices() -> list[str]:
    import torch

    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=_devices())
def any_device(request):
    """Each device present: ``cpu`` always, ``cuda`` on a GPU machine, so a test that takes this
    fixture proves the GPU path wherever the suite runs on one (`make test-gpu`)."""
    import torch

    return torch.device(request.param)
