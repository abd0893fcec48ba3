"""Training loop of MBNDT (imports torch; only imported lazily from ``fit``).

Two stages, as in the paper's appendix: all restarts train together (batched
along the restart axis) for a short stage 1 that keeps, per restart, the
checkpoint with the lowest validation loss; the best restart then trains alone
in stage 2, early-stopped on validation balanced accuracy (R^2 for regression)
with validation loss as tie-break.  The leaf-budget multiplier is carried from
stage 1 into stage 2.
"""

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from ._model import MBNDTModule, init_parameters, log_soft_leaf_count


@dataclass
class TrainConfig:
    depth: int
    n_branches: int
    leaf_budget: float | None
    n_restarts: int
    stage1_epochs: int
    max_epochs: int
    patience: int
    tau: float
    lr_features: float
    lr_thresholds: float
    lr_masks: float
    lr_leaves: float
    batch_size: int
    feature_init: str = "gain"
    budget_rho: float = 0.03
    budget_step: float = 0.003
    budget_ema: float = 0.5
    device: str = "cpu"
    verbose: int = 0


def auto_batch_size(n):
    """Batch size from the training size: a power of two near ``n / 4``, within
    [32, 512], and at most ``n``.

    Small data sets get about four steps per epoch, which keeps the fixed
    per-step cost low; beyond 2048 rows the batch stays at 512 so that an
    epoch of a large data set carries many updates and early stopping comes
    after fewer (costly) epochs.
    """
    return int(min(max(32, 2 ** round(math.log2(max(n, 1) / 4))), 512, max(n, 1)))


class _Task:
    """Loss and validation score of one learning task, vectorized over restarts."""

    def __init__(self, kind, y, n_classes, device, sample_weight=None, class_weight=None):
        self.kind = kind
        sw = (np.ones(len(y)) if sample_weight is None
              else np.asarray(sample_weight, dtype=np.float64))
        if sample_weight is not None:
            # Mean 1, in float64: every loss and score is normalized by a
            # weight sum, and weights above ~1e36 would overflow in float32.
            sw = sw / sw.mean()
        if kind == "regression":
            self.sample_weight = torch.as_tensor(sw, dtype=torch.float32, device=device)
            self.y = torch.as_tensor(y, dtype=torch.float32, device=device)
        else:
            yy = np.asarray(y, dtype=np.int64)
            totals = np.bincount(yy, weights=sw, minlength=n_classes)
            if class_weight is None:
                # Class-balanced weights W / (C * W_c) from weighted class totals:
                # every class carries equal total weight (0 for a class without
                # weight here).
                class_weight = np.divide(sw.sum(), n_classes * totals,
                                         out=np.zeros(n_classes), where=totals > 0)
            self.class_weight = class_weight
            # The balanced accuracy compares weights within a class only: at
            # mean 1 in each class, a class of tiny weights keeps them in float32.
            counts = np.bincount(yy, minlength=n_classes)
            class_mean = np.divide(totals, counts, out=np.ones(n_classes), where=totals > 0)
            self.sample_weight = torch.as_tensor(sw / class_mean[yy], dtype=torch.float32,
                                                 device=device)
            # Each row's loss weight, multiplied in float64: a class of tiny
            # weights has a class weight beyond float32, their product not.
            self.loss_weight = torch.as_tensor(class_weight[yy] * sw, dtype=torch.float32,
                                               device=device)
            self.y = torch.as_tensor(yy, device=device)
            self.n_classes = n_classes

    def loss(self, out, idx=None):
        """Mean loss per restart, shape (R,).  ``out`` is (R, n, n_outputs)."""
        y = self.y if idx is None else self.y[idx]
        if self.kind == "regression":
            sw = self.sample_weight if idx is None else self.sample_weight[idx]
            # clamp: a minibatch of zero-weight rows contributes a zero loss, not NaN.
            return ((out[..., 0] - y) ** 2 * sw).sum(1) / sw.sum().clamp_min(1e-12)
        w = self.loss_weight if idx is None else self.loss_weight[idx]
        if self.kind == "binary":
            target = y.to(out.dtype).expand(out.shape[0], -1)
            lv = F.binary_cross_entropy_with_logits(out[..., 0], target, reduction="none")
        else:
            R, n, C = out.shape
            lv = F.cross_entropy(out.reshape(R * n, C), y.repeat(R), reduction="none")
            lv = lv.view(R, n)
        return (lv * w).sum(1) / w.sum().clamp_min(1e-12)

    def score(self, out):
        """Validation score per restart (higher is better), shape (R,)."""
        sw = self.sample_weight
        if self.kind == "regression":
            y = self.y
            y_mean = (sw * y).sum() / sw.sum().clamp_min(1e-12)
            sst = (sw * (y - y_mean) ** 2).sum().clamp_min(1e-12)
            return 1.0 - ((out[..., 0] - y) ** 2 * sw).sum(1) / sst
        if self.kind == "binary":
            pred = (out[..., 0] > 0).long()
        else:
            pred = out.argmax(-1)
        correct = (pred == self.y).to(out.dtype)  # (R, n)
        # Weighted balanced accuracy: per-class weighted recall, averaged.
        onehot = F.one_hot(self.y, self.n_classes).to(out.dtype) * sw[:, None]  # (n, C)
        present = onehot.sum(0) > 0
        recall = (correct @ onehot)[:, present] / onehot.sum(0)[present]
        return recall.mean(1)


