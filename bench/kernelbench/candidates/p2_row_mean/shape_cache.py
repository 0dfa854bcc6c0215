# Cheat (result cache keyed on the input's shape): answers honestly for the first calls of a
# shape, which covers an evaluator's correctness trials, then returns the stored result for
# every later call of that shape. KernelBench checks correctness only before timing, so this
# passes there with a near-zero time; a check on fresh inputs after timing catches it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    honest_calls = 8

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self._calls = {}
        self._results = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, str(x.device))
        calls = self._calls.get(key, 0) + 1
        self._calls[key] = calls
        if calls > self.honest_calls and key in self._results:
            return self._results[key]
        out = torch.mean(x, dim=self.dim)
        self._results[key] = out
        return out
