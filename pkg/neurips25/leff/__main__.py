"""``python -m neurips25.leff``: the federated sweep over methods, alphas and seeds (see ``experiment.main``)."""
from .experiment import main

main()
