"""
=========================================
Tuning the leaf penalty and the ridge
=========================================

``leaf_penalty`` (lambda) is the training R^2 an extra leaf must buy;
``ridge_alpha`` (kappa) the ridge strength of each leaf regression on
standardized features. Both are scale-free, but their best values depend on
the data, so tune them: :class:`~clarytree.CLARITreeRegressorCV` picks them
by cross-validation on data with four linear regimes, growing the trees of
all penalties of a fold in one search, and then is the refitted tree.
"""

# %%
import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import train_test_split

from clarytree import CLARITreeRegressorCV, export_text, plot_cv_path
from clarytree.datasets import make_piecewise_linear

X, y = make_piecewise_linear(n_samples=600, n_features=4, n_regimes=4, rho=0.5,
                             noise=0.3, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

model = CLARITreeRegressorCV(
    max_depth=3, cv=3,
    leaf_penalties=[1e-1, 5e-2, 3e-2, 1e-2, 5e-3, 1e-3, 1e-4],
    ridge_alphas=[1e-1, 1e-3, 1e-5],
).fit(X_train, y_train)
print(f"chosen: leaf_penalty={model.leaf_penalty_:g}, ridge_alpha={model.ridge_alpha_:g}, "
      f"mean CV R2 {model.best_score_:.3f}")
print(f"test R2 of the refitted tree: {model.score(X_test, y_test):.3f}, "
      f"{model.get_n_leaves()} leaves")
print(export_text(model))

# %%
# The validation score against the penalty, one line per ridge strength,
# with the mean number of leaves of the chosen ridge strength: large
# penalties merge regimes (too few leaves), tiny ones add leaves that do not
# generalize. The star is the chosen pair.
fig, ax = plt.subplots(figsize=(7, 4.5))
plot_cv_path(model, ax=ax)
plt.show()

# %%
# ``cv_results_`` has GridSearchCV's layout (and the same numbers as a
# ``GridSearchCV`` over the same grid and folds), plus the leaves.
results = pd.DataFrame(model.cv_results_)
print(results[["param_leaf_penalty", "param_ridge_alpha", "mean_test_score",
               "mean_n_leaves", "rank_test_score"]].head(6))
