"""Keep torch._dynamo out of a training process that never compiles: its import costs 6-7 s per fairseq start on
2 idle CPU cores, more than a tiny training takes.

torch wraps some `torch.optim.Optimizer` methods in `torch._compile._disable_dynamo`, whose wrapper imports
torch._dynamo on the first call only to mark the method as not traced, and caches the result on the function as
`__dynamo_disable`. Nothing prelnx runs is compiled, so each wrapped method gets itself as that cache. torch's own
SGD step still imports dynamo (its `_use_grad` does). torch, not fairseq, is patched here, once.
"""

from __future__ import annotations

import torch

_WRAPPER = "_disable_dynamo.<locals>.inner"


def skip_dynamo_import() -> int:
    """Give every dynamo-disabled method of torch's optimizers its own function as the cached disabled form.
    Returns how many were set (0 when torch's wrapper changes shape: then nothing is touched)."""
    count, seen, classes = 0, set(), [torch.optim.Optimizer]
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        for value in vars(cls).values():
            function = getattr(value, "__func__", value)
            while function is not None and id(function) not in seen:
                seen.add(id(function))
                code = getattr(function, "__code__", None)
                wrapped = getattr(function, "__wrapped__", None)
                if code is not None and code.co_qualname == _WRAPPER and callable(wrapped):
                    setattr(wrapped, "__dynamo_disable", wrapped)
                    count += 1
                function = wrapped
    return count
