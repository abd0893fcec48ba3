"""The one place that touches private scikit-learn names, each with a fallback.

clarytree follows scikit-learn's estimator API and reuses its parameter
validation, which lives in private modules (``sklearn.utils._param_validation``,
``sklearn.base._fit_context``, ``BaseEstimator._validate_params``). Model-tree
packages have broken on exactly such names when scikit-learn moved them; here
a move costs the fallback below, not ``import clarytree``.

Public names of this module (used by the estimators):

``Interval``, ``StrOptions``, ``RealNotInt``
    Parameter constraints for ``_parameter_constraints`` dicts (``RealNotInt``:
    the ``type`` of an ``Interval`` of floats that excludes ints).
``InvalidParameterError``
    Raised for a parameter outside its constraints (a ``ValueError`` and a
    ``TypeError``).
``fit_context(prefer_skip_nested_validation=...)``
    Decorator of ``fit``: validates the constructor parameters first.
``validate_params(estimator)``
    Validates ``estimator.get_params()`` against its ``_parameter_constraints``.

``scorer_accepts_sample_weight(scorer)``
    Whether a scorer takes ``sample_weight`` (``GridSearchCV`` passes the fit's
    weights to the scorer only then).
``scorers_refusing_sample_weight(scorer)``
    The metrics of a (multi-metric) scorer that do not take ``sample_weight``
    (``GridSearchCV`` warns for each).

``SKLEARN_PRIVATE`` says whether the scikit-learn implementations were found
(``True``) or the fallbacks are in use.
"""

import functools
import numbers

import numpy as np

__all__ = [
    "SKLEARN_PRIVATE",
    "Interval",
    "InvalidParameterError",
    "RealNotInt",
    "StrOptions",
    "fit_context",
    "validate_params",
]


# --------------------------------------------------------------------------
# Fallbacks: a small validator for the constraints clarytree uses
# --------------------------------------------------------------------------


class _InvalidParameterError(ValueError, TypeError):
    """A constructor parameter outside its constraints."""


class _Interval:
    """Numbers of ``type`` (``numbers.Integral`` or ``numbers.Real``) in an interval.

    ``closed`` is ``"left"``, ``"right"``, ``"both"`` or ``"neither"``; a bound of
    None is unbounded.
    """

    def __init__(self, type, left, right, *, closed):
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be left, right, both or neither, got {closed!r}")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def is_satisfied_by(self, value):
        if not isinstance(value, self.type):  # as scikit-learn: bool counts as int
            return False
        if isinstance(value, numbers.Real) and np.isnan(value):
            return False
        # An unbounded end is open: infinities are outside.
        if value in (np.inf, -np.inf) and (self.left is None or self.right is None):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right
                                      and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self):
        kind = "an int" if issubclass(self.type, numbers.Integral) else "a float"
        lo = "-inf" if self.left is None else self.left
        hi = "inf" if self.right is None else self.right
        lb = "[" if self.closed in ("left", "both") and self.left is not None else "("
        rb = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{kind} in the range {lb}{lo}, {hi}{rb}"


class _RealNotInt(numbers.Real):
    """Reals that are not ints (an ``Interval`` type: 0.5 but not 1)."""


_RealNotInt.register(float)


class _StrOptions:
    """One of a set of strings."""

    def __init__(self, options):
        self.options = set(options)

    def is_satisfied_by(self, value):
        return isinstance(value, str) and value in self.options

    def __str__(self):
        return "a str among {" + ", ".join(repr(o) for o in sorted(self.options)) + "}"


def _satisfies(constraint, value):
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    if constraint is callable:
        return callable(value)
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "verbose":
        return isinstance(value, (bool, np.bool_)) or (
            isinstance(value, numbers.Integral) and value >= 0)
    if constraint == "random_state":
        return (value is None or isinstance(value, np.random.RandomState)
                or (isinstance(value, numbers.Integral) and 0 <= value < 2**32))
    if constraint == "array-like":
        return (hasattr(value, "__len__") or hasattr(value, "shape")
                or hasattr(value, "__array__")) and not np.isscalar(value)
    if hasattr(constraint, "is_satisfied_by"):
        return constraint.is_satisfied_by(value)
    raise ValueError(f"unknown parameter constraint {constraint!r}")


