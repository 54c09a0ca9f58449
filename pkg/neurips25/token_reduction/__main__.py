"""``python -m neurips25.token_reduction``: the experiment over seeds (see ``experiment.main``)."""
from .experiment import main

main()
