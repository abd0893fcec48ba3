"""Threshold pools and feature bins, computed once per fit from all rows."""

import numpy as np


def repeated_quantile(values, weights, levels):
    """``numpy.quantile(np.repeat(values, weights), levels, method="linear")``.

    Computed without materializing the repetition, with numpy's own index and
    interpolation arithmetic, so that for integer weights the result is
    bitwise that of the repeated data.  Non-integer weights generalize it: a
    row of weight ``w`` occupies a stretch of length ``w`` of the sorted
    sample, whose total length is ``sum(weights)``.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Sorted ascending.
    weights : ndarray of shape (n,)
        Positive weights of ``values``.
    levels : ndarray of float
        Quantile levels in [0, 1].

    Returns
    -------
    quantiles : ndarray of float64, same shape as ``levels``
    """
    cum = np.cumsum(weights)
    total = cum[-1]
    if total <= 1:
        # The repeated sample is one position long and holds the smallest
        # value (the limit of the squeeze towards it as the total falls to 1).
        return np.full(np.shape(levels), values[0], dtype=np.float64)
    virtual = (total - 1) * levels
    previous = np.floor(virtual)
    above = virtual >= total - 1
    below = virtual < 0
    gamma = virtual - previous
    # Position k of the repeated sample holds the first value whose
    # cumulative weight exceeds k.
    last = values.shape[0] - 1
    lo = np.minimum(np.searchsorted(cum, previous, side="right"), last)
    hi = np.minimum(np.searchsorted(cum, previous + 1, side="right"), last)
    lo = np.where(above, last, np.where(below, 0, lo))
    hi = np.where(above, last, np.where(below, 0, hi))
    a, b = values[lo], values[hi]
    diff = b - a
    out = a + diff * gamma
    upper = gamma >= 0.5
    out[upper] = (b - diff * (1 - gamma))[upper]
    return out


def threshold_pool(x, n_thresholds, strategy="quantile", sample_weight=None):
    """Candidate thresholds of one feature, sorted and unique.

    Parameters
    ----------
    x : ndarray of shape (n_samples,)
        The feature's training values (no NaN: missing rows are left out by
        the caller).
    n_thresholds : int or None
        ``T``; None enumerates every midpoint between consecutive distinct
        values.
    strategy : {"quantile", "uniform"}
        With more than ``T + 1`` distinct values: ``numpy.quantile`` at
        ``k / (T + 1)``, k = 1..T (linear interpolation, de-duplicated), or
        the centres of ``T`` equal-width bins over ``[min, max]``.  With at
        most ``T + 1`` distinct values both use all midpoints.
    sample_weight : ndarray of shape (n_samples,), optional
        Positive row weights.  The quantiles are those of the data in which
        every row is repeated as often as its weight says (for integer
        weights bitwise equal to ``numpy.quantile`` of the repeated data).

    Returns
    -------
    thresholds : ndarray of float64
    """
    if n_thresholds is not None:
        # A Python int: in a numpy integer's own dtype T + 1 wraps around at
        # its maximum (np.uint8(255) + 1 == 0), which emptied the pool.
        n_thresholds = int(n_thresholds)
    if sample_weight is None:
        # One sort gives the distinct values and their counts: the quantiles
        # of the data are those of its distinct values repeated as often
        # (bitwise, see repeated_quantile), so no second pass over x.
        ordered = np.sort(x)
        first = np.empty(ordered.shape[0], dtype=bool)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        values = ordered[first]
    else:
        values, inverse = np.unique(x, return_inverse=True)
    if values.shape[0] < 2:
        return np.empty(0, dtype=np.float64)
    if n_thresholds is None or values.shape[0] <= n_thresholds + 1:
        with np.errstate(over="ignore"):
            mid = (values[:-1] + values[1:]) / 2.0
        # (their sum overflows near the float64 maximum: halve first there)
        over = ~np.isfinite(mid)
        mid[over] = values[:-1][over] / 2.0 + values[1:][over] / 2.0
        # Guard against midpoints that round onto the upper value (adjacent
        # floats): such a threshold would not separate the two values.
        return np.unique(np.where(mid < values[1:], mid, values[:-1]))
    if strategy == "quantile":
        levels = np.arange(1, n_thresholds + 1) / (n_thresholds + 1)
        if sample_weight is None:
            weights = np.diff(np.flatnonzero(np.r_[first, True]))
        else:
            weights = np.bincount(inverse.ravel(), weights=sample_weight,
                                  minlength=values.shape[0])
        # + 0.0: a zero threshold is +0, whichever zero the data held there
        # (numpy's quantile gave either sign, as its partition happened to
        # order -0.0 and 0.0).
        return np.unique(repeated_quantile(values, weights, levels)) + 0.0
    # Near the float64 maximum, max - min and the sums of two edges
    # overflow: the pool is computed at a power-of-two sixteenth (exact) and
    # scaled back.
    shrink = 16.0 if max(abs(values[0]), abs(values[-1])) > 2.0 ** 1019 else 1.0
    lo, hi = values[0] / shrink, values[-1] / shrink
    step = (hi - lo) / n_thresholds
    edges = lo + step * np.arange(n_thresholds + 1)
    # Centre of each bin as the mean of its two edges (the reference's
    # arithmetic, so pools agree to the last bit).
    return np.unique((edges[:-1] + edges[1:]) / 2.0) * shrink


def bin_features(X, thresholds):
    """Bin index of every value: the number of thresholds strictly below it.

    ``X[i, f] <= thresholds[f][j]`` holds exactly when ``bins[i, f] <= j``.

    Returns
    -------
    bins : ndarray of shape (n_samples, n_features), int32
    order : ndarray of shape (n_features, n_samples), int32
        Rows sorted by each feature's bin, ties by row index.
    n_bins : ndarray of shape (n_features,), int32
    """
    n_samples, n_features = X.shape
    bins = np.empty((n_samples, n_features), dtype=np.int32)
    order = np.empty((n_features, n_samples), dtype=np.int32)
    for f, thr in enumerate(thresholds):
        bins[:, f] = np.searchsorted(thr, X[:, f], side="left")
        order[f] = np.argsort(bins[:, f], kind="stable")
    n_bins = np.array([len(t) + 1 for t in thresholds], dtype=np.int32)
    return bins, order, n_bins
