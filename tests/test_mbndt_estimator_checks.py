"""scikit-learn API compliance of the MBNDT estimators (small, fast configuration)."""

import pytest

pytest.importorskip("torch")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from clarytree.mbndt import MBNDTClassifier, MBNDTRegressor  # noqa: E402

_FAST = dict(max_depth=2, n_branches=3, n_restarts=2, stage1_epochs=5, max_epochs=60,
             patience=15, random_state=0)

_EXPECTED_FAILURES = {
    # The held-out early-stopping split and the straight-through training make a
    # 2-level tree trained for a few dozen epochs on 20-30 rows a weak learner on
    # sklearn's tiny synthetic data; the accuracy bar of these checks targets
    # converged estimators.
}


def _expected_failed_checks(estimator):
    return _EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    [MBNDTClassifier(**_FAST), MBNDTRegressor(**_FAST)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
