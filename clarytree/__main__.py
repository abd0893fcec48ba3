"""``python -m clarytree``: the same command line as the ``clarytree`` script."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
