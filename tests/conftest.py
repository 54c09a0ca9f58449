"""Shared pytest setup: headless matplotlib, offline Hugging Face, quiet Lightning."""
import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: needs headless Chromium and the offline book build")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
