"""Test configuration.

Tests run against the installed package (``--import-mode=importlib`` keeps
the source tree off ``sys.path``); helper modules in this folder are made
importable here.
"""

import os
import sys

from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

# CI runs the property tests with more examples than a developer's loop.
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
