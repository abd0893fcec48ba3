"""Synthetic data sets from the CLARITree paper.

Two generators, both deterministic given ``random_state``:

- :func:`make_piecewise_linear`: correlated Gaussian features whose target is
  exactly linear within regimes cut by quantiles of the first feature (the
  paper's appendix D.3 design, used for its scalability study).
- :func:`make_greedy_trap`: the appendix B.2 distribution on which a greedy
  linear-leaf tree fails while one-step lookahead finds the right tree.
"""

import numbers

import numpy as np
from scipy.special import ndtri
from sklearn.utils import check_random_state

__all__ = ["make_greedy_trap", "make_piecewise_linear"]


def _check_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}.")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}.")
    return int(value)


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}.")
    return bool(value)


def _check_real(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    return value


def make_piecewise_linear(
    n_samples=1000,
    n_features=4,
    n_regimes=4,
    rho=0.5,
    noise=0.1,
    random_state=None,
    *,
    coef=False,
):
    r"""Generate correlated features with a regime-wise linear target.

    The design of appendix D.3 of the CLARITree paper:

    .. math::

        x_i \sim \mathcal{N}(0, \Sigma), \quad \Sigma_{jr} = \rho^{|j - r|},

        g_i = \sum_{\ell=1}^{G-1} \mathbf{1}\{x_{i1} > q_\ell\}, \quad
        y_i = x_i^\top \beta^{(g_i)} + \sigma \varepsilon_i,

    where :math:`q_\ell = \Phi^{-1}(\ell / G)` are the population quantiles of
    the first feature (so the :math:`G` regimes are equally likely and the same
    for every draw), :math:`\beta^{(g)} = s_g\, d \odot \xi^{(g)}` with
    :math:`\xi^{(g)} \sim \mathcal{N}(0, I_k)`, feature scales :math:`d_j = 1/j`
    (relevance decays along the feature index) and regime scales
    :math:`s_g = 1 + g` (later regimes are steeper), and
    :math:`\varepsilon_i \sim \mathcal{N}(0, 1)`.

    The conditional mean is exactly linear within each regime and the regime
    boundaries are axis-aligned thresholds on the first feature, so a linear-leaf
    tree with ``n_regimes`` leaves splitting on feature 0 is the true model.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    n_features : int, default=4
        Number of features :math:`k`.
    n_regimes : int, default=4
        Number of regimes :math:`G`, cut at the ``1/G, ..., (G-1)/G`` quantiles
        of the first feature.
    rho : float, default=0.5
        Correlation between neighbouring features, in ``(-1, 1)``.
    noise : float, default=0.1
        Standard deviation :math:`\sigma` of the Gaussian noise added to the
        target; ``0`` gives an exactly piecewise-linear target.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.
    coef : bool, default=False
        If True, also return the regime coefficients.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Target.
    coef : ndarray of shape (n_regimes, n_features)
        Row ``g`` holds :math:`\beta^{(g)}`. Only returned when ``coef=True``.

    See Also
    --------
    make_greedy_trap : Data on which greedy tree growing provably fails.

    Examples
    --------
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=200, n_features=3, random_state=0)
    >>> X.shape, y.shape
    ((200, 3), (200,))
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    n_regimes = _check_int(n_regimes, "n_regimes", 1)
    rho = _check_real(rho, "rho")
    if not -1.0 < rho < 1.0:
        raise ValueError(f"rho must lie strictly between -1 and 1, got {rho}.")
    noise = _check_real(noise, "noise")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}.")
    coef = _check_bool(coef, "coef")
    rng = check_random_state(random_state)

    # An AR(1) recursion with unit innovations scaled by sqrt(1 - rho^2) has
    # exactly the Toeplitz covariance rho^|j-r| and costs O(n k), no Cholesky.
    innovations = rng.standard_normal((n_samples, n_features))
    X = np.empty((n_samples, n_features))
    X[:, 0] = innovations[:, 0]
    scale = np.sqrt(1.0 - rho * rho)
    for j in range(1, n_features):
        X[:, j] = rho * X[:, j - 1] + scale * innovations[:, j]

    boundaries = ndtri(np.arange(1, n_regimes) / n_regimes)
    regime = np.searchsorted(boundaries, X[:, 0], side="left")

    d = 1.0 / np.arange(1, n_features + 1)
    s = 1.0 + np.arange(n_regimes)
    betas = s[:, None] * d[None, :] * rng.standard_normal((n_regimes, n_features))

    y = np.einsum("ij,ij->i", X, betas[regime])
    y += noise * rng.standard_normal(n_samples)
    if coef:
        return X, y, betas
    return X, y


def make_greedy_trap(
    n_samples=1000,
    epsilon=0.05,
    n_nuisance=8,
    depth=4,
    random_state=None,
):
    r"""Generate the greedy trap of the CLARITree paper (appendix B.2).

    Features are :math:`X = (g, h, M, z)`: two signs :math:`g, h`, :math:`U`
    nuisance pairs :math:`M = \{(m_{j1}, m_{j2})\}_{j=1}^{U}`, all independent
    Rademacher (:math:`\pm 1`) variables, and :math:`z \sim \mathcal{N}(0, 1)`.
    With :math:`B \sim \mathrm{Bernoulli}(\varepsilon)` and :math:`J` uniform on
    :math:`\{1, \dots, U\}`,

    .. math::

        Y = \begin{cases} g\,h\,z, & B = 0,\\ m_{J1}\, m_{J2}, & B = 1. \end{cases}

    The signal :math:`ghz` is invisible to any single split followed by linear
    leaves: conditioning on :math:`g`, :math:`h` or :math:`z` alone leaves a
    product of independent symmetric variables, uncorrelated with every feature,
    so its one-step gain is zero. A nuisance split on :math:`m_{j1}` has a small
    positive gain (the leaf can then fit :math:`m_{j2}`), so in the population
    a greedy tree of depth :math:`d < U` spends every split on nuisance bits
    and keeps an MSE of at least :math:`1 - \varepsilon` (on a sample it may
    also cut :math:`z` where noise makes a split look useful, which does not
    help either). One-step lookahead sees
    that splitting on :math:`g` and then :math:`h` makes :math:`Y = \pm z` in
    every leaf, a linear model, and reaches a population MSE of at most
    :math:`2\varepsilon`: the ratio is at least :math:`1/(4\varepsilon)`.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    epsilon : float, default=0.05
        Probability :math:`\varepsilon \in (0, 1/2)` that a row's target is the
        nuisance product instead of the signal.
    n_nuisance : int, default=8
        Number :math:`U` of nuisance pairs; must exceed ``depth`` so that a greedy
        tree always has an unresolved pair left to split on.
    depth : int, default=4
        Depth budget :math:`d \geq 2` of the trees the trap is built for (the
        paper's experiment uses :math:`U = 8`, :math:`d = 4`, :math:`n = 1000`).
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, 2 * n_nuisance + 3)
        Columns, in order: ``g``, ``h``, ``m_{1,1}``, ``m_{1,2}``, ...,
        ``m_{U,1}``, ``m_{U,2}``, ``z``. The sign columns hold -1.0 and 1.0, so
        they are used both for splitting and in the leaf regressions.
    y : ndarray of shape (n_samples,)
        Target.

    See Also
    --------
    make_piecewise_linear : Regime-wise linear data for scalability studies.

    Examples
    --------
    >>> from clarytree.datasets import make_greedy_trap
    >>> X, y = make_greedy_trap(n_samples=500, random_state=0)
    >>> X.shape
    (500, 19)
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    epsilon = _check_real(epsilon, "epsilon")
    if not 0.0 < epsilon < 0.5:
        raise ValueError(f"epsilon must lie strictly between 0 and 0.5, got {epsilon}.")
    depth = _check_int(depth, "depth", 2)
    n_nuisance = _check_int(n_nuisance, "n_nuisance", 1)
    if n_nuisance <= depth:
        raise ValueError(
            f"n_nuisance must be greater than depth (got n_nuisance={n_nuisance}, "
            f"depth={depth}): with fewer nuisance pairs a greedy tree runs out of "
            "nuisance splits and the trap no longer holds."
        )
    rng = check_random_state(random_state)

    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_samples, 2 + 2 * n_nuisance))
    z = rng.standard_normal(n_samples)
    is_nuisance = rng.random_sample(n_samples) < epsilon
    pair = rng.randint(n_nuisance, size=n_samples)

    g, h = signs[:, 0], signs[:, 1]
    rows = np.arange(n_samples)
    nuisance_product = signs[rows, 2 + 2 * pair] * signs[rows, 3 + 2 * pair]
    y = np.where(is_nuisance, nuisance_product, g * h * z)
    X = np.column_stack([signs, z])
    return X, y
