"""clarytree: interpretable shallow trees, as accurate as possible for their size."""

__version__ = "0.1.0.dev0"
