"""
======================================================
A table with text columns and missing values, as it is
======================================================

Real tables mix numbers, text categories and empty cells. A CLARITree takes
such a DataFrame directly: text columns are categorical (split-only, tested
as level sets), and missing values get a learned direction at every split.

scikit-learn ships the diabetes study (442 patients, disease progression one
year after baseline) without a download. We turn it into the table a clinic
would export: ``sex`` as text, the body-mass index as a WHO class
(``"normal"``, ``"overweight"``, ...), and one blood serum measurement
(``s5``) missing for a fifth of the patients.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import KFold, cross_val_score

from clarytree import CLARITreeRegressor, export_text, leaf_table, plot_partition, plot_tree

frame = load_diabetes(as_frame=True, scaled=False).frame
y = frame.pop("target")
X = frame[["age", "bp", "s5", "s6"]].copy()
X["sex"] = frame["sex"].map({1.0: "female", 2.0: "male"})
X["bmi_class"] = np.select(
    [frame["bmi"] < 18.5, frame["bmi"] < 25, frame["bmi"] < 30],
    ["underweight", "normal", "overweight"], "obese")
rng = np.random.default_rng(0)
X.loc[rng.random(len(X)) < 0.2, "s5"] = np.nan
X.head()

# %%
# No encoder, no imputer: the model finds the categorical and missing values
# itself. ``sex`` and ``bmi_class`` are split-only; the numeric columns
# enter every leaf's linear model.
model = CLARITreeRegressor(max_depth=2, leaf_penalty=1e-2, ridge_alpha=1e-2)
cv = KFold(n_splits=5, shuffle=True, random_state=0)
print(f"5-fold CV R2 = {cross_val_score(model, X, y, cv=cv).mean():.3f}")
model.fit(X, y)
print("categorical:", list(X.columns[model.is_categorical_]))
print("levels of bmi_class:", list(model.categories_[5]))
print("with missing values in training:", list(X.columns[model.missing_features_]))

# %%
# The rules name levels; the branch of a categorical split that missing
# values and unseen levels take says ``or missing``. ``s5`` is not split on
# here, but it enters every leaf equation, where a missing ``s5`` counts as
# its training mean (``model.tree_.fill_value``): its term is the coefficient
# times that mean, the leaf's prediction for a patient of average ``s5``.
print(export_text(model, significant_digits=3))

# %%
# Each rule of the leaf table selects exactly its leaf's rows, the patients
# with a missing measurement included.
leaf_table(model)[["leaf", "rule", "n_samples", "intercept", "s5", "s6"]].round(3)

# %%
fig, ax = plt.subplots(figsize=(11, 5))
plot_tree(model, ax=ax, max_terms=3)
plt.show()

# %%
# :func:`~clarytree.plot_partition` draws the model along one or two columns,
# the others held at their median (numeric) or most frequent level
# (categorical). Along ``bmi_class`` each level shows its leaf's prediction
# at those held values, with the patients as a strip per level. Against
# ``s6`` every level is a band, cut where the tree cuts ``s6`` within that
# level. A plotted column's missing values would be left out, and the title
# would say how many and where the splits on it send them.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
plot_partition(model, X, y, features="bmi_class", ax=axes[0])
plot_partition(model, X, y, features=["s6", "bmi_class"], ax=axes[1])
fig.tight_layout()
plt.show()