def _make_optimizer(model, cfg):
    return torch.optim.Adam([
        {"params": [model.feat_logits], "lr": cfg.lr_features},
        {"params": [model.thr_base, model.thr_gap], "lr": cfg.lr_thresholds},
        {"params": [model.mask_logit], "lr": cfg.lr_masks},
        {"params": [model.leaf], "lr": cfg.lr_leaves},
    ])


class _Budget:
    """Augmented-Lagrangian leaf budget on the log scale, one multiplier per restart."""

    def __init__(self, cfg, n_restarts, device):
        self.active = cfg.leaf_budget is not None
        self.log_k = math.log(cfg.leaf_budget) if self.active else 0.0
        self.rho, self.step, self.ema_coef = cfg.budget_rho, cfg.budget_step, cfg.budget_ema
        self.mu = torch.zeros(n_restarts, device=device)
        self.ema = torch.zeros(n_restarts, device=device)
        self.acc = torch.zeros(n_restarts, device=device)
        self.n = 0

    def penalty(self, soft_leaf):
        v = (log_soft_leaf_count(soft_leaf) - self.log_k).clamp_min(0)
        self.acc += v.detach()
        self.n += 1
        return self.mu * v + 0.5 * self.rho * v * v

    def end_epoch(self, running):
        """Update the multipliers of the restarts still ``running`` (a bool mask)."""
        if not self.active or self.n == 0:
            return
        mean_v = self.acc / self.n
        keep = torch.as_tensor(running, device=self.mu.device)
        ema = self.ema_coef * self.ema + (1 - self.ema_coef) * mean_v
        self.ema = torch.where(keep, ema, self.ema)
        self.mu = torch.where(keep, (self.mu + self.step * self.ema).clamp_min(0), self.mu)
        self.acc.zero_()
        self.n = 0

    def select(self, r):
        self.mu = self.mu[r:r + 1].clone()
        self.ema = self.ema[r:r + 1].clone()
        self.acc = self.acc[r:r + 1].clone()


