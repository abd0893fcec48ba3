"""The splitter's statistics: the search's grouped sums against row-by-row sums."""

import numpy as np
import pytest
from clarytree._builder import BuildContext
from clarytree._criterion import ConstantCriterion, RidgeCriterion
from clarytree._splitter import Splitter, _bin_sums_kernels

from clarytree._classes import _assemble_builder
from clarytree._thresholds import bin_features, threshold_pool

U = np.finfo(np.float64).eps / 2


def problem(n, seed, leaf_model="linear", n_thresholds=20, swept=True):
    """Three pooled features, a binary one and one swept (> 256 bins) or pooled."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 3] = rng.integers(0, 2, size=n)
    y = np.where(X[:, 0] > 0.2, 2 * X[:, 1], 1 - X[:, 2]) + 0.5 * X[:, 3] \
        + 0.3 * rng.normal(size=n)
    pools = [threshold_pool(X[:, f], n_thresholds, "quantile") for f in range(4)]
    pools.append(threshold_pool(X[:, 4], 300 if swept else n_thresholds, "quantile"))
    bins, order, n_bins = bin_features(X, pools)
    if leaf_model == "linear":
        Z = (X[:, [0, 1, 2, 4]] - X[:, [0, 1, 2, 4]].mean(0)) / X[:, [0, 1, 2, 4]].std(0)
        W = np.column_stack([np.ones(n), Z, y - y.mean()])
        ridge = np.full(W.shape[1] - 1, 1e-3 * n)
        ridge[0] = 1e-12
        make = RidgeCriterion
    else:
        W = np.column_stack([np.ones(n), y - y.mean()])
        ridge = np.ones(1)
        make = ConstantCriterion
    return make, np.ascontiguousarray(W), ridge, bins, order, n_bins


@pytest.mark.parametrize(("start", "end"), [(0, 4500), (0, 100), (1234, 3900), (4000, 4500)])
def test_grouped_sums_are_the_row_by_row_sums_up_to_rounding(start, end):
    """Same keys; every total and bin within the summation error bound.

    4500 rows take three gather blocks; the bound is ``(n_b + 2) u`` times
    the bin's sum of |products| (from the same splitter on ``|W|``), for
    each of the two routes.
    """
    make, W, ridge, bins, order, n_bins = problem(4500, 0)
    splitter = Splitter(bins, order, n_bins, 5, make(W, ridge))
    absolute = Splitter(bins, order.copy(), n_bins, 5, make(np.abs(W), ridge))
    assert splitter.n_swept == 1 and splitter.hist_size > 0
    t_exact, h_exact, k_exact = splitter._node_stats(start, end, True)
    t_group, h_group, k_group = splitter._node_stats(start, end, False)
    t_abs, h_abs, _ = absolute._node_stats(start, end, True)
    np.testing.assert_array_equal(k_group, k_exact)
    n_b = np.maximum(h_exact[:, :1], 1.0)     # rows per bin: packed entry 0
    assert np.all(np.abs(h_group - h_exact) <= 2 * (n_b + 2) * U * h_abs)
    assert np.all(np.abs(t_group - t_exact) <= 2 * (end - start + 2) * U * t_abs)
    # Counts are sums of ones: exact either way.
    np.testing.assert_array_equal(h_group[:, 0], h_exact[:, 0])
    if end - start >= 1000:
        assert not np.array_equal(h_group, h_exact), "the grouped route did not run"


def wide_problem(n, q, seed, integer=False):
    """A splitter on ``q - 2`` regressors with five pooled features (no sweep)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    pools = [threshold_pool(X[:, f], 20, "quantile") for f in range(5)]
    bins, order, n_bins = bin_features(X, pools)
    if integer:
        # Small integers: every product and every sum is exact in float64.
        Z = rng.integers(-3, 4, size=(n, q - 2)).astype(float)
        y = rng.integers(-5, 6, size=n).astype(float)
    else:
        Z = rng.normal(size=(n, q - 2))
        y = Z[:, 0] - Z[:, 1] + rng.normal(size=n)
    W = np.ascontiguousarray(np.column_stack([np.ones(n), Z, y]))
    ridge = np.full(q - 1, 1e-3 * n)
    return Splitter(bins, order, n_bins, 5, RidgeCriterion(W, ridge))


