"""
=======================================================
Explaining one prediction, then shipping it as SQL
=======================================================

A CLARITree prediction is one leaf's intercept plus a short sum of terms
``coefficient * feature``. :func:`~clarytree.explain` returns exactly those
numbers for any row: the leaf, the rule that led there, the intercept and one
term per feature, which add up to ``predict`` bit for bit. We explain one
patient of scikit-learn's diabetes data (no download), look at the model's
feature importances, guard the leaf models against extrapolation, and turn
the tree into SQL and into a plain Python function that reproduce its
predictions.
"""

# %%
import sqlite3

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from clarytree import CLARITreeRegressor, explain, export_python, export_sql, export_text

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
model = CLARITreeRegressor(max_depth=2, leaf_penalty=1e-2, ridge_alpha=1e-2)
model.fit(X_train, y_train)
print(export_text(model, significant_digits=3, max_terms=4))

# %%
# One test patient, explained. ``rule`` is the path of tests, ``intercept``
# the leaf's constant, and every feature column its term ``coef * value``
# (0 for a feature the leaf model does not use).
table = explain(model, X_test)
patient = table.iloc[0]
print(f"leaf {patient['leaf']}: {patient['rule']}")
print(f"intercept {patient['intercept']:.2f}")
terms = patient[X.columns].astype(float)
print(terms.round(2).to_string())
print(f"prediction {patient['prediction']:.2f}")

# %%
# Adding the terms to the intercept one at a time, left to right, gives the
# prediction exactly (this is how ``predict`` sums them), so the explanation
# is the computation, not an approximation of it.
total = patient["intercept"]
for name in X.columns:
    total += patient[name]
print(total == model.predict(X_test.iloc[:1])[0])

# %%
# The same numbers as a waterfall: from the intercept, each feature moves the
# prediction up or down by its term.
order = terms.abs().sort_values(ascending=False).index
steps = np.concatenate([[patient["intercept"]], terms[order].to_numpy()])
ends = np.cumsum(steps)
starts = ends - steps
fig, ax = plt.subplots(figsize=(7, 4))
colors = ["0.6"] + ["#d62728" if t < 0 else "#2ca02c" for t in terms[order]]
ax.barh(range(len(steps)), steps, left=starts, color=colors)
ax.set_yticks(range(len(steps)), ["intercept", *order])
ax.invert_yaxis()
ax.axvline(patient["prediction"], color="k", linestyle=":", label="prediction")
ax.set_xlabel("disease progression")
ax.legend(loc="lower right")
ax.set_title(f"Patient {table.index[0]}, leaf {patient['leaf']}")
plt.tight_layout()
plt.show()

# %%
# Feature importances: each split's objective reduction goes to its feature,
# and in every leaf each feature gets its share of the variation of the leaf
# model's fitted values; the total is normalized to 1.
importances = model.feature_importances_
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(X.columns, importances)
ax.set_ylabel("feature_importances_")
plt.tight_layout()
plt.show()

# %%
# Extrapolation guard. A linear leaf keeps growing beyond the data it was fitted
# on; ``extrapolation="clip"`` first moves every feature into the leaf's
# training box. Training rows are unchanged, an absurd row stays in range.
absurd = X_test.iloc[:1] * 100
print("none:", model.predict(absurd)[0])
model.set_params(extrapolation="clip")
print("clip:", model.predict(absurd)[0])
print(np.array_equal(model.predict(X_train),
                     model.set_params(extrapolation="none").predict(X_train)))

# %%
# Deployment: one SQL ``CASE`` expression, run here by SQLite from the
# standard library, reproduces ``predict`` on the test rows.
db = sqlite3.connect(":memory:")
X_test.to_sql("patients", db, index=False)
sql = export_sql(model, table="patients")
print(sql)
from_sql = np.array([row[0] for row in db.execute(sql)])
print("largest difference:", np.max(np.abs(from_sql - model.predict(X_test))))

# %%
# And a Python function that needs no library at all.
source = export_python(model, function_name="progression")
namespace = {}
exec(source, namespace)
from_python = [namespace["progression"](row) for row in X_test.to_numpy().tolist()]
print(from_python == list(model.predict(X_test)))
