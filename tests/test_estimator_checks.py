"""scikit-learn's estimator contract."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from clarytree import (
    CholeskyTreeRegressor,
    CholeskyTreeRegressorCV,
    CLARITreeRegressor,
    CLARITreeRegressorCV,
)


@parametrize_with_checks(
    [CholeskyTreeRegressor(max_depth=3), CLARITreeRegressor(max_depth=3),
     CLARITreeRegressor(max_depth=2, leaf_model="constant"),
     # The CV estimators, on small grids (the contract, not the search).
     CLARITreeRegressorCV(max_depth=2, leaf_penalties=[0.1, 0.01], ridge_alphas=[1e-3],
                          cv=2),
     CholeskyTreeRegressorCV(max_depth=2, leaf_penalties=[0.1, 0.01],
                             ridge_alphas=[1e-3, 1e-2], cv=2)],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_tags_say_what_the_estimators_take():
    # NaN, text and categorical columns are all taken directly (the
    # preparation splits on levels), so the tags say so; each tag is backed
    # by a fit that uses it.
    import numpy as np

    rng = np.random.default_rng(0)
    X = np.empty((60, 2), dtype=object)
    X[:, 0] = rng.normal(size=60)
    X[:, 1] = rng.choice(["red", "blue"], 60)
    X[::7, 0] = np.nan
    y = np.where(X[:, 1] == "red", 1.0, -1.0)
    for cls in (CholeskyTreeRegressor, CLARITreeRegressor):
        tags = cls().__sklearn_tags__().input_tags
        assert tags.allow_nan and tags.string and tags.categorical
        model = cls(max_depth=1, categorical_features=[1]).fit(X, y)
        assert model.score(X, y) == 1.0
