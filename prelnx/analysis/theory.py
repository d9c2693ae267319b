"""The paper's mean-field checks (Section 3.3) in its simplified model (uniform attention, W^Q = W^K = 0; d x d
Xavier weights; Gaussian inputs), following the seed note (../shared/papers/pre-ln-transformer-note.fr.md):
1. Lemma 1: E||x^{post,5}_l||^2 = 3/2 d for Post-LN (just before the layer's last LayerNorm) and
   (1 + l/2) d <= E||x^{pre}_l||^2 <= (1 + 3l/2) d for Pre-LN (the un-normalised trunk after layer l).
2. Lemma 2: ||J_LN(x)||_2 = O(sqrt(d) / ||x||_2).
The numbers are paper.yaml's `theory` entries; this module measures over seeds, and a `judge` passed in by the
command (prelnx.report.theory_claims: analysis sits below report) decides the claims.
"""

from __future__ import annotations

import functools
import json
import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from prelnx.analysis.grads.summary import csv_text, stats_by
from prelnx.atomic import write_text_atomic
from prelnx.console import counted, results
from prelnx.eta import Eta
from prelnx.exits import Refusal
from prelnx.paper import paper_data

POST_CLAIM, PRE_CLAIM = "postln_hidden_norm_three_halves", "preln_hidden_norm_grows_linearly"  # paper.yaml ids
log = logging.getLogger(__name__)
Judge = Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]  # summary with "rows" -> (verdicts, lines)


@functools.cache
def theory_claim(claim_id: str) -> dict[str, Any]:
    """paper.yaml's `theory` entry (the one owner of Lemma 1's numbers and margin), read once."""
    return next(claim for claim in paper_data()["theory"] if claim["id"] == claim_id)


class TheoryError(Refusal):
    """Bad input to the mean-field checks."""


@dataclass
class TheorySettings:
    d: int = 512  # hidden size (the paper's IWSLT14 d)
    layers: int = 12
    seeds: tuple[int, ...] = tuple(range(1, 11))
    tokens: int = 8  # sequence length of the Gaussian input (as in the note)
    scales: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # input scalings for the Jacobian check

    def __post_init__(self) -> None:  # refused when made: a dry run refuses what the run would
        if self.d < 2 or self.layers < 1 or self.tokens < 1 or not self.seeds:
            raise TheoryError(f"need d >= 2, layers >= 1, tokens >= 1 and at least one seed; got d {self.d}, "
                              f"layers {self.layers}, tokens {self.tokens}, {len(self.seeds)} seeds")  # fmt: skip
        if not self.scales or any(not 0 < scale < float("inf") for scale in self.scales):  # nan fails too
            raise TheoryError(f"--scales: every scale must be finite and > 0, got {list(self.scales)}")


def pre_bounds(layer: int) -> tuple[float, float]:
    """Lemma 1's bounds on E||x^{pre}_l||^2 / d: 1 + l/2 and 1 + 3l/2 (paper.yaml)."""
    claim = theory_claim(PRE_CLAIM)
    return claim["intercept"] + claim["low_slope"] * layer, claim["intercept"] + claim["high_slope"] * layer