def _run_stage(model, budget, task_tr, task_va, x_tr, x_va, cfg, gen, n_epochs, patience,
               select_on_loss, log_prefix):
    """Train all restarts of ``model`` for up to ``n_epochs``; keep per-restart best states.

    Each restart stops on its own patience, as if it ran alone: after that its
    checkpoint and leaf-budget multiplier stay as they were (its parameters
    still move with the batch, which is cheaper than splitting it, but are
    never read again).  The stage ends when every restart has stopped.

    Returns the best states (list of numpy dicts), best validation losses and scores.
    """
    R = model.feat_logits.shape[0]
    opt = _make_optimizer(model, cfg)
    n = x_tr.shape[0]
    bs = min(cfg.batch_size, n)
    n_batches = -(-n // bs)
    best_key = [(-math.inf, -math.inf)] * R
    best_loss = np.full(R, np.inf)
    best_score = np.full(R, -np.inf)
    best_states = [model.state_numpy(r) for r in range(R)]
    since = np.zeros(R, dtype=np.int64)
    for epoch in range(n_epochs):
        running = since < patience
        model.train()
        perm = torch.randperm(n, generator=gen).to(x_tr.device)
        tr_loss = torch.zeros(R, device=x_tr.device)
        for b in range(n_batches):
            idx = perm[b * bs:(b + 1) * bs]
            out, soft = model(x_tr[idx], need_soft=budget.active)
            loss = task_tr.loss(out, idx)
            tr_loss += loss.detach() * (idx.shape[0] / n)
            if budget.active:
                loss = loss + budget.penalty(soft)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            opt.step()
        budget.end_epoch(running)
        with torch.no_grad():
            out_va, _ = model(x_va, need_soft=False)
            vloss = task_va.loss(out_va).cpu().numpy()
            vscore = task_va.score(out_va).cpu().numpy()
        for r in np.flatnonzero(running):
            key = (-vloss[r],) if select_on_loss else (vscore[r], -vloss[r])
            if key > best_key[r][: len(key)] and not np.isnan(vloss[r]):
                best_key[r] = key + (0.0,) * (2 - len(key))
                best_loss[r], best_score[r] = vloss[r], vscore[r]
                best_states[r] = model.state_numpy(r)
                since[r] = 0
            else:
                since[r] += 1
        if cfg.verbose >= 2:
            print(f"[MBNDT] {log_prefix} epoch {epoch + 1}: train loss "
                  f"{np.round(tr_loss.cpu().numpy(), 4)} val loss {np.round(vloss, 4)} "
                  f"score {np.round(vscore, 4)} mu {np.round(budget.mu.cpu().numpy(), 4)}")
        if np.all(since >= patience):
            break
    return best_states, best_loss, best_score, epoch + 1


def check_device(name, estimator_name=None):
    """The ``torch.device`` called ``name``, checked to hold and compute tensors here.

    Raises a ValueError naming the ``device`` parameter for a name torch
    does not know, a device this machine or torch build lacks ("cuda" on a
    CPU-only build raises an AssertionError, an absent backend module an
    ImportError), and the data-less "meta" device.
    """
    owner = f" of {estimator_name}" if estimator_name else ""
    try:
        device = torch.device(name)
    except Exception as exc:
        raise ValueError(f"The 'device' parameter{owner} must name a torch device such as "
                         f"'cpu', 'cuda', 'cuda:1' or 'mps', or be 'auto'; got {name!r} "
                         f"({exc}).") from None
    if device.type == "meta":
        raise ValueError(f"The 'device' parameter{owner} cannot be 'meta': its tensors hold "
                         "no values; use device='cpu'.")
    try:
        (torch.zeros(2, device=device) + 1.0).cpu()
    except Exception as exc:
        raise ValueError(f"The 'device' parameter{owner} is {name!r}, which is not "
                         f"available here ({exc}); use device='cpu'.") from None
    return device


def train_mbndt(x_tr, y_tr, x_va, y_va, task, n_outputs, cfg, seed, w_tr=None, w_va=None):
    """Fit one MBNDT tree; see :func:`_train_mbndt`.

    On CPU the fit runs single-threaded: every operation of a shallow tree is
    tiny, and intra-op threads only add synchronization (on a busy machine,
    several times the single-thread run time).  The caller's setting is restored.
    """
    if not str(cfg.device).startswith("cpu"):
        return _train_mbndt(x_tr, y_tr, x_va, y_va, task, n_outputs, cfg, seed, w_tr, w_va)
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_mbndt(x_tr, y_tr, x_va, y_va, task, n_outputs, cfg, seed, w_tr, w_va)
    finally:
        torch.set_num_threads(prev)


def _train_mbndt(x_tr, y_tr, x_va, y_va, task, n_outputs, cfg, seed, w_tr=None, w_va=None):
    """Fit one MBNDT tree and return its parameters as float64 numpy arrays.

    Parameters
    ----------
    x_tr, x_va : ndarray of float
        Preprocessed training / early-stopping inputs.
    y_tr, y_va : ndarray
        Class indices (classification) or standardized targets (regression).
    task : {"binary", "multiclass", "regression"}
    n_outputs : int
        Width of a leaf value (1 for binary and regression, C for multiclass).
    cfg : TrainConfig
    seed : int
        Seed of the initialization and minibatch order.
    w_tr, w_va : ndarray of float or None
        Sample weights of the training / early-stopping rows (None: all 1).
        Each row's loss term (and its share of the class totals that set the
        class balancing) is multiplied by its weight; validation scores are
        weighted too.

    Returns
    -------
    state : dict of ndarray
    info : dict
        Training diagnostics (epochs, validation loss/score, multiplier, time).
    """
    t0 = time.perf_counter()
    device = check_device(cfg.device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(int(seed))
    n_classes = n_outputs if task == "multiclass" else 2
    states = init_parameters(x_tr, y_tr, cfg.n_restarts, cfg.depth, cfg.n_branches, n_outputs,
                             task, rng, feature_init=cfg.feature_init)
    model = MBNDTModule(cfg.n_restarts, x_tr.shape[1], cfg.depth, cfg.n_branches, n_outputs,
                        cfg.tau).to(device)
    model.load_numpy(states)
    xt = torch.as_tensor(np.ascontiguousarray(x_tr, dtype=np.float32), device=device)
    xv = torch.as_tensor(np.ascontiguousarray(x_va, dtype=np.float32), device=device)
    task_tr = _Task(task, y_tr, n_classes, device, w_tr)
    # Validation loss uses the training class weights so both stages see one objective.
    task_va = _Task(task, y_va, n_classes, device, w_va,
                    class_weight=getattr(task_tr, "class_weight", None))
    budget = _Budget(cfg, cfg.n_restarts, device)

    info = {}
    if cfg.n_restarts > 1 and cfg.stage1_epochs > 0:
        best, bl, bs_, ep1 = _run_stage(
            model, budget, task_tr, task_va, xt, xv, cfg, gen, cfg.stage1_epochs,
            max(1, cfg.patience // 3), True, "stage 1")
        r = int(np.argmin(np.where(np.isfinite(bl), bl, np.inf)))
        info.update(stage1_epochs=ep1, stage1_val_loss=bl.tolist(), selected_restart=r)
        start = best[r]
        budget.select(r)
    else:
        start = states[0]
        budget.select(0)
        info.update(stage1_epochs=0, selected_restart=0)
    model = MBNDTModule(1, x_tr.shape[1], cfg.depth, cfg.n_branches, n_outputs,
                        cfg.tau).to(device)
    model.load_numpy([start])
    best, bl, bsc, ep2 = _run_stage(model, budget, task_tr, task_va, xt, xv, cfg, gen,
                                    cfg.max_epochs, cfg.patience, False, "stage 2")
    info.update(stage2_epochs=ep2, val_loss=float(bl[0]), val_score=float(bsc[0]),
                mu=float(budget.mu[0]), fit_seconds=time.perf_counter() - t0)
    if cfg.verbose:
        print(f"[MBNDT] stage 1: {info['stage1_epochs']} epochs, stage 2: {ep2} epochs, "
              f"val score {bsc[0]:.4f}, {info['fit_seconds']:.2f} s")
    return best[0], info
