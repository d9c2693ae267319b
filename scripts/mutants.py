"""Mutation testing by a hand-kept list: plausible wrong implementations of the plugin's layouts, optimizers and
schedule and of prelnx/report/stats.py, each applied in a COPY of the repository and run against the quick tests
that should catch it (docs/testing.md lists them and the test that kills each).

    .venv/bin/python scripts/mutants.py                 # every mutant, on a worktree of HEAD in a temp folder
    .venv/bin/python scripts/mutants.py --only mixln_round peri_input_norms_identity
    .venv/bin/python scripts/mutants.py --list

The copy is `git worktree add --detach <tmp> <ref>` (committed code only: never the checkout others are working
in), removed at the end; its tests run with PYTHONPATH at the copy, so prelnx and the plugin import from it. A
mutant is killed when its tests fail (pytest exit 1), survived when they pass; the unmutated selection runs first
(baseline) and must pass, else the mutant is reported as not decided. Exit 1 if any mutant survived.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "prelnx_fairseq_plugin"
RECOMPUTE = "tests/plugin/test_recompute.py"
RECIPES = "tests/plugin/test_warmup_free_recipes.py"
WARMUP_FREE = "tests/plugin/test_warmup_free.py"
RADAM = "tests/plugin/test_radam_first_steps.py"
ADAM = "tests/plugin/test_adam_moments.py"
SCHEDULE = "tests/plugin/test_schedule.py"
STATS = "tests/report/test_stats_reference.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, -k expressions
    what: str


def k(expression: str, *files: str) -> tuple[str, ...]:
    return (*files, "-k", expression)


MUTANTS = (
    # --- the five of issue 39, finding 5
    Mutant("peri_input_norms_identity", f"{PLUGIN}/models/peri.py",
           "        layer.dropout_module = nn.Identity()\n",
           "        layer.dropout_module = nn.Identity()\n"
           "        for name in ('self_attn_layer_norm', 'encoder_attn_layer_norm', 'final_layer_norm'):\n"
           "            if getattr(layer, name, None) is not None:\n                setattr(layer, name, nn.Identity())\n",
           k("peri", RECOMPUTE), "Peri-LN without its input norms (the reordered norm under Peri-LN's name)"),
    Mutant("peri_cross_attention_not_output_normed", f"{PLUGIN}/models/peri.py",
           "return residual + layer.branch_dropout(layer.output_norms[index](x))",
           "return residual + layer.branch_dropout(x if index == 1 and len(layer.output_norms) == 3 "
           "else layer.output_norms[index](x))",
           k("decoder and (peri or reorder)", RECOMPUTE), "the decoder's cross-attention branch without its output norm"),
    Mutant("mixln_round", "prelnx/layouts.py", "return math.floor(alpha * layers + 1e-9)",
           "return round(alpha * layers)", k("mixln", RECOMPUTE), "Mix-LN's Post-LN layer count rounded, not floored"),
    Mutant("residual_dropout_on_x_d", f"{PLUGIN}/models/residual.py",
           "stream.x_d = (layer.layer_input if stream.x_d is None else stream.x_d) + x",
           "stream.x_d = (layer.layer_input if stream.x_d is None else stream.x_d) + "
           "torch.nn.functional.dropout(x, 0.1, layer.training)",
           k("residual", RECOMPUTE), "ResiDual with a dropout on x_d's contributions"),
    Mutant("admin_profile_in_eval_mode", f"{PLUGIN}/models/admin.py", "model.train()  # dropout on",
           "model.eval()  # dropout on", k("profile and tiny", RECIPES), "Admin's profile taken without dropout"),
    Mutant("admin_profile_without_w", f"{PLUGIN}/models/admin.py",
           "shortcut = (residual * layer.admin_w[index]).double()", "shortcut = residual.double()",
           k("profile and tiny", RECIPES), "Admin's recurrence Var(x_i) for Var(x_i * w_i)"),
    Mutant("admin_w_on_the_branch", f"{PLUGIN}/models/admin.py", "return residual * layer.admin_w[index] + x",
           "return residual + layer.admin_w[index] * x", k("admin and encoder", RECOMPUTE), "Admin's w on f(x), not on x"),
    Mutant("admin_ffn_fairseq_init", f"{PLUGIN}/models/admin.py",
           "        xavier_ffn_(layer)\n        count = sublayer_count(layer)\n",
           "        count = sublayer_count(layer)\n", k("xavier and tiny", RECIPES),
           "Admin's FFN left at fairseq's Kaiming-uniform init"),
    # --- the other layouts
    Mutant("reorder_keeps_input_norms", f"{PLUGIN}/models/reorder.py", "setattr(layer, name, nn.Identity())", "pass",
           k("reorder and encoder", RECOMPUTE), "the reordered norm with Pre-LN's input norms kept (Peri-LN)"),
    Mutant("lnscale_l_off_by_one", f"{PLUGIN}/models/lnscale.py", "norm.depth_scale = number**-0.5",
           "norm.depth_scale = (number + 1)**-0.5", k("lnscale and encoder", RECOMPUTE), "LayerNorm Scaling's l counted from 2"),
    Mutant("residual_output_eps", f"{PLUGIN}/models/residual.py", "OUTPUT_NORM_EPS = 1e-7", "OUTPUT_NORM_EPS = 1e-5",
           k("residual_output", RECOMPUTE), "ResiDual's output norm with fairseq's eps 1e-5 for the reference's 1e-7"),
    Mutant("b2t_every_sublayer", f"{PLUGIN}/models/b2t.py", "if index == layer.b2t_last_sublayer:", "if True:",
           k("b2t and encoder", RECOMPUTE), "B2T's input added before every norm, not only the last"),
    Mutant("b2t_no_rescaling", f"{PLUGIN}/models/b2t.py", "B2T_RESCALE = True", "B2T_RESCALE = False",
           k("rescales", WARMUP_FREE), "B2T without the 2023 code's rescaling_init"),
    Mutant("tfixup_decoder_6m", f"{PLUGIN}/models/tfixup.py", "DECODER_DEPTH_FACTOR = 9", "DECODER_DEPTH_FACTOR = 6",
           k("tfixup_has_no", WARMUP_FREE), "T-Fixup's decoder scale (6M)^(-1/4) for (9M)^(-1/4)"),
    Mutant("tfixup_v_proj_gain_kept", f"{PLUGIN}/models/tfixup.py",
           "undo_gain = math.sqrt(2) if attention.qkv_same_dim else 1.0", "undo_gain = 1.0",
           k("tfixup_has_no", WARMUP_FREE), "T-Fixup's v_proj scaled from fairseq's gain-1/sqrt(2) Xavier"),
    Mutant("tfixup_keeps_layer_norms", f"{PLUGIN}/models/tfixup.py", "        drop_layer_norms(layer)\n        scale =",
           "        scale =", k("tfixup and encoder", RECOMPUTE), "T-Fixup with Post-LN's LayerNorms left in"),
    Mutant("rezero_torch_ffn_by_default", "prelnx/layouts.py", 'Option("rezero_ffn_init", "xavier",',
           'Option("rezero_ffn_init", "torch",', k("rezero", WARMUP_FREE), "ReZero's FFN at torch's init"),
    Mutant("rezero_postln_drops_norms", f"{PLUGIN}/models/rezero.py", "keeps_layer_norms = True",
           "keeps_layer_norms = False", k("rezero_postln and encoder", RECOMPUTE), "rezero_postln without Post-LN's norms"),
    Mutant("rezero_scalar_on_the_shortcut", f"{PLUGIN}/models/rezero.py",
           "return residual + layer.rezero_alpha * x", "return layer.rezero_alpha * residual + x",
           k("rezero-encoder", RECOMPUTE), "ReZero's a on the shortcut"),
    Mutant("deepnorm_encoder_alpha", f"{PLUGIN}/models/normalized_transformer.py", "return 0.81 * depth, 0.87 / depth",
           "return depth, 0.87 / depth", k("deepnorm and encoder", RECOMPUTE), "DeepNorm's encoder alpha without the table's 0.81"),
    # --- optimizers
    Mutant("radam_decay_only_without_decay", f"{PLUGIN}/optim/radam.py", "p.data.copy_(weights).mul_(1 - decay)",
           "p.data.copy_(weights)", (RADAM,), "Clinic's first steps without their weight decay"),
    Mutant("radam_first_steps_off_by_one", f"{PLUGIN}/optim/radam.py",
           'step = int(state["step"]) + 1 if "step" in state else 1', 'step = int(state["step"]) if "step" in state else 1',
           (RADAM,), "the unrectified test read for the update before"),
    Mutant("radam_threshold_4", f"{PLUGIN}/optim/radam.py", "RECTIFIED_ABOVE = 5.0", "RECTIFIED_ABOVE = 4.0",
           (RADAM,), "RAdam rectified from rho_t > 4"),
    Mutant("gi_adam_v0_abs", f"{PLUGIN}/optim/adam_moments.py", "else grad.detach().pow(2)", "else grad.detach().abs()",
           (ADAM,), "GI-Adam's v_0 = |g| for g^2"),
    Mutant("adam_bias_correction_first_moment_only", f"{PLUGIN}/optim/adam_moments.py",
           'step_size *= math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])',
           'step_size *= 1 / (1 - beta1 ** state["step"])', (ADAM,), "Adam's bias correction without sqrt(1 - b2^t)"),
    # --- schedule
    Mutant("warmup_off_by_one", f"{PLUGIN}/lr_scheduler/warmup_decay.py",
           "(peak - cfg.warmup_init_lr) * num_updates / warmup", "(peak - cfg.warmup_init_lr) * (num_updates + 1) / warmup",
           (SCHEDULE,), "the linear warm-up one update ahead"),
    Mutant("inverse_sqrt_off_by_one", f"{PLUGIN}/lr_scheduler/warmup_decay.py",
           "return peak * (start / max(num_updates, start)) ** 0.5", "return peak * (start / max(num_updates + 1, start)) ** 0.5",
           (SCHEDULE,), "the inverse-sqrt decay one update ahead"),
    Mutant("linear_decay_span", f"{PLUGIN}/lr_scheduler/warmup_decay.py", "max(cfg.max_update - warmup, 1)",
           "max(cfg.max_update, 1)", (SCHEDULE,), "the linear decay's span counted from update 0, not the warm-up's end"),
    # --- prelnx/report/stats.py
    Mutant("stats_pooled_df", "prelnx/report/stats.py",
           "return math.sqrt(va + vb), (va + vb) ** 2 / (va**2 / (a.measured - 1) + vb**2 / (b.measured - 1))",
           "return math.sqrt(va + vb), float(a.measured + b.measured - 2)", (STATS,),
           "Welch's interval with the pooled test's n_a + n_b - 2 degrees of freedom"),
    Mutant("stats_population_variance", "prelnx/report/stats.py",
           "va, vb = statistics.variance(a.values) / a.measured, statistics.variance(b.values) / b.measured",
           "va, vb = statistics.pvariance(a.values) / a.measured, statistics.pvariance(b.values) / b.measured",
           (STATS,), "Welch's variances without Bessel's correction"),
    Mutant("stats_one_sample_df_n", "prelnx/report/stats.py", "float(a.measured - 1)", "float(a.measured)",
           (STATS,), "a one-sample t interval with n degrees of freedom"),
    Mutant("stats_one_sided_quantile", "prelnx/report/stats.py",
           "half = (float(t_quantile(df)) * se if se else 0.0) + grain",
           "half = (float(t_quantile(df, 2 * LEVEL - 1)) * se if se else 0.0) + grain",
           (STATS,), "a claim's 95 % interval from the one-sided quantile"),
    Mutant("interval_df_n", "prelnx/interval.py", "t_quantile(len(values) - 1, level)", "t_quantile(len(values), level)",
           (STATS,), "the one t interval (report, fine-tuning summary) with n degrees of freedom"),
)


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow", *tests]
    started = time.monotonic()
    result = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True)
    return result.returncode, time.monotonic() - started


def mutate(copy: Path, mutant: Mutant) -> str:
    path = copy / mutant.path
    text = path.read_text()
    if text.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.name}: the original text occurs {text.count(mutant.old)} times in {mutant.path}")
    path.write_text(text.replace(mutant.old, mutant.new))
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="mutant names (default: all)")
    parser.add_argument("--ref", default="HEAD", help="the commit to mutate (default HEAD)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated runs (they passed at --ref)")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.list or not chosen:
        for m in MUTANTS:
            print(f"{m.name}: {m.what}  [{' '.join(m.tests)}]")
        return 0
    copy = Path(tempfile.mkdtemp(prefix="prelnx-mutants-")) / "repo"
    subprocess.run(["git", "worktree", "add", "--detach", str(copy), args.ref], cwd=REPO, check=True, capture_output=True)
    baseline: dict[tuple[str, ...], int] = {}
    survived = 0
    try:
        for m in chosen:
            if m.tests not in baseline:
                baseline[m.tests] = 0 if args.no_baseline else run_tests(copy, m.tests)[0]
            original = mutate(copy, m)
            try:
                code, seconds = run_tests(copy, m.tests)
            finally:
                (copy / m.path).write_text(original)
            if baseline[m.tests] != 0:
                verdict = f"not decided (the unmutated tests exit {baseline[m.tests]})"
            else:
                verdict = "killed" if code == 1 else ("survived" if code == 0 else f"error (pytest exit {code})")
            survived += verdict == "survived"
            print(f"{m.name}: {verdict} ({seconds:.0f} s)  [{' '.join(m.tests)}]  {m.what}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(copy)], cwd=REPO, capture_output=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
