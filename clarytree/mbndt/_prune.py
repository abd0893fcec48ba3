"""Train-path pruning of a trained MBNDT and conversion to a :class:`MultiwayTree`.

Pruning (paper Sec. IV-C): a branch survives when at least one training row
takes it under hard routing; an input that would take a removed branch goes to
the nearest surviving branch in threshold order (the lower one on a tie).  A
node left with a single surviving branch makes no decision and is collapsed
into its child, so path lengths count real tests only.

Conversion: at a numeric node the pruned hard routing is a non-decreasing step
function of the node score (masked cumulative-logit probabilities have
monotone likelihood ratios), so it is fully described by one cut point per
pair of adjacent surviving branches.  The cut is located by bisection on the
actual masked-argmax routing (not at the learned thresholds, which it differs
from once masks are uneven or ``B >= 3``), mapped back to raw units through
the inverse of the fitted scaler, and finally clipped between the raw values
of the training rows on either side, so that the exported tree reproduces the
torch routing exactly on every training row.
"""

import numpy as np
from scipy.special import expit

from .._tree import TREE_UNDEFINED
from ._preprocess import numeric_forward, numeric_inverse, onehot_levels, target_encoding_table


def _redirect_table(used, n_branches):
    used = np.asarray(sorted(used))
    table = np.empty(n_branches, dtype=np.intp)
    for b in range(n_branches):
        table[b] = used[np.argmin(np.abs(used - b))]  # argmin picks the lower on ties
    return table


def used_branches(branches, depth, n_branches, offsets):
    """Set of branches taken at every internal node by the rows of ``branches`` (n, N)."""
    n = branches.shape[0]
    used = [set() for _ in range(branches.shape[1])]
    idx = np.zeros(n, dtype=np.intp)
    for d in range(depth):
        j = offsets[d] + idx
        b = branches[np.arange(n), j]
        for jj, bb in set(zip(j.tolist(), b.tolist(), strict=True)):
            used[jj].add(bb)
        idx = idx * n_branches + b
    return used, idx


def route_numpy(z, thr, mask_logit, tau):
    """Hard branch of one node for the values ``z`` (float64 numpy reference).

    ``thr`` are the ``B - 1`` ordered thresholds and ``mask_logit`` the ``B``
    branch-mask logits of the node.  Mirrors ``MBNDTModule.routing_probs``
    (``_model.py``) in numpy, so exporting needs no torch.
    """
    z = np.asarray(z, dtype=np.float64)
    c = expit((thr[None, :] - z[:, None]) / tau)
    n = z.shape[0]
    c = np.concatenate([np.zeros((n, 1)), c, np.ones((n, 1))], axis=1)
    pi = np.clip(np.diff(c, axis=1), 0.0, None)
    q = pi * expit(mask_logit)[None, :]
    return np.argmax(q, axis=1)


def build_tree(state, branches, xt, raw, fmap, ct, column_kinds, impute_values, depth,
               n_branches, tau, leaf_value, n_features):
    """Prune the trained tree along the training paths and export it.

    Parameters
    ----------
    state : dict of ndarray
        Float64 parameters of the trained tree.
    branches : ndarray (n, N)
        Torch hard branch of every internal node for every training row.
    xt : ndarray (n, p_t)
        Preprocessed training rows (deployment transform).
    raw : ndarray (n, p)
        Raw table of the training rows.
    fmap : list
        Output of :func:`feature_map`.
    ct : ColumnTransformer
        The fitted preprocessor.
    leaf_value : callable
        Maps a leaf's raw outputs to the stored prediction.

    Returns
    -------
    MultiwayTree
    """
    from ._tree import MultiwayTree

    B = n_branches
    offsets = [0]
    for d in range(depth):
        offsets.append(offsets[-1] + B**d)
    used, _ = used_branches(branches, depth, B, offsets)
    thr = state["thr_base"][:, None] + np.cumsum(np.logaddexp(0.0, state["thr_gap"]), axis=1)
    feat = state["feat_logits"].argmax(1)
    nodes = []

    tables = {}

    def route(j, z):
        if j not in tables:
            tables[j] = _redirect_table(used[j], B)
        table = tables[j]
        return table[route_numpy(np.atleast_1d(np.asarray(z, dtype=np.float64)), thr[j],
                              state["mask_logit"][j], tau)]

    def raw_numeric(rows, c):
        x = raw[rows, c].astype(np.float64)
        return np.where(np.isnan(x), impute_values[c], x)

    def rec(d, i, rows, n_tests):
        while d < depth:
            j = offsets[d] + i
            u = sorted(used[j])
            if len(u) > 1:
                break
            d, i = d + 1, i * B + u[0]  # single surviving branch: no test here
        me = len(nodes)
        if d == depth:
            logit = state["leaf"][i]
            nodes.append({"feature": TREE_UNDEFINED, "depth": n_tests, "n_samples": rows.size,
                          "origin": i, "value": leaf_value(logit), "logit": logit})
            return me
        node = {"depth": n_tests, "n_samples": rows.size}
        nodes.append(node)
        f = int(feat[j])
        kind, c, info = fmap[f]
        node["feature"] = int(c)
        br = branches[rows, j]
        pos = {b: k for k, b in enumerate(u)}
        if kind == "num":
            node["cuts"], node["cut_gaps"] = _numeric_cuts(
                route, j, u, xt[rows, f], br, raw_numeric(rows, c),
                lambda v, p=info: numeric_inverse(ct, p, v),
                lambda v, p=info: numeric_forward(ct, p, v))
        else:
            node["categorical"] = True
            if kind == "onehot":
                cats = np.asarray([info], dtype=object)
                cat_z = np.array([1.0])
                default_z = 0.0
            else:
                cats, cat_z, default_z = target_encoding_table(ct, info)
            col = raw[rows, c]
            child = []
            for cat, zc in zip(cats, cat_z, strict=True):
                hit = col == cat
                b = int(br[hit][0]) if np.any(hit) else int(route(j, zc)[0])
                child.append(pos[b])
            if kind == "onehot":
                other = br[col != info]
                b0 = int(other[0]) if other.size else int(route(j, default_z)[0])
                # The column's other training levels all take the default
                # branch (their indicator is 0); listing them names them in the
                # rules ("c in {b, c, <other or unseen>}"), routing the same.
                rest = [v for v in onehot_levels(ct, c) if v != info]
                cats = np.asarray([info] + rest, dtype=object)
                child = child + [pos[b0]] * len(rest)
            else:
                b0 = int(route(j, default_z)[0])
            node["cat_values"], node["cat_child"], node["default"] = list(cats), child, pos[b0]
        kids = []
        for b in u:
            kids.append(rec(d + 1, i * B + b, rows[br == b], n_tests + 1))
        node["children"] = kids
        return me

    rec(0, 0, np.arange(xt.shape[0]), 0)
    return MultiwayTree(nodes, column_kinds, impute_values, n_features)


