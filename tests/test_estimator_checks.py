"""scikit-learn's estimator contract."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor


@parametrize_with_checks(
    [CholeskyTreeRegressor(max_depth=3), CLARITreeRegressor(max_depth=3),
     CLARITreeRegressor(max_depth=2, leaf_model="constant")],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
