"""Threshold pools and feature bins, computed once per fit from all rows."""

import numpy as np


def threshold_pool(x, n_thresholds, strategy="quantile"):
    """Candidate thresholds of one feature, sorted and unique.

    Parameters
    ----------
    x : ndarray of shape (n_samples,)
        The feature's training values.
    n_thresholds : int or None
        ``T``; None enumerates every midpoint between consecutive distinct
        values.
    strategy : {"quantile", "uniform"}
        With more than ``T + 1`` distinct values: ``numpy.quantile`` at
        ``k / (T + 1)``, k = 1..T (linear interpolation, de-duplicated), or
        the centres of ``T`` equal-width bins over ``[min, max]``.  With at
        most ``T + 1`` distinct values both use all midpoints.

    Returns
    -------
    thresholds : ndarray of float64
    """
    values = np.unique(x)
    if values.shape[0] < 2:
        return np.empty(0, dtype=np.float64)
    if n_thresholds is None or values.shape[0] <= n_thresholds + 1:
        mid = (values[:-1] + values[1:]) / 2.0
        # Guard against midpoints that round onto the upper value (adjacent
        # floats): such a threshold would not separate the two values.
        return np.unique(np.where(mid < values[1:], mid, values[:-1]))
    if strategy == "quantile":
        levels = np.arange(1, n_thresholds + 1) / (n_thresholds + 1)
        return np.unique(np.quantile(x, levels, method="linear"))
    lo, hi = values[0], values[-1]
    step = (hi - lo) / n_thresholds
    edges = lo + step * np.arange(n_thresholds + 1)
    # Centre of each bin as the mean of its two edges (the reference's
    # arithmetic, so pools agree to the last bit).
    return np.unique((edges[:-1] + edges[1:]) / 2.0)


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