def _float_key(x):
    """An integer that orders float64 values as they compare (-0.0 as 0.0)."""
    bits = int(np.float64(x).view(np.int64))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _key_float(key):
    """The float64 of ``_float_key`` value ``key``."""
    if key >= 0:
        return float(np.int64(key).view(np.float64))
    return float(np.uint64(-key | 1 << 63).view(np.float64))


def _numeric_cuts(route, j, used, z, br, x_raw, inverse, forward=None):
    """Raw-unit cut points between consecutive surviving branches of node ``j``.

    Also returns, per cut, the largest raw training value routed below it and
    the smallest routed above (missing values as imputed): exports print a
    short decimal from that gap.  With ``forward`` (raw to score units), a
    cut that the scaler's inverse does not place exactly (a tied training
    value is a flat of a quantile transform's inverse) is found by bisection
    of the raw floats between the two sides' training values.
    """
    cuts, gaps = [], []
    for k in range(len(used) - 1):
        low, high = br <= used[k], br >= used[k + 1]
        a, b = float(z[low].max()), float(z[high].min())
        # Bisection on the pruned hard routing: largest score still routed low.
        if route(j, a)[0] <= used[k] and route(j, b)[0] > used[k]:
            for _ in range(200):
                mid = 0.5 * (a + b)
                if mid <= a or mid >= b:
                    break
                if route(j, mid)[0] <= used[k]:
                    a = mid
                else:
                    b = mid
        ideal = float(inverse(np.array([a]))[0])
        lo, hi = float(x_raw[low].max()), float(x_raw[high].min())
        cut = ideal
        if not (lo <= cut < hi):
            # Only rows within rounding distance of the boundary can disagree:
            # keep every training row on the side torch routed it to.
            cut = lo if cut < lo else 0.5 * (lo + hi)
            if not (lo <= cut < hi):
                cut = lo
        if forward is not None:
            cut = _exact_raw_cut(route, j, used[k], forward, cut, lo, hi)
        cuts.append(cut)
        gaps.append([lo, hi])
    return cuts, gaps


def _exact_raw_cut(route, j, low_branch, forward, cut, lo, hi):
    """The largest raw value in ``[lo, hi)`` routed at most to ``low_branch``.

    ``cut`` is kept when it is that value: the network routes it low and the
    next float high.  Otherwise the raw floats between ``lo`` (routed low)
    and ``hi`` (routed high) are bisected, at most 64 halvings of their
    ordered bit patterns.
    """
    def is_low(x):
        return route(j, forward(np.array([x], dtype=np.float64)))[0] <= low_branch

    if is_low(cut) and not is_low(np.nextafter(cut, np.inf)):
        return cut
    if not (is_low(lo) and not is_low(hi)):
        return cut          # the training rows themselves do not separate here
    a, b = _float_key(lo), _float_key(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if is_low(_key_float(mid)):
            a = mid
        else:
            b = mid
    return _key_float(a)
