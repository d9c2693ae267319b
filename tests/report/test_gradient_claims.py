"""Figure 3's verdicts from a gradient study's files (hand-made grads.csv and grads_summary.json: no models), and
the record of which model code each layout ran (prelnx grads' settings.models) that a disagreeing verdict cites."""

from __future__ import annotations

import json

import pytest
import yaml

from prelnx.analysis.grads.study import model_code
from prelnx.analysis.grads.summary import csv_text
from prelnx.config.load import load_config
from prelnx.report.theory_claims import GRADIENT_CHECKS, load_gradient_summary
from prelnx.paper import paper_data
from prelnx.report.render import claims_table, interval_text
from prelnx.report.stats import Verdict
from tests.conftest import TINY

SPECS = {claim["id"]: claim for claim in paper_data()["gradients"]}


def write_study(folder, models):
    """Depths 2 and 6, seeds 1-4: Post-LN grows with the layer and is flat in depth; Pre-LN falls with both."""
    rows = []
    for layout in ("post", "pre"):
        for depth in (2, 6):
            for seed in (1, 2, 3, 4):
                for layer in range(1, depth + 1):
                    up = (layer - 1) / (depth - 1)
                    if layout == "post":  # last layer 1.95 at every depth; last / first 2.8
                        norm = 0.7 + 1.25 * up
                    else:  # last / first 0.67; the last layer's falls like sqrt(1 / depth)
                        norm = (1.8 - 0.6 * up) * (2 / depth) ** 0.5
                    norm *= 1 + 0.01 * seed * (layer == depth) * depth / 6  # seed noise on the last layer
                    for weight in ("W1", "W2"):
                        rows.append({"layout": layout, "depth": depth, "seed": seed, "side": "decoder",
                                     "layer": layer, "weight": weight, "grad_norm": norm})  # fmt: skip
    (folder / "grads.csv").write_text(csv_text(rows))
    summary = {"depths": [2, 6], "growth_depth": 6, "last_layer_w2": {"post": {}, "pre": {}},
               "growth_last_over_first_layer": {"post": {}, "pre": {}}, "settings": {"models": models}}  # fmt: skip
    (folder / "grads_summary.json").write_text(json.dumps(summary))


def test_figure3_verdicts_from_per_seed_ratios_and_the_plain_fairseq_note(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(TINY))
    models = {layout: model_code(load_config(config)[0], layout) for layout in ("post", "pre")}
    # the paper's two layouts run fairseq's own transformer; Pre-LN is fairseq's normalize-before flags
    assert models["post"]["fairseq_model"] and models["pre"]["fairseq_model"] and not models["post"]["flags"]
    assert models["pre"]["flags"] == ["--encoder-normalize-before", "--decoder-normalize-before"]
    assert not model_code(load_config(config)[0], "deepnorm")["fairseq_model"]  # the plugin's model
    write_study(tmp_path, models)
    summary = load_gradient_summary(tmp_path)
    outcomes = {key: check(summary, SPECS[key]) for key, check in GRADIENT_CHECKS.items()}
    assert outcomes["postln_last_layer_flat_in_depth"].verdict is Verdict.HOLDS
    assert outcomes["preln_last_layer_falls_with_depth"].verdict is Verdict.HOLDS
    grows = outcomes["postln_grows_with_layer"]
    assert [case.verdict for case in grows.cases] == [Verdict.HOLDS, Verdict.DOES_NOT_HOLD]  # Pre-LN falls: 0.67 + noise
    assert grows.verdict is Verdict.DOES_NOT_HOLD and grows.cases[1].comparison.a.n == 4
    assert interval_text(grows.cases[0].comparison) == "2.86 [95 % CI 2.80, 2.91]"  # a ratio: a level, unsigned
    row = claims_table(paper_data()["gradients"], outcomes)[-1]
    assert "**Plain fairseq disagrees too**" in row and "--decoder-normalize-before" in row
    assert "Plain fairseq" not in claims_table(paper_data()["gradients"], outcomes)[2]  # only where it disagrees


def test_a_study_that_did_not_record_its_models_says_so(tmp_path):
    write_study(tmp_path, None)
    summary = load_gradient_summary(tmp_path)
    outcome = GRADIENT_CHECKS["postln_grows_with_layer"](summary, SPECS["postln_grows_with_layer"])
    assert any("not recorded in this grads_summary.json" in note for note in outcome.notes)


def test_a_folder_with_no_study_is_a_refusal_naming_the_missing_file(tmp_path):
    """Bad input for `prelnx report --grads`: one Refusal (exit 2, no traceback), not a bare ValueError."""
    from prelnx.exits import Refusal

    with pytest.raises(Refusal, match=r"--grads .*: no grads_summary\.json \(run `prelnx grads"):
        load_gradient_summary(tmp_path)
    (tmp_path / "grads_summary.json").write_text("{}")
    with pytest.raises(Refusal, match=r"no grads\.csv"):
        load_gradient_summary(tmp_path)