def _describe(constraint):
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if isinstance(constraint, type):
        return constraint.__name__
    return str(constraint)


def _validate_constraints(constraints, params, caller_name):
    for name, value in params.items():
        if name not in constraints or constraints[name] == "no_validation":
            continue
        options = constraints[name]
        if any(_satisfies(c, value) for c in options):
            continue
        described = [_describe(c) for c in options]
        raise _InvalidParameterError(
            f"The {name!r} parameter of {caller_name} must be "
            f"{' or '.join(described)}. Got {value!r} instead.")


def _fallback_validate_params(estimator):
    _validate_constraints(estimator._parameter_constraints, estimator.get_params(deep=False),
                          type(estimator).__name__)


def _fallback_fit_context(*, prefer_skip_nested_validation):
    del prefer_skip_nested_validation  # nothing nested to skip without scikit-learn's config

    def decorator(fit_method):
        @functools.wraps(fit_method)
        def wrapper(estimator, *args, **kwargs):
            validate_params(estimator)
            return fit_method(estimator, *args, **kwargs)

        return wrapper

    return decorator


# --------------------------------------------------------------------------
# scikit-learn's own, when its private names are where we expect them
# --------------------------------------------------------------------------

try:
    from sklearn.utils._param_validation import (
        Interval,
        InvalidParameterError,
        RealNotInt,
        StrOptions,
    )
except ImportError:  # pragma: no cover - depends on the scikit-learn release
    InvalidParameterError, Interval, StrOptions = _InvalidParameterError, _Interval, _StrOptions
    RealNotInt = _RealNotInt
    _HAVE_CONSTRAINTS = False
else:
    _HAVE_CONSTRAINTS = True

try:
    from sklearn.base import _fit_context
except ImportError:  # pragma: no cover - depends on the scikit-learn release
    _fit_context = None

SKLEARN_PRIVATE = _HAVE_CONSTRAINTS and _fit_context is not None


def validate_params(estimator):
    """Check the constructor parameters of ``estimator`` against its constraints.

    Uses ``BaseEstimator._validate_params`` when scikit-learn provides it and
    the constraints are scikit-learn's, else this module's validator.

    Raises
    ------
    InvalidParameterError
        Naming the parameter, what it must be, and the value given.
    """
    method = getattr(estimator, "_validate_params", None)
    if _HAVE_CONSTRAINTS and callable(method):
        method()
    else:
        _fallback_validate_params(estimator)


def fit_context(*, prefer_skip_nested_validation):
    """Decorator of ``fit`` methods: validate the parameters, then fit.

    scikit-learn's ``_fit_context`` when available (it also skips nested
    validation inside the fit), else a decorator that only validates.
    """
    if SKLEARN_PRIVATE:
        return _fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)
    return _fallback_fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)


def scorer_accepts_sample_weight(scorer):
    """Whether ``scorer`` (from ``check_scoring``, or a plain callable) takes
    ``sample_weight``; several metrics: whether any of them does.

    scikit-learn's scorers answer ``_accept_sample_weight()``; older releases
    lack it, and their scorer objects are asked through the metric they wrap
    (``_score_func``), a passthrough scorer through its estimator's ``score``.
    """
    import inspect

    method = getattr(scorer, "_accept_sample_weight", None)
    if callable(method):
        return bool(method())
    scorers = getattr(scorer, "_scorers", None)
    if isinstance(scorers, dict):
        return any(scorer_accepts_sample_weight(s) for s in scorers.values())
    for target in (getattr(scorer, "_score_func", None),
                   getattr(getattr(scorer, "_estimator", None), "score", None), scorer):
        if callable(target):
            try:
                return "sample_weight" in inspect.signature(target).parameters
            except (TypeError, ValueError):    # pragma: no cover - builtins
                return False
    return False


def scorers_refusing_sample_weight(scorer):
    """The metrics of ``scorer`` that do not take ``sample_weight``, as
    ``(name, scorer)`` pairs (name None for a single metric)."""
    scorers = getattr(scorer, "_scorers", None)
    if isinstance(scorers, dict):
        return [(name, s) for name, s in scorers.items() if not scorer_accepts_sample_weight(s)]
    return [] if scorer_accepts_sample_weight(scorer) else [(None, scorer)]
