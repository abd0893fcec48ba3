"""clarytree: interpretable shallow trees, as accurate as possible for their size.

Estimators
----------
CLARITreeRegressor
    Piecewise-linear regression tree grown with lookahead (CLARITree).
CholeskyTreeRegressor
    The greedy piecewise-linear tree (CholeskyTree).
CLARITreeRegressorCV, CholeskyTreeRegressorCV
    The same with the leaf penalty and ridge strength tuned by
    cross-validation over a shared leaf-penalty path.

The MBNDT multi-branch differentiable trees live in :mod:`clarytree.mbndt`
(requires the ``torch`` extra).
"""

from ._classes import CholeskyTreeRegressor, CLARITreeRegressor, UnsplittableWarning
from ._explain import explain, export_python, export_sql
from ._export import (
    export_graphviz,
    export_text,
    from_dict,
    leaf_table,
    plot_partition,
    plot_tree,
    to_dict,
)
from ._path import (
    CholeskyTreeRegressorCV,
    CLARITreeRegressorCV,
    leaf_penalty_path,
    plot_cv_path,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "CLARITreeRegressor",
    "CLARITreeRegressorCV",
    "CholeskyTreeRegressor",
    "CholeskyTreeRegressorCV",
    "__version__",
    "explain",
    "export_graphviz",
    "export_python",
    "export_sql",
    "export_text",
    "from_dict",
    "leaf_penalty_path",
    "leaf_table",
    "plot_cv_path",
    "plot_partition",
    "plot_tree",
    "to_dict",
    "UnsplittableWarning",
]
