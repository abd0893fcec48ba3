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