def hidden_state_norms(d: int, layers: int, seed: int, tokens: int = 8) -> list[dict[str, float]]:
    """||x^{post,5}_l||^2 / d and ||x^{pre}_l||^2 / d after each layer l, averaged over the tokens; one draw.

    Post-LN and Pre-LN share the same input and the same weights layer by layer.
    """
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(seed)

    def xavier() -> torch.Tensor:  # d x d Xavier: variance 2 / (d + d) = 1 / d
        return torch.randn(d, d, generator=generator) / d**0.5

    def norm(v: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(v, (d,))

    def attention(h: torch.Tensor, value: torch.Tensor) -> torch.Tensor:  # W^Q = W^K = 0: uniform attention
        return (h @ value).mean(dim=0, keepdim=True).expand_as(h)

    def ffn(h: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return F.relu(h @ w1) @ w2

    x_post = x_pre = torch.randn(tokens, d, generator=generator)
    rows = []
    for layer in range(1, layers + 1):
        value, w1, w2 = xavier(), xavier(), xavier()
        x3 = norm(x_post + attention(x_post, value))  # Post-LN: normalise after each residual add
        x5 = x3 + ffn(x3, w1, w2)
        x_post = norm(x5)
        x_mid = x_pre + attention(norm(x_pre), value)  # Pre-LN: normalise the sublayer's input only
        x_pre = x_mid + ffn(norm(x_mid), w1, w2)
        rows.append({
            "layer": layer,
            "post": float((x5**2).sum(dim=1).mean()) / d,
            "pre": float((x_pre**2).sum(dim=1).mean()) / d,
        })  # fmt: skip
    return rows


def layernorm_jacobian_norms(d: int, scales: tuple[float, ...], seed: int) -> list[dict[str, float]]:
    """For x = k z (one Gaussian direction z, scaled by each k): ||J_LN(x)||_2 beside sqrt(d) / ||x||_2."""
    import torch
    import torch.nn.functional as F

    z = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    rows = []
    for scale in scales:
        x = scale * z
        # d copies of x, each normalised on its own: one backward of sum_i LN(copy i)_i gives row i of J in copy i's
        # gradient (torch.func.jacrev's numbers to the bit, without its first-use import of torch._dynamo, ~1.7 CPU-s)
        copies = x.expand(d, d).clone().requires_grad_()
        torch.diagonal(F.layer_norm(copies, (d,))).sum().backward()
        jacobian = copies.grad
        spectral = float(torch.linalg.matrix_norm(jacobian, ord=2))
        predicted = d**0.5 / float(x.norm())
        rows.append({"scale": scale, "x_norm": float(x.norm()), "jacobian_norm": spectral, "sqrt_d_over_norm": predicted,
                     "ratio": spectral / predicted})  # fmt: skip
    return rows


def summarize_hidden(rows: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Per layer: mean and std over seeds of both layouts, and Pre-LN's bounds (the verdicts: the judge's)."""
    keys = ("layer", "pre_lower", "pre_upper")  # the bounds are the layer's: on every seed's row of it
    post, pre = stats_by(rows, keys, "post"), stats_by(rows, keys, "pre")
    return [{"layer": key[0], "post_mean": post[key]["mean"], "post_std": post[key]["std"], "pre_mean": pre[key]["mean"],
             "pre_std": pre[key]["std"], "pre_lower": key[1], "pre_upper": key[2]} for key in post]  # fmt: skip


def run_theory(settings: TheorySettings, out_dir: Path | None = None, plots: bool = True,
               judge: Judge | None = None) -> dict[str, Any]:
    """Both checks over every seed; prints the tables; writes CSVs, theory_summary.json and plots to out_dir if given.
    `judge` (prelnx.report.theory_claims.judge) decides Lemma 1's claims from every seed's rows: its verdicts go
    into the summary (`verdicts`) and its lines are printed."""
    log.info(f"theory: hidden-state norms of {len(settings.seeds)} random {settings.layers}-layer networks (d {settings.d}, "
             f"{settings.tokens} tokens), then LayerNorm's Jacobian at "
             f"{counted(len(settings.scales), 'scale')}")  # fmt: skip
    hidden_rows, eta, started = [], Eta(len(settings.seeds)), time.monotonic()
    for index, seed in enumerate(settings.seeds, 1):
        hidden_rows += [{"seed": seed, **row, "pre_lower": pre_bounds(row["layer"])[0], "pre_upper": pre_bounds(row["layer"])[1]}
                        for row in hidden_state_norms(settings.d, settings.layers, seed, settings.tokens)]  # fmt: skip
        eta.add(1)
        log.info(f"  seed {seed} done ({index}/{len(settings.seeds)}; {time.monotonic() - started:.0f} s"
                 + (f", {eta.text()})" if index < len(settings.seeds) else ")"))  # fmt: skip
    jacobian_rows = [{"seed": seed, **row} for seed in settings.seeds for row in layernorm_jacobian_norms(settings.d, settings.scales, seed)]
    hidden = summarize_hidden(hidden_rows)
    ratios = [row["ratio"] for row in jacobian_rows]
    first_seed = [row for row in jacobian_rows if row["seed"] == settings.seeds[0]]
    post, pre = theory_claim(POST_CLAIM), theory_claim(PRE_CLAIM)
    summary: dict[str, Any] = {
        "d": settings.d, "layers": settings.layers, "seeds": list(settings.seeds), "tokens": settings.tokens,
        "hidden": hidden,
        "post_mean_over_layers": statistics.fmean(row["post_mean"] for row in hidden),
        "post_expectation": float(post["expectation"]),  # E||x^{post,5}||^2 / d, 3/2
        "layernorm": first_seed,
        "jacobian_ratio_min": min(ratios), "jacobian_ratio_max": max(ratios),
        "paper": {"post": post["paper"], "pre": pre["paper"], "layernorm": "||J_LN(x)||_2 = O(sqrt(d) / ||x||_2)"},
    }  # fmt: skip
    lines = report_lines(summary)
    if judge is not None:
        summary["verdicts"], judged = judge({**summary, "rows": hidden_rows})
        lines += judged
    for line in lines:
        results.info(line)
    if out_dir is not None:
        out_dir = Path(out_dir)
        write_text_atomic(out_dir / "theory_hidden.csv", csv_text(hidden_rows, tuple(hidden_rows[0])))
        write_text_atomic(out_dir / "theory_layernorm.csv", csv_text(jacobian_rows, tuple(jacobian_rows[0])))
        if plots:
            from prelnx.plots.gradients import plot_hidden_norms, plot_layernorm_jacobian

            plot_hidden_norms(summary, out_dir / "theory_hidden.png")
            plot_layernorm_jacobian(summary, out_dir / "theory_layernorm.png")
        write_text_atomic(out_dir / "theory_summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def report_lines(summary: dict[str, Any]) -> list[str]:
    n = len(summary["seeds"])
    expectation = summary["post_expectation"]
    lines = [f"hidden-state norms at initialisation, d {summary['d']}, mean +- std over {counted(n, 'seed')}:",
             f"  layer   Post-LN ||x^(post,5)||^2/d (paper {expectation:g})   Pre-LN ||x_l||^2/d   paper's bounds"]  # fmt: skip
    for row in summary["hidden"]:
        lines.append(f"  {row['layer']:5d}   {row['post_mean']:6.3f} +- {row['post_std']:.3f}"
                     f"{'':22s}{row['pre_mean']:6.2f} +- {row['pre_std']:.2f}   [{row['pre_lower']:.1f}, {row['pre_upper']:.1f}]")  # fmt: skip
    lines.append(f"  Post-LN mean over layers {summary['post_mean_over_layers']:.3f} (paper {expectation:g})")
    lines.append(f"LayerNorm Jacobian, d {summary['d']} (seed {summary['seeds'][0]}):")
    lines.append("  ||x||_2     ||J_LN(x)||_2   sqrt(d)/||x||   ratio")
    for row in summary["layernorm"]:
        lines.append(f"  {row['x_norm']:8.2f}   {row['jacobian_norm']:12.5f}   {row['sqrt_d_over_norm']:13.5f}   {row['ratio']:.4f}")
    lines.append(f"  ratio over all seeds and scales: {summary['jacobian_ratio_min']:.4f} to {summary['jacobian_ratio_max']:.4f}")
    return lines
