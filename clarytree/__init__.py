"""clarytree: interpretable shallow trees, as accurate as possible for their size.

Estimators
----------
CLARITreeRegressor
    Piecewise-linear regression tree grown with lookahead (CLARITree).
CholeskyTreeRegressor
    The greedy piecewise-linear tree (CholeskyTree).

The MBNDT multi-branch differentiable trees live in :mod:`clarytree.mbndt`
(requires the ``torch`` extra).
"""

from ._classes import CholeskyTreeRegressor, CLARITreeRegressor

__version__ = "0.1.0.dev0"

__all__ = ["CLARITreeRegressor", "CholeskyTreeRegressor", "__version__"]
