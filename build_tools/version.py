#!/usr/bin/env python3
"""Print clarytree's version, read from ``clarytree/__init__.py``.

The version is written once, as ``__version__`` in the package; meson.build
runs this script and meson-python passes the result to the wheel metadata
(``dynamic = ["version"]`` in pyproject.toml).
"""

import ast
from pathlib import Path

INIT = Path(__file__).resolve().parent.parent / "clarytree" / "__init__.py"

for node in ast.parse(INIT.read_text(encoding="utf-8")).body:
    if (isinstance(node, ast.Assign) and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) == "__version__"):
        print(ast.literal_eval(node.value))
        break
else:
    raise SystemExit(f"no __version__ = '...' assignment in {INIT}")
