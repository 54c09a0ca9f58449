"""``python -m neurips25.dqp [--ns ...]``: regenerate the stored scaling benchmark."""
import sys

from .bench import main

main(sys.argv[1:])
