"""``python -m neurips25.grid_reasoning``: the multi-seed study (see ``model.main``)."""
from .model import main

main()
