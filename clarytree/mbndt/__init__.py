"""MBNDT: multi-branch neural decision trees with adaptive pruning.

Shallow axis-aligned trees whose internal nodes split one feature into up to
``n_branches`` ordered intervals, trained end to end by gradient descent
(Park et al., "Adaptive Multi-Branching for Shallow Decision Tree Induction",
arXiv:2608.29262) and exported as deterministic multiway trees.

Training needs PyTorch (``pip install clarytree[torch]``); it is imported only
inside ``fit``.  A fitted estimator holds plain numpy arrays and scikit-learn
transformers only, so it pickles, loads and predicts without torch.

The estimators are :class:`MBNDTClassifier` (binary and multiclass) and
:class:`MBNDTRegressor`. ``export_text`` is :func:`clarytree.export_text`
(one renderer for both tree families); :func:`clarytree.leaf_table`,
:func:`clarytree.to_dict`, :func:`clarytree.export_graphviz` and
:func:`clarytree.plot_tree` accept fitted MBNDT estimators as well.
"""

from .._export import export_text
from . import _export  # noqa: F401  (registers the multiway tree family)
from ._classes import MBNDTClassifier, MBNDTRegressor

__all__ = ["MBNDTClassifier", "MBNDTRegressor", "export_text"]


def __dir__():
    return list(__all__)
