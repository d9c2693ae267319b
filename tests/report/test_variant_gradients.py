"""Figure 3 per normalisation variant (docs/protocols/norm_variants.md, "The gradients"): paper.yaml's three gradient
claims decided on each variant's folder through prelnx.report.theory_claims, the report rebuilt from the folders
alone by scripts/rebuild_reports.py. The fixture is real `prelnx grads` output (tests/report/fixtures/
variant_gradients/README.md): LayerNorm (Post-LN, Pre-LN, DeepNorm; machine.json written first, as the study does)
and DyT (Post-LN, Pre-LN; no machine.json), 3 seeds at depths 6 and 10 - between them every verdict a claim reaches:
holds, does not hold (DyT's Pre-LN rises with depth), inconclusive; a variant with no folder is not measured."""

from __future__ import annotations

import csv
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from prelnx.exits import Refusal
from prelnx.report import variant_gradients as vg
from prelnx.report.stats import Verdict

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "variant_gradients"
STUDY = "norm_variants_gradients"


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rebuild_reports = _script("rebuild_reports")
H, N, I = Verdict.HOLDS, Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE


@pytest.fixture
def root(tmp_path):
    """A repository root with the fixture's variant folders collected into docs/results/norm_variants_gradients/."""
    kept, skipped = rebuild_reports.collect_gradients(FIXTURE, STUDY, tmp_path)
    assert [p.name for p in kept] == ["layernorm", "dyt"]
    assert skipped == ["rmsnorm: no such folder; not collected", "qknorm: no such folder; not collected"]
    return tmp_path


def _w2(folder, layout, depth, layer):
    """seed -> the decoder W2 gradient norm, read straight from grads.csv (not through the code under test)."""
    with (folder / "grads.csv").open() as handle:
        return {int(r["seed"]): float(r["grad_norm"]) for r in csv.DictReader(handle)
                if (r["layout"], int(r["depth"]), r["side"], int(r["layer"]), r["weight"])
                == (layout, depth, "decoder", layer, "W2")}  # fmt: skip


def _verdicts(raw):
    """variant folder -> claim id -> verdict (what a reader of the summary table sees), for the measured variants."""
    return {r.variant.folder: {key: o.verdict for key, o in r.outcomes.items()} for r in vg.decide(raw) if r.summary}


def test_each_variant_s_post_ln_and_pre_ln_decide_the_three_claims_from_their_own_seeds(root):
    raw = rebuild_reports.raw_dir(STUDY, root)
    assert _verdicts(raw) == {
        "layernorm": {"postln_last_layer_flat_in_depth": H, "preln_last_layer_falls_with_depth": I,
                      "postln_grows_with_layer": I},
        "dyt": {"postln_last_layer_flat_in_depth": H, "preln_last_layer_falls_with_depth": N,
                "postln_grows_with_layer": H},
    }  # fmt: skip
    results = {r.variant.folder: r for r in vg.decide(raw)}
    assert results["rmsnorm"].summary is None and vg.reading(results["rmsnorm"]) == "no raw data yet"
    dyt = results["dyt"].outcomes
    # the per-seed ratios are the last layer's at the deepest over the shallowest depth, and last over first layer
    for layout, claim, case in (("post", "postln_last_layer_flat_in_depth", 0),
                                ("pre", "preln_last_layer_falls_with_depth", 0)):  # fmt: skip
        deep, shallow = _w2(raw / "dyt", layout, 10, 10), _w2(raw / "dyt", layout, 6, 6)
        values = dyt[claim].cases[case].comparison.a.values
        assert values == pytest.approx([deep[s] / shallow[s] for s in (1, 2, 3)])
    last, first = _w2(raw / "dyt", "post", 6, 6), _w2(raw / "dyt", "post", 6, 1)
    grows = dyt["postln_grows_with_layer"].cases[0].comparison
    assert grows.a.values == pytest.approx([last[s] / first[s] for s in (1, 2, 3)]) and grows.a.n == 3
    # DyT's Pre-LN rises with depth: "falls" does not hold, and its 1/sqrt(L) rate is read against 0.77
    falls = dyt["preln_last_layer_falls_with_depth"]
    assert falls.cases[0].comparison.low > 0.75 and falls.cases[1].label == "like 1/sqrt(L)"
    assert "1/sqrt(L) predicts 0.77" in falls.notes
    assert vg.reading(results["dyt"]).startswith("loses Pre-LN falls with depth: changes")
    assert vg.reading(results["layernorm"]) == ("not settled: Pre-LN falls with depth inconclusive, "
                                                "Post-LN grows with the layer, Pre-LN flat inconclusive")  # fmt: skip


