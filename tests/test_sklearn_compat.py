"""The scikit-learn seam: private names only in _sklearn_compat, and working fallbacks."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import clarytree
from clarytree import (
    CholeskyTreeRegressor,
    CholeskyTreeRegressorCV,
    CLARITreeRegressor,
    CLARITreeRegressorCV,
)
from clarytree import _sklearn_compat as compat

PACKAGE = Path(clarytree.__file__).resolve().parent

# A private scikit-learn name: a module path or an imported name with a
# leading underscore, or a private method of an estimator base class.
_PRIVATE = re.compile(
    r"sklearn(\.\w+)*\._\w+"                       # sklearn.utils._param_validation
    r"|from\s+sklearn[\w.]*\s+import\s+[^\n]*\b_[a-z]\w*"  # from sklearn.base import _fit_context
    r"|\._validate_params\b|\._validate_data\b|\b_fit_context\b")


def _package_sources():
    files = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd"))
    assert any(p.name == "_classes.py" for p in files), PACKAGE
    return files


def test_private_sklearn_names_only_in_the_seam():
    offenders = []
    for path in _package_sources():
        if path.name == "_sklearn_compat.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _PRIVATE.search(line.split("#")[0]):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not offenders, "private scikit-learn names outside _sklearn_compat.py:\n" + \
        "\n".join(offenders)


def test_the_pattern_catches_private_imports():
    # The check above must be able to fail.
    for line in ("from sklearn.base import BaseEstimator, _fit_context",
                 "from sklearn.utils._param_validation import Interval",
                 "        self._validate_params()",
                 "import sklearn.tree._tree"):
        assert _PRIVATE.search(line), line
    for line in ("from sklearn.utils.validation import validate_data",
                 "from sklearn.base import BaseEstimator, RegressorMixin"):
        assert not _PRIVATE.search(line), line


def _fallback_constraints(constraints):
    """The same constraints built from the fallback classes."""
    out = {}
    for name, options in constraints.items():
        if options == "no_validation":
            out[name] = options
            continue
        converted = []
        for c in options:
            if hasattr(c, "closed") and hasattr(c, "left"):
                kind = compat._RealNotInt if c.type is compat.RealNotInt else c.type
                converted.append(compat._Interval(kind, c.left, c.right, closed=c.closed))
            elif hasattr(c, "options") and not isinstance(c, (str, type)):
                converted.append(compat._StrOptions(c.options))
            else:
                converted.append(c)
        out[name] = converted
    return out


_VALUES = [None, True, False, 0, 1, 2, 3, 64, 65, -1, 0.0, 0.5, 1.0, 1.5, -0.5, 1e-3,
           np.nan, np.inf, "auto", "linear", "constant", "quantile", "uniform", "gain",
           "random", "cpu", "bogus", [0, 1], np.array([True, False]), (0,),
           np.random.RandomState(0), np.int64(3), np.float64(0.25), len]


def _estimators():
    ests = [CLARITreeRegressor(), CholeskyTreeRegressor(), CLARITreeRegressorCV(),
            CholeskyTreeRegressorCV()]
    try:
        from clarytree.mbndt import MBNDTClassifier, MBNDTRegressor
    except ImportError:  # pragma: no cover
        pass
    else:
        ests += [MBNDTClassifier(), MBNDTRegressor()]
    return ests


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
def test_fallback_validator_agrees_with_scikit_learn(estimator):
    if not compat.SKLEARN_PRIVATE:
        pytest.skip("scikit-learn's validator is not available to compare with")
    constraints = type(estimator)._parameter_constraints
    fallback = _fallback_constraints(constraints)
    for name in constraints:
        for value in _VALUES:
            est = estimator.__class__(**{name: value})
            try:
                compat.validate_params(est)  # scikit-learn's
                sklearn_ok = True
            except compat.InvalidParameterError:
                sklearn_ok = False
            try:
                compat._validate_constraints(fallback, est.get_params(deep=False), "E")
                ours_ok = True
            except compat._InvalidParameterError as exc:
                assert repr(name) in str(exc)
                ours_ok = False
            assert ours_ok == sklearn_ok, (type(estimator).__name__, name, value)


def test_fallback_fit_context_validates_first():
    calls = []

    class Est:
        _parameter_constraints = {"k": [compat._Interval(int, 1, None, closed="left")]}

        def __init__(self, k):
            self.k = k

        def get_params(self, deep=True):
            return {"k": self.k}

        @compat._fallback_fit_context(prefer_skip_nested_validation=True)
        def fit(self):
            calls.append(self.k)
            return self

    Est(2).fit()
    with pytest.raises(ValueError, match="'k' parameter of Est must be an int in the range"):
        Est(0).fit()
    assert calls == [2]


def test_import_and_fit_survive_a_scikit_learn_without_the_private_names(tmp_path):
    """Simulate a release that moved _fit_context and _param_validation."""
    code = textwrap.dedent("""
        import sys
        import sklearn.base
        del sklearn.base._fit_context
        sys.modules["sklearn.utils._param_validation"] = None  # import raises ImportError
        import numpy as np
        import clarytree
        from clarytree import _sklearn_compat as compat
        assert not compat.SKLEARN_PRIVATE
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 2))
        y = np.where(X[:, 0] > 0, X[:, 1], -X[:, 1])
        model = clarytree.CLARITreeRegressor(max_depth=1).fit(X, y)
        assert model.get_n_leaves() == 2
        try:
            clarytree.CLARITreeRegressor(max_depth=-1).fit(X, y)
        except ValueError as exc:
            assert "max_depth" in str(exc), exc
        else:
            raise AssertionError("max_depth=-1 was accepted")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.stdout.strip() == "ok"


def test_scorer_accepts_sample_weight():
    from sklearn.metrics import check_scoring, make_scorer

    from clarytree import CholeskyTreeRegressor
    from clarytree._sklearn_compat import scorer_accepts_sample_weight

    tree = CholeskyTreeRegressor()

    def unweighted(y_true, y_pred):
        return 0.0

    def plain(estimator, X, y):
        return 0.0

    def weighted(estimator, X, y, sample_weight=None):
        return 0.0

    assert scorer_accepts_sample_weight(check_scoring(tree, scoring=None))     # tree.score
    assert scorer_accepts_sample_weight(check_scoring(tree, scoring="r2"))
    assert not scorer_accepts_sample_weight(make_scorer(unweighted))
    assert not scorer_accepts_sample_weight(plain)
    assert scorer_accepts_sample_weight(weighted)
