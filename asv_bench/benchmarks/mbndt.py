"""One training epoch of MBNDT (multi-branch differentiable trees).

Skipped (``NotImplementedError`` in ``setup``) when torch or
``clarytree.mbndt`` is not available. One epoch per stage: each of the
``n_restarts`` initializations trains one stage-1 epoch, the selected one one
stage-2 epoch (``stage1_epochs=1``, ``max_epochs=1``), on a binary task with
``n`` rows and 8 features, CPU.
"""

import numpy as np


class MBNDTEpoch:
    params = ([1_000, 10_000], [1, 5])
    param_names = ["n", "n_restarts"]
    timeout = 180

    def setup(self, n, n_restarts):
        try:
            import torch

            from clarytree.mbndt import MBNDTClassifier
        except ImportError as exc:
            raise NotImplementedError(f"MBNDT unavailable: {exc}") from exc
        torch.set_num_threads(1)
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((n, 8))
        logit = self.X[:, 0] - 0.5 * self.X[:, 1] * (self.X[:, 2] > 0)
        self.y = (logit + 0.3 * rng.standard_normal(n) > 0).astype(int)
        self.model = MBNDTClassifier(max_depth=3, n_restarts=n_restarts, stage1_epochs=1,
                                     max_epochs=1, patience=1, random_state=0)

    def time_one_epoch(self, n, n_restarts):
        self.model.fit(self.X, self.y)

    def peakmem_one_epoch(self, n, n_restarts):
        self.model.fit(self.X, self.y)