def test_the_report_shows_each_variant_its_cpu_and_deepnorm_undecided(root):
    out = rebuild_reports.rebuild(STUDY, root)
    assert out == root / "docs/results/norm_variants_gradients.md"
    text = out.read_text()
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    assert "**does not hold**" in rows["DyT"] and "loses Pre-LN falls with depth" in rows["DyT"]
    assert rows["DyT"].count("**holds**") == 2 and "| 1-3 | 6, 10 |" in rows["DyT"]
    assert "not measured" in rows["RMSNorm"] and "no raw data yet" in rows["QK-Norm"]
    assert "Not measured yet: no norm_variants_gradients/rmsnorm/ with grads.csv and grads_summary.json." in text
    assert "CPU: AMD EPYC (avx512_bf16), 2 cores, 2026-12-06T19:50:04." in text  # layernorm's machine.json
    assert "CPU: not recorded (no machine.json)." in text  # dyt has none
    # the claims tables: each paper claim per variant, with its interval, seeds and depths
    assert "| **DyT**: Pre-LN's last-layer W2 gradient norm shrinks as the depth grows, like 1/sqrt(L). |" in text
    assert "Pre-LN last-layer W2, 10 / 6 layers: 1.13 (3 seeds): 1.13 [95 % CI 0.91, 1.34]" in text
    # DeepNorm: shown with its ratios, never a claim row or a verdict
    assert "DeepNorm (a Post-LN placement, measured beside them): shown, not decided" in text
    assert re.search(r"- DeepNorm last-layer W2, 10 / 6 layers: 0\.76 \[95 % CI 0\.6\d, 0\.8\d\] \(3 seeds\)", text)
    assert not any("DeepNorm" in line for line in text.splitlines() if line.startswith("| **"))
    assert f"What each outcome means (the protocol): {vg.MEANING}" in text


def test_the_outcomes_meaning_is_the_protocols_own_words():
    protocol = " ".join((ROOT / "docs/protocols/norm_variants.md").read_text().split())
    assert vg.MEANING.replace("\\", "") in protocol.replace("What each outcome would mean: a", "A")


def test_the_variant_folders_stay_out_of_the_papers_claims_table(root):
    claims_table = _script("claims_table")
    assert claims_table.analysis_rows(root) == []  # one level down: not read
    shutil.copytree(FIXTURE / "dyt", root / "docs/results/dyt_flat")  # the same folder one level up would be
    assert {row.claim for row in claims_table.analysis_rows(root)} == set(vg.SHORT)


def test_collect_check_and_the_one_variant_that_finished_since(root, tmp_path):
    raw = rebuild_reports.raw_dir(STUDY, root)
    assert sorted(p.name for p in (raw / "layernorm").iterdir()) == sorted(vg.RAW_FILES)  # no figure3.png
    assert sorted(p.name for p in (raw / "dyt").iterdir()) == sorted(set(vg.RAW_FILES) - {"machine.json"})
    rebuild_reports.rebuild(STUDY, root)
    assert rebuild_reports.check([STUDY], root) == []
    report = root / "docs/results/norm_variants_gradients.md"
    report.write_text(report.read_text().replace("**does not hold**", "**holds**"))
    assert rebuild_reports.check([STUDY], root) == ["docs/results/norm_variants_gradients.md: differs from its rebuild"]
    assert rebuild_reports.main(["--check", "--study", STUDY], root) == 1
    # later: rmsnorm finished, qknorm still running (its machine.json and output only); layernorm/dyt not re-collected
    later = tmp_path / "later"
    shutil.copytree(FIXTURE / "dyt", later / "rmsnorm")
    (later / "qknorm").mkdir()
    shutil.copy(FIXTURE / "layernorm" / "machine.json", later / "qknorm")
    kept, skipped = rebuild_reports.collect_gradients(later, STUDY, root)
    assert [p.name for p in kept] == ["rmsnorm"]
    assert "qknorm: not finished (no grads.csv, grads_summary.json); not collected" in skipped
    assert set(_verdicts(raw)) == {"layernorm", "rmsnorm", "dyt"}  # the earlier folders kept
    assert rebuild_reports.main(["--study", STUDY], root) == 0 and rebuild_reports.check([STUDY], root) == []


def test_bad_input_is_one_line_naming_what_is_valid(tmp_path, capsys):
    assert rebuild_reports.main(["--study", "cpu_norm_variants"], tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cpu_norm_variants: no raw data (docs/results/cpu_norm_variants/runs/" in err
    assert "--collect <its sweep dir> --study cpu_norm_variants" in err and "Traceback" not in err
    assert rebuild_reports.main(["--study", STUDY], tmp_path) == 2
    assert "no raw data in docs/results/norm_variants_gradients/" in capsys.readouterr().err
    assert rebuild_reports.main(["--collect", str(tmp_path / "nowhere"), "--study", STUDY], tmp_path) == 2
    assert "no such folder (give the folder holding the variant folders layernorm" in capsys.readouterr().err
    assert rebuild_reports.main(["--collect", str(tmp_path / "nowhere"), "--study", "demo"], tmp_path) == 2
    assert "not a sweep dir (no sweep.json)" in capsys.readouterr().err
    stray = rebuild_reports.raw_dir(STUDY, tmp_path) / "layer_norm"
    shutil.copytree(FIXTURE / "dyt", stray)
    valid = r"\(valid: dyt, layernorm, qknorm, rmsnorm\)"
    with pytest.raises(Refusal, match=rf"layer_norm: not a variant folder .* {valid}"):
        vg.decide(stray.parent)
