"""Torch side of MBNDT: entmax-1.5, the level-wise B-ary tree and its hard routing.

Everything here imports torch at module level, so this module must only be
imported lazily (from ``fit``), never from ``clarytree.mbndt`` itself.

Layout. A full B-ary tree of depth D has ``N = (B**D - 1) / (B - 1)`` internal
nodes and ``L = B**D`` leaves.  Internal nodes are stored level by level: level
``d`` occupies the global indices ``[off_d, off_d + B**d)`` and node ``i`` of
level ``d`` has its children at positions ``i * B + b`` of level ``d + 1``.
Every parameter tensor carries a leading *restart* axis ``R`` so that several
random restarts train in one batched forward pass.
"""

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class _Entmax15(torch.autograd.Function):
    """Exact sort-based 1.5-entmax over the last axis (Peters et al., 2019)."""

    @staticmethod
    def forward(ctx, x):
        # entmax_{1.5}(x) = [x/2 - tau]_+^2 with tau chosen so the output sums to 1.
        x = x / 2
        x = x - x.amax(dim=-1, keepdim=True)
        xs, _ = torch.sort(x, dim=-1, descending=True)
        k = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=x.dtype)
        mean = xs.cumsum(-1) / k
        mean_sq = (xs * xs).cumsum(-1) / k
        ss = k * (mean_sq - mean * mean)
        delta = ((1 - ss) / k).clamp_min(0)
        tau = mean - delta.sqrt()
        # At least 1: a restart whose logits a huge learning rate made NaN has
        # no support (every comparison is false); its output is then NaN, its
        # validation loss NaN and its checkpoint kept, instead of an index -1
        # error that stops the other restarts too.
        support = (tau <= xs).sum(dim=-1, keepdim=True).clamp_min(1)
        tau_star = tau.gather(-1, support - 1)
        y = (x - tau_star).clamp_min(0) ** 2
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        # Jacobian of 1.5-entmax: diag(s) - s s^T / sum(s) with s = sqrt(y).
        s = y.sqrt()
        g = grad_out * s
        q = g.sum(-1, keepdim=True) / s.sum(-1, keepdim=True)
        return g - q * s


def entmax15(x):
    """1.5-entmax of ``x`` along the last axis (sparse probabilities)."""
    return _Entmax15.apply(x)


class _STEntmaxArgmax(torch.autograd.Function):
    """One-hot argmax in the forward pass, 1.5-entmax Jacobian in the backward pass.

    Equivalent to ``w + sg(onehot(argmax w) - w)`` with ``w = entmax15(x)`` (paper
    Eq. 3-4) in a single autograd node, which matters because the tree is small
    and per-operation overhead dominates training time.
    """

    @staticmethod
    def forward(ctx, x):
        _Entmax15.forward(ctx, x)  # saves the entmax output for backward
        return F.one_hot(x.argmax(-1), x.shape[-1]).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        return _Entmax15.backward(ctx, grad_out)


def st_entmax_argmax(x):
    """Straight-through hard feature choice with 1.5-entmax gradients."""
    return _STEntmaxArgmax.apply(x)


def tree_sizes(depth, n_branches):
    """Return ``(n_internal, n_leaves, level_offsets)`` of a full B-ary tree."""
    offsets = [0]
    for d in range(depth):
        offsets.append(offsets[-1] + n_branches**d)
    return offsets[-1], n_branches**depth, offsets


def _inv_softplus(x):
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 20, x, np.log(np.expm1(np.minimum(x, 20))))


