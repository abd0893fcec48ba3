"""scikit-learn API compliance of the MBNDT estimators (small, fast configuration)."""

import pytest

pytest.importorskip("torch")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from clarytree.mbndt import MBNDTClassifier, MBNDTRegressor  # noqa: E402

_FAST = dict(max_depth=2, n_branches=3, n_restarts=2, stage1_epochs=5, max_epochs=40,
             patience=10, random_state=0)

# No check is expected to fail.  Keys are estimator class names, values map a
# check name to the reason it is allowed to fail.
_EXPECTED_FAILURES = {}


def _expected_failed_checks(estimator):
    return _EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    [MBNDTClassifier(**_FAST), MBNDTRegressor(**_FAST)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
