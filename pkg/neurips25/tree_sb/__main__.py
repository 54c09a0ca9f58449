"""``python -m neurips25.tree_sb``: regenerate the stored sweep."""
from .experiment import main

main()
