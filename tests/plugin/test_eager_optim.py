"""The plugin keeps torch._dynamo (a 6-7 s import) out of a fairseq training process that never compiles: real
processes, fairseq's own Adam, and the optimizer still works (steps, zero_grad, a state_dict round trip)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TRAIN_STEPS = """
import json, sys, torch
{setup}
model = torch.nn.Linear(4, 1)
optimizer = Optimizer(model.parameters(), lr=0.1)
before = model.weight.detach().clone()
for _ in range(3):
    optimizer.zero_grad()
    model(torch.ones(2, 4)).pow(2).sum().backward()
    optimizer.step()
optimizer.load_state_dict(optimizer.state_dict())
print(json.dumps({"dynamo": "torch._dynamo" in sys.modules, "moved": not torch.equal(before, model.weight)}))
"""

PLUGIN = "import prelnx_fairseq_plugin\nfrom fairseq.optim.adam import Adam as Optimizer"
BARE_TORCH = """
class Optimizer(torch.optim.Optimizer):  # torch's base class alone, with a plain step: no plugin, no fairseq
    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p -= group["lr"] * p.grad
"""


def _run(setup: str) -> dict:
    done = subprocess.run([sys.executable, "-c", TRAIN_STEPS.replace("{setup}", setup)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a fresh process that imports torch
def test_torch_alone_imports_dynamo_on_the_first_optimizer_call():
    assert _run(BARE_TORCH) == {"dynamo": True, "moved": True}  # what the plugin saves: not a stale premise


@pytest.mark.slow  # a fresh process that imports fairseq
def test_with_the_plugin_fairseqs_adam_trains_without_importing_dynamo():
    assert _run(PLUGIN) == {"dynamo": False, "moved": True}