class MBNDTModule(nn.Module):
    """``R`` independent MBNDT trees evaluated in one vectorized pass.

    Parameters
    ----------
    n_restarts, n_features, depth, n_branches, n_outputs : int
        Sizes of the batched model.
    tau : float
        Temperature of the cumulative-sigmoid soft binning.
    """

    def __init__(self, n_restarts, n_features, depth, n_branches, n_outputs, tau):
        super().__init__()
        self.depth = depth
        self.n_branches = n_branches
        self.tau = float(tau)
        n_int, n_leaves, offsets = tree_sizes(depth, n_branches)
        self.n_internal = n_int
        self.n_leaves = n_leaves
        self.offsets = offsets
        R, B = n_restarts, n_branches
        self.feat_logits = nn.Parameter(torch.zeros(R, n_int, n_features))
        self.thr_base = nn.Parameter(torch.zeros(R, n_int))
        self.thr_gap = nn.Parameter(torch.zeros(R, n_int, B - 1))
        self.mask_logit = nn.Parameter(torch.zeros(R, n_int, B))
        self.leaf = nn.Parameter(torch.zeros(R, n_leaves, n_outputs))

    # ------------------------------------------------------------------ parts
    def thresholds(self):
        """Ordered thresholds ``t_k = t_0 + sum_{r<=k} softplus(delta_r)``."""
        return self.thr_base.unsqueeze(-1) + torch.cumsum(F.softplus(self.thr_gap), dim=-1)

    def routing_probs(self, z):
        """Masked soft routing probabilities for node scores ``z`` of shape (R, n, N)."""
        t = self.thresholds()  # (R, N, B-1)
        c = torch.sigmoid((t.unsqueeze(1) - z.unsqueeze(-1)) / self.tau)  # (R, n, N, B-1)
        zeros = torch.zeros_like(c[..., :1])
        c = torch.cat([zeros, c, zeros + 1], dim=-1)
        pi = (c[..., 1:] - c[..., :-1]).clamp_min(0)
        q = pi * torch.sigmoid(self.mask_logit).unsqueeze(1)
        return q / q.sum(-1, keepdim=True).clamp_min(1e-30)

    def forward(self, x, need_soft=True):
        """Training forward pass (hard values, straight-through gradients).

        Parameters
        ----------
        x : Tensor of shape (n, p)
        need_soft : bool
            Also return the soft reach mass of every leaf (for the leaf budget).

        Returns
        -------
        out : Tensor (R, n, n_outputs)
            Leaf value of the hard-routed leaf for every restart and sample.
        soft_leaf : Tensor (R, n, L) or None
            Soft reach probability of every leaf under the masked soft routing.
        """
        w_st = st_entmax_argmax(self.feat_logits)  # (R, N, p), one-hot forward
        z = torch.matmul(x, w_st.transpose(1, 2))  # (R, n, N)
        p_soft = self.routing_probs(z)  # (R, n, N, B)
        hard_r = F.one_hot(p_soft.argmax(-1), self.n_branches).to(p_soft.dtype)
        r = p_soft + (hard_r - p_soft).detach()

        R, n = z.shape[0], z.shape[1]
        path = x.new_ones(R, n, 1)
        soft = x.new_ones(R, n, 1) if need_soft else None
        for d in range(self.depth):
            sl = slice(self.offsets[d], self.offsets[d + 1])
            path = (path.unsqueeze(-1) * r[:, :, sl, :]).reshape(R, n, -1)
            if need_soft:
                soft = (soft.unsqueeze(-1) * p_soft[:, :, sl, :]).reshape(R, n, -1)
        out = torch.bmm(path, self.leaf)
        return out, soft

    # ----------------------------------------------------------- hard routing
    @torch.no_grad()
    def hard_branches(self, x):
        """Exact hard branch of every node for every sample, shape (R, n, N).

        The selected feature is read off directly (no matmul with the one-hot),
        so the node score is bit-identical to the input column.
        """
        feat = self.feat_logits.argmax(-1)  # (R, N)
        z = x[:, feat].permute(1, 0, 2)  # (R, n, N)
        return self.routing_probs(z).argmax(-1)

    @torch.no_grad()
    def hard_leaves(self, x):
        """Leaf index (R, n) reached by hard routing."""
        br = self.hard_branches(x)
        cur = torch.zeros(br.shape[:2], dtype=torch.long, device=br.device)
        for d in range(self.depth):
            b = br.gather(2, (cur + self.offsets[d]).unsqueeze(-1)).squeeze(-1)
            cur = cur * self.n_branches + b
        return cur

    # ---------------------------------------------------------------- helpers
    def state_numpy(self, r):
        """Parameters of restart ``r`` as float64 numpy arrays."""
        return {
            name: getattr(self, name).detach()[r].cpu().double().numpy().copy()
            for name in ("feat_logits", "thr_base", "thr_gap", "mask_logit", "leaf")
        }

    @torch.no_grad()
    def load_numpy(self, states):
        """Set every restart from a list of :meth:`state_numpy` dictionaries."""
        for name in ("feat_logits", "thr_base", "thr_gap", "mask_logit", "leaf"):
            p = getattr(self, name)
            arr = np.stack([s[name] for s in states])
            p.copy_(torch.as_tensor(arr, dtype=p.dtype, device=p.device))