@pytest.mark.parametrize("q", [12, 20])
@pytest.mark.parametrize(("start", "end"), [(0, 4500), (1234, 3900), (4000, 4500)])
def test_wide_blocks_by_column_ranges_give_the_feature_by_feature_bits(q, start, end):
    """Summing a block's bins one column range at a time across all features
    (wide rows) adds the same terms in the same order as feature by feature."""
    splitter = wide_problem(4500, q, 4)
    assert splitter.n_stats > 64            # more than one column range
    by_feature = splitter._node_stats(start, end, False, wide_min=10**12)
    by_range = splitter._node_stats(start, end, False, wide_min=1)
    for a, b in zip(by_feature, by_range, strict=True):
        np.testing.assert_array_equal(a, b)
    # Full blocks of 2048 rows (1 MB of statistics or more) take the column
    # ranges by default; narrow rows (q = 6: 24 doubles a row) never do.
    assert splitter.wide_min <= 2048 * ((splitter.n_stats + 7) // 8 * 8)
    assert wide_problem(300, 6, 4).wide_min > 300 * 24
    assert wide_problem(4500, 6, 4).wide_min > 2048 * 24


@pytest.mark.parametrize("q", [6, 12, 20])
@pytest.mark.parametrize(("start", "end"), [(0, 4500), (1234, 3900), (4000, 4500)])
def test_exact_sums_by_column_ranges_give_the_row_by_row_bits(q, start, end):
    """The exact (committed-tree) sums of wide models go column range by
    column range over blocks of rows; every element still adds the rows one
    at a time in order, so the bits are those of the row-by-row sums, also
    beside a swept feature (no bins) and across several blocks."""
    rng = np.random.default_rng(q)
    n = 4500
    X = rng.normal(size=(n, 4))
    X[:, 2] = np.round(X[:, 2], 1)
    pools = [threshold_pool(X[:, 0], 20, "quantile"), threshold_pool(X[:, 1], None),
             threshold_pool(X[:, 2], 7, "uniform"), threshold_pool(X[:, 3], 3, "quantile")]
    bins, order, n_bins = bin_features(X, pools)
    Z = rng.normal(size=(n, q - 2)) * rng.uniform(0.1, 3.0, size=(n, 1))
    W = np.ascontiguousarray(np.column_stack([np.ones(n), Z, Z[:, 0] + rng.normal(size=n)]))
    splitter = Splitter(bins, order, n_bins, 5, RidgeCriterion(W, np.full(q - 1, 1e-3 * n)),
                        64)
    assert splitter.n_swept == 1
    by_rows = splitter._node_stats(start, end, True, exact_ranges_min=10**15)
    by_ranges = splitter._node_stats(start, end, True, exact_ranges_min=1)
    for a, b in zip(by_rows, by_ranges, strict=True):
        np.testing.assert_array_equal(a, b)
    assert by_rows[1].any()
    # Only histograms beyond a large cache take the ranges by default.
    assert splitter.hist_size * splitter.n_stats < splitter.exact_ranges_min


@pytest.mark.parametrize("q", [6, 12, 20])
@pytest.mark.parametrize("wide_min", [None, 1])
def test_grouped_sums_of_exact_products_are_the_row_by_row_bits(q, wide_min):
    """With small-integer statistics no sum rounds: the grouped routes (and
    their vectorized row products, q <= 16 or not) must give the exact sums."""
    splitter = wide_problem(4500, q, 5, integer=True)
    exact = splitter._node_stats(0, 4500, True)
    grouped = splitter._node_stats(0, 4500, False, wide_min=wide_min)
    for a, b in zip(exact, grouped, strict=True):
        np.testing.assert_array_equal(a, b)


def test_without_grouping_and_for_constant_leaves_the_sums_are_bitwise_equal():
    make, W, ridge, bins, order, n_bins = problem(3000, 1)
    plain = Splitter(bins, order, n_bins, 5, make(W, ridge), grouped_sums=False)
    for a, b in zip(plain._node_stats(0, 3000, True), plain._node_stats(0, 3000, False),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    make, W, ridge, bins, order, n_bins = problem(3000, 1, "constant")
    const = Splitter(bins, order, n_bins, 1, make(W, ridge))
    for a, b in zip(const._node_stats(0, 3000, True), const._node_stats(0, 3000, False),
                    strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("lookahead", [0, 1, 2])
@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
def test_grouped_search_sums_leave_the_fitted_tree_bitwise_unchanged(lookahead, leaf_model):
    """The committed tree's statistics are summed row by row either way.

    The search's scores may differ in rounding, which the tie tolerance
    absorbs, so the trees, node objectives, coefficients and the objective
    are the same bits with and without grouped search sums.
    """
    out = []
    for grouped in (True, False):
        # Depth-2 lookahead on few thresholds, all by histogram (carried sums).
        make, W, ridge, bins, order, n_bins = (
            problem(1500, 2, leaf_model, 6, False) if lookahead == 2
            else problem(2000, 2, leaf_model))
        crit = make(W, ridge)
        msl = 20 if leaf_model == "linear" else 1
        splitter = Splitter(bins, order, n_bins, msl, crit, grouped_sums=grouped)
        ctx = BuildContext(splitter, crit, 3, 1e-3 * float(W[:, -1] @ W[:, -1]), msl)
        out.append(_assemble_builder(ctx, lookahead, 3).build())
    (obj_a, nodes_a), (obj_b, nodes_b) = out
    assert nodes_a["feature"].size > 3
    assert obj_a == obj_b
    for name in nodes_a:
        np.testing.assert_array_equal(nodes_a[name], nodes_b[name], err_msg=name)


@pytest.mark.parametrize("width", [np.uint8, np.uint16])
def test_narrow_bins_give_the_int32_statistics_and_splits(width):
    """uint8 / uint16 bins are read as the int32 ones: same sums, same tree."""
    make, W, ridge, bins, order, n_bins = problem(2000, 3, swept=width is np.uint16)
    if width is np.uint8:
        assert n_bins.max() <= 256
    assert np.array_equal(bins.astype(width), bins)
    results = []
    for b in (bins, bins.astype(width)):
        crit = make(W, ridge)
        splitter = Splitter(b, order.copy(), n_bins, 5, crit)
        assert splitter.bin_width == b.dtype.itemsize
        stats = splitter._node_stats(0, 2000, True)
        ctx = BuildContext(splitter, crit, 4, 1e-3, 5)
        objective, nodes = _assemble_builder(ctx, 1, 4).build()
        results.append((stats, objective, nodes))
    (s32, o32, n32), (s8, o8, n8) = results
    for a, b in zip(s32, s8, strict=True):
        np.testing.assert_array_equal(a, b)
    assert o32 == o8
    for key in n32:
        np.testing.assert_array_equal(n32[key], n8[key], err_msg=key)


def test_bins_dtype_and_width_are_checked():
    make, W, ridge, bins, order, n_bins = problem(300, 1, swept=True)
    crit = make(W, ridge)
    with pytest.raises(TypeError, match="uint8, uint16 or int32"):
        Splitter(bins.astype(np.int64), order, n_bins, 5, crit)
    assert n_bins.max() > 256
    with pytest.raises(ValueError, match="at most 256 bins"):
        Splitter(bins.astype(np.uint8), order, n_bins, 5, crit)


@pytest.mark.parametrize("S", [8, 16, 48, 56, 80, 96, 104, 160])
def test_every_bin_sums_kernel_adds_rows_in_order_like_numpy(S):
    """Each vector kernel of the search sums (the ones this CPU runs) gives
    the bits of adding a bin's rows one at a time from zero, then into the
    bin, element by element; columns past n_stats and outside the range are
    left alone.  Magnitudes spread over 1e±8 make any other order show."""
    rng = np.random.default_rng(S)
    m, nb = 300, 7
    U = rng.normal(size=(m, S)) * 10.0 ** rng.integers(-8, 9, size=(m, S))
    perm = rng.permutation(m).astype(np.int32)
    ends = np.sort(rng.choice(np.arange(1, m), nb - 1, replace=False))
    ends = np.r_[ends[:2], ends[1], ends[2:]].astype(np.intp)   # an empty bin
    ends[-1] = m
    for ns in sorted({S, S - 3, max(1, S - 9)}):
        for c0, c1 in sorted({(0, S), (8, S), (0, 8), (8 * (S // 16), S)}):
            if c0 >= c1:
                continue
            hist = rng.normal(size=(len(ends), ns))
            expected = hist.copy()
            first = 0
            for b, last in enumerate(ends):
                acc = np.zeros(S)
                for j in range(first, last):
                    acc = acc + U[perm[j]]
                hi = min(c1, ns)
                if last > first and hi > c0:
                    expected[b, c0:hi] = expected[b, c0:hi] + acc[c0:hi]
                first = last
            results = _bin_sums_kernels(hist, U, perm, ends, c0, c1)
            assert "plain" in results
            for name, got in results.items():
                np.testing.assert_array_equal(got, expected, err_msg=f"{name} S={S} ns={ns}")
