"""
=========================================
Tuning the leaf penalty and the ridge
=========================================

``leaf_penalty`` (lambda) is the training R^2 an extra leaf must buy;
``ridge_alpha`` (kappa) the ridge strength of each leaf regression on
standardized features. Both are scale-free, so one grid serves every data set.
Here :class:`~sklearn.model_selection.GridSearchCV` picks them by 3-fold
cross-validation on data with four linear regimes.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import GridSearchCV, train_test_split

from clarytree import CLARITreeRegressor
from clarytree.datasets import make_piecewise_linear

X, y = make_piecewise_linear(n_samples=600, n_features=4, n_regimes=4, rho=0.5,
                             noise=0.3, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

grid = {
    "leaf_penalty": [1e-1, 3e-2, 1e-2, 1e-3, 1e-4],
    "ridge_alpha": [1e-1, 1e-3, 1e-5],
}
search = GridSearchCV(CLARITreeRegressor(max_depth=3), grid, cv=3)
search.fit(X_train, y_train)
print("best parameters:", search.best_params_)
print(f"test R2 of the refitted model: {search.score(X_test, y_test):.3f}")
print("leaves:", search.best_estimator_.get_n_leaves())

# %%
# Cross-validated R^2 over the grid. Large penalties merge regimes (too few
# leaves); tiny ones add leaves that do not generalize.
results = pd.DataFrame(search.cv_results_)
scores = results.pivot(index="param_leaf_penalty", columns="param_ridge_alpha",
                       values="mean_test_score").sort_index(ascending=False)
fig, ax = plt.subplots(figsize=(6, 4))
im = ax.imshow(scores.to_numpy(), cmap="viridis")
ax.set_xticks(range(scores.shape[1]), [f"{v:g}" for v in scores.columns])
ax.set_yticks(range(scores.shape[0]), [f"{v:g}" for v in scores.index])
ax.set_xlabel("ridge_alpha (kappa)")
ax.set_ylabel("leaf_penalty (lambda)")
for (i, j), v in np.ndenumerate(scores.to_numpy()):
    ax.text(j, i, f"{v:.3f}", ha="center", va="center", color="w", fontsize=8)
fig.colorbar(im, label="mean CV R^2")
plt.show()

# %%
# Leaves against the penalty, at the selected ridge strength.
alpha = search.best_params_["ridge_alpha"]
penalties = grid["leaf_penalty"]
leaves = [CLARITreeRegressor(max_depth=3, leaf_penalty=lam, ridge_alpha=alpha)
          .fit(X_train, y_train).get_n_leaves() for lam in penalties]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(penalties, leaves, "o-")
ax.set_xlabel("leaf_penalty")
ax.set_ylabel("leaves")
plt.show()