def _between_values(col, t):
    """Move thresholds that sit on a data value to the midpoint with the next value.

    On discrete columns (one-hot indicators, counts) a quantile is a data value;
    a threshold right on it makes the rows holding that value near-ties of two
    branches, whose hard routing then flips with every small update.
    """
    uniq = np.unique(col)
    k = np.searchsorted(uniq, t, side="left")
    on_value = (k < uniq.size) & (uniq[np.minimum(k, uniq.size - 1)] == t)
    nxt = np.minimum(k + 1, uniq.size - 1)
    mid = 0.5 * (uniq[np.minimum(k, uniq.size - 1)] + uniq[nxt])
    return np.where(on_value & (nxt > k), mid, t)


def _split_gains(xm, ym, wm, levels, task, n_classes):
    """Impurity decrease of a (B)-way quantile split on every feature of a node.

    ``xm`` (m, p) are the node's rows, ``ym`` their targets and ``wm`` their
    weights; the cut points of every feature are its quantiles at ``levels``.
    Returns the gains (p,) and the cut points (B - 1, p).
    """
    cuts = np.quantile(xm, levels, axis=0)  # (B-1, p)
    bins = (xm[None, :, :] > cuts[:, None, :]).sum(0)  # (m, p) in [0, B)
    n_bins = len(levels) + 1
    if task == "regression":
        stats = np.stack([wm, wm * ym, wm * ym * ym], axis=1)  # (m, 3)
    else:
        stats = np.zeros((xm.shape[0], n_classes))
        stats[np.arange(xm.shape[0]), ym] = wm
    tot = stats.sum(0)
    impurity = 0.0
    for b in range(n_bins):
        sb = (bins == b).T.astype(np.float64) @ stats  # (p, k)
        if task == "regression":
            impurity = impurity + sb[:, 2] - sb[:, 1] ** 2 / np.maximum(sb[:, 0], 1e-12)
        else:
            nb = sb.sum(1)
            impurity = impurity + nb - (sb**2).sum(1) / np.maximum(nb, 1e-12)
    if task == "regression":
        parent = tot[2] - tot[1] ** 2 / max(tot[0], 1e-12)
    else:
        parent = tot.sum() - (tot**2).sum() / max(tot.sum(), 1e-12)
    return parent - impurity, cuts


