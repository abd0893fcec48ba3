"""
===================================================
A piecewise-linear model of real data, leaf by leaf
===================================================

scikit-learn ships the diabetes data set (442 patients, 10 standardized
measurements, disease progression after one year), so this example needs no
download. A depth-2 CLARITree is four linear models selected by at most two
tests. We compare it with a linear model and with constant-leaf trees, then
read it as text, as a table, and as a plot.
"""

# %%
import matplotlib.pyplot as plt
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeRegressor

from clarytree import CLARITreeRegressor, export_text, leaf_table, plot_partition, plot_tree

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

model = CLARITreeRegressor(max_depth=2, leaf_penalty=1e-2, ridge_alpha=1e-3)
model.fit(X_train, y_train)

for name, est in [("linear regression", LinearRegression()),
                  ("CART depth 2", DecisionTreeRegressor(max_depth=2, random_state=0)),
                  ("CART depth 4", DecisionTreeRegressor(max_depth=4, random_state=0)),
                  ("CLARITree depth 2", model)]:
    est.fit(X_train, y_train)
    print(f"{name:18s} test R2 = {est.score(X_test, y_test):.3f}")

# %%
# The tree as rules. Thresholds are exact; coefficients are rounded to three
# significant digits here.
print(export_text(model, decimals=3))

# %%
# The same leaves as a table: one row per leaf, the rule that selects it, and
# its intercept and coefficients in the units of the data. This is everything
# needed to reimplement the model elsewhere.
table = leaf_table(model)
table.round(2)

# %%
fig, ax = plt.subplots(figsize=(11, 6))
plot_tree(model, ax=ax, decimals=3)
plt.show()

# %%
# The fitted surface over the two features the tree splits on, the other
# features held at their median: four planes, one per leaf.
split_features = sorted({X.columns[f] for f in model.tree_.feature if f >= 0})
fig, ax = plt.subplots(figsize=(6, 5))
plot_partition(model, X_train, y_train, features=(split_features * 2)[:2], ax=ax)
plt.show()