def init_parameters(x, y_init, n_restarts, depth, n_branches, n_outputs, task, rng,
                    feature_init="gain", feature_scale=1.0):
    """Data-aware initial parameters for ``n_restarts`` trees (float64 numpy).

    The tree is initialized top-down on the training rows.  At each node the
    feature is either drawn at random (``feature_init="random"``) or chosen by
    the impurity decrease of a B-way quantile split (``"gain"``: restart 0 takes
    the best feature, the other restarts a random one among the ``~sqrt(p)``
    best, so restarts stay diverse).  The chosen feature gets the largest
    logit (others stay random and inside the entmax support, so gradients can
    still switch features).  Thresholds sit at jittered quantiles of the chosen
    feature among the rows reaching the node; leaves start at the smoothed
    per-leaf target statistic (class-balanced log-odds or mean).

    Parameters
    ----------
    x : ndarray (n, p)
        Preprocessed training inputs.
    y_init : ndarray
        Class indices (classification) or standardized target (regression).
    task : {"binary", "multiclass", "regression"}
    rng : numpy.random.Generator
    feature_init : {"gain", "random"}
    """
    n, p = x.shape
    B = n_branches
    n_int, n_leaves, offsets = tree_sizes(depth, B)
    if task == "regression":
        n_classes = 0
        weights = np.ones(n)
    else:
        # From the task, not the rows: a class may have no training row here
        # (all of its weight zero, or all of its rows held out).
        n_classes = n_outputs if task == "multiclass" else 2
        cw = n / (n_classes * np.maximum(np.bincount(y_init, minlength=n_classes), 1))
        weights = cw[y_init]
    top_k = max(2, int(np.ceil(np.sqrt(p))))
    states = []
    mask0 = 2.0
    for restart in range(n_restarts):
        feat_logits = rng.normal(0.0, feature_scale, size=(n_int, p))
        thr_base = np.zeros(n_int)
        thr_gap = np.zeros((n_int, B - 1))
        mask_logit = np.full((n_int, B), mask0)
        node_of = np.zeros(n, dtype=np.int64)  # index within the current level
        for d in range(depth):
            nxt = np.empty(n, dtype=np.int64)
            for i in range(B**d):
                j = offsets[d] + i
                rows = np.flatnonzero(node_of == i)
                use = rows if rows.size >= 2 * B else np.arange(n)
                levels = np.sort((np.arange(1, B) + rng.uniform(-0.3, 0.3, size=B - 1)) / B)
                if feature_init == "gain":
                    gains, _ = _split_gains(x[use], y_init[use], weights[use], levels, task,
                                            n_classes)
                    order = np.argsort(-gains, kind="stable")
                    f = order[0] if restart == 0 else rng.choice(order[:top_k])
                    feat_logits[j, f] = feat_logits[j].max() + 0.5
                f = int(feat_logits[j].argmax())
                col = x[use, f]
                t = _between_values(col, np.quantile(col, levels))
                gaps = np.maximum(np.diff(t), 1e-3)
                g0 = max(float(np.std(col)) * 0.25, 1e-3)
                thr_base[j] = t[0] - g0
                thr_gap[j] = _inv_softplus(np.concatenate([[g0], gaps]))
                if rows.size:
                    thr = thr_base[j] + np.cumsum(np.logaddexp(0.0, thr_gap[j]))
                    nxt[rows] = i * B + np.searchsorted(thr, x[rows, f], side="left")
            node_of = nxt
        leaf = np.zeros((n_leaves, n_outputs))
        counts = np.bincount(node_of, minlength=n_leaves).astype(np.float64)
        if task == "regression":
            leaf[:, 0] = np.bincount(node_of, weights=y_init, minlength=n_leaves) / (counts + 1.0)
        else:
            freq = np.stack(
                [np.bincount(node_of[y_init == c], minlength=n_leaves) * cw[c]
                 for c in range(n_classes)], axis=1) + 1.0
            logp = np.log(freq / freq.sum(1, keepdims=True))
            if task == "binary":
                leaf[:, 0] = 0.5 * (logp[:, 1] - logp[:, 0])
            else:
                leaf[:] = 0.5 * (logp - logp.mean(1, keepdims=True))
        states.append({"feat_logits": feat_logits, "thr_base": thr_base, "thr_gap": thr_gap,
                       "mask_logit": mask_logit, "leaf": leaf})
    return states


def torch_hard_leaves(state, x, depth, n_branches, tau):
    """Hard-routed leaf of every row for one tree given as a numpy state (float64).

    This is the reference the exported numpy tree is checked against.
    """
    n_out = state["leaf"].shape[1]
    model = MBNDTModule(1, x.shape[1], depth, n_branches, n_out, tau).double()
    model.load_numpy([state])
    xt = torch.as_tensor(np.ascontiguousarray(x, dtype=np.float64))
    return model.hard_leaves(xt)[0].numpy()


def torch_hard_branches(state, x, depth, n_branches, tau, chunk=8192):
    """Hard branch of every node (n, N) for one tree given as a numpy state (float64)."""
    n_out = state["leaf"].shape[1]
    model = MBNDTModule(1, x.shape[1], depth, n_branches, n_out, tau).double()
    model.load_numpy([state])
    out = []
    for s in range(0, x.shape[0], chunk):
        xt = torch.as_tensor(np.ascontiguousarray(x[s:s + chunk], dtype=np.float64))
        out.append(model.hard_branches(xt)[0].numpy())
    if not out:
        return np.zeros((0, model.n_internal), dtype=np.int64)
    return np.concatenate(out, axis=0)


def log_soft_leaf_count(soft_leaf):
    """log of the effective number of leaves, per restart.

    ``soft_leaf`` (R, n, L) holds the soft reach mass of every leaf.  The mean
    mass ``a_l`` over the batch is a distribution over leaves; its inverse
    Simpson index ``1 / sum_l a_l**2`` (the Hill number of order 2, the same
    effective-number measure the paper uses per node) equals ``L`` for a full
    tree with uniform routing and 1 when all mass reaches one leaf.  The
    printed node-wise sum (Eq. 14) gives only ``1 + (B - 1) * depth``-like
    counts for a full tree, so we use the leaf distribution directly.
    """
    a = soft_leaf.mean(dim=1)
    return -torch.log((a * a).sum(-1).clamp_min(1e-30))


