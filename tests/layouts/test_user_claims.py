"""A user's layout file declares its own claims (the class's `claims`, prelnx.layouts.CLAIM_KINDS) and `prelnx report`
decides them on a sweep that has the arms, as it decides methods.yaml's; a malformed claim is one line naming the file
(tests/layouts/test_user_layout.py runs the CLI on bad files)."""

from __future__ import annotations

import shutil

import pytest

from prelnx.layouts import CLAIM_KINDS, LayoutFileError, user_layout
from prelnx.report.report import write_report
from prelnx.report.warmup_free import CHECKS
from tests.conftest import REPO
from tests.report.runs import Sweep, write_dictionary

EXAMPLE = REPO / "examples" / "gated_preln.py"


def test_every_kind_a_file_may_declare_is_one_the_report_decides():
    assert set(CLAIM_KINDS) <= set(CHECKS)


def _sweep(tmp_path, gated_no_warmup: list[float]):
    """Post-LN with and without warm-up, the example with and without, 3 seeds each, lr 1e-3 (hand-written runs)."""
    shutil.copy(EXAMPLE, tmp_path / "gated_preln.py")
    spec = f"{tmp_path / 'gated_preln.py'}:GatedPreLN"
    sweep = Sweep(tmp_path / "sweep", tmp_path / "data")
    write_dictionary(tmp_path / "data")
    sweep.seeds("post", 200, [4.0, 4.1, 4.05])
    sweep.seeds("post", 0, [4.6, 4.7, 4.65])
    sweep.seeds(spec, 200, [3.9, 4.0, 3.95])
    sweep.seeds(spec, 0, gated_no_warmup)
    return sweep.save()


def _verdicts(report: str) -> dict[str, str]:
    rows = [line for line in report.splitlines() if line.startswith("| **Gated Pre-LN**: ")]
    return {row.split("|")[1].strip(): row.rstrip(" |").rsplit("|", 1)[1].strip() for row in rows}


def test_the_files_claims_are_decided_in_the_report(tmp_path):
    report = write_report(_sweep(tmp_path, [3.95, 4.0, 4.02]), tmp_path / "report.md").read_text()
    assert "## Your layouts' claims" in report and "## Warm-up-free methods" not in report
    verdicts = _verdicts(report)
    assert len(verdicts) == 2, report
    no_warmup = next(v for k, v in verdicts.items() if "needs no warm-up" in k)
    matches = next(v for k, v in verdicts.items() if "Post-LN with warm-up" in k)
    assert no_warmup == "**holds**" and matches == "**holds**", verdicts


def test_a_file_with_options_is_compared_with_post_ln(tmp_path):
    """A file's options (the starting file of `layouts new` has one) are its recipe, as a shipped layout's are: its
    claim against Post-LN was 'not measured: the arms this claim compares differ in model.gate_init'."""
    sweep = _sweep(tmp_path, [3.95, 4.0, 4.02])
    text = (tmp_path / "gated_preln.py").read_text().replace("import LayoutScheme,", "import LayoutScheme, Option,")
    (tmp_path / "gated_preln.py").write_text(text.replace("    def build_layer", "    options = (Option('gate_init', "
                                                          "0.0, 'the gates at initialisation'),)\n\n    def build_layer"))
    for run in sweep.iterdir():  # the runs' configs name the option's value, as a run dir's config.yaml does
        if run.name.startswith("GatedPreLN"):
            (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("model:", "model:\n  gate_init: 0.0"))
    verdicts = _verdicts(write_report(sweep, tmp_path / "report.md").read_text())
    assert next(v for k, v in verdicts.items() if "Post-LN with warm-up" in k) == "**holds**", verdicts


def test_runs_of_two_versions_of_the_file_are_two_arms_never_pooled(tmp_path):
    """A run records its file's sha256 (layout.sha256): one sum on every run groups as before; seeds trained after
    the file was edited are an arm of their own, labelled by its short sum, and no claim pools them with the others
    (on the old code: one no-warm-up arm of 3 seeds of two codes, 'holds')."""
    sweep = _sweep(tmp_path, [3.95, 4.0, 4.02])
    file = tmp_path / "gated_preln.py"
    for run in sweep.glob("GatedPreLN_*"):
        (run / "layout.sha256").write_text(f"{'a' * 64}  {file}\n")
    assert set(_verdicts(write_report(sweep, tmp_path / "report.md").read_text()).values()) == {"**holds**"}
    for run in sweep.glob("GatedPreLN_adam_w0_*_s[23]"):  # trained after the file was edited
        (run / "layout.sha256").write_text(f"{'b' * 64}  {file}\n")
    report = write_report(sweep, tmp_path / "report.md").read_text()
    arms = [row.split("|")[1:3] for row in report.splitlines() if row.startswith("| Gated Pre-LN adam lr 0.001, no ")]
    assert arms == [[" Gated Pre-LN adam lr 0.001, no warm-up (layout.sha256 aaaaaaaa) ", " 1 "],
                    [" Gated Pre-LN adam lr 0.001, no warm-up (layout.sha256 bbbbbbbb) ", " 2 "]], report
    no_warmup = next(v for k, v in _verdicts(report).items() if "needs no warm-up" in k)
    assert no_warmup == "**inconclusive (1 seed)**", report  # decided on the seed of the warm-up arm's code alone


def test_a_claim_the_runs_contradict_does_not_hold(tmp_path):
    report = write_report(_sweep(tmp_path, [5.2, 5.3, 5.25]), tmp_path / "report.md").read_text()
    verdicts = _verdicts(report)
    assert next(v for k, v in verdicts.items() if "needs no warm-up" in k) == "**does not hold**", verdicts


BAD_CLAIMS = {
    "kind": ('{"id": "a", "kind": "faster", "claim": "x"}', "kind 'faster'; one of no_warmup, matches_postln"),
    "number": ('{"id": "a", "kind": "no_warmup", "claim": "x"}', "no_warmup needs 'margin_bits', a finite number >= 0"),
    "id": ('{"id": "a", "kind": "no_warmup", "claim": "x", "margin_bits": 1}, '
           '{"id": "a", "kind": "no_warmup", "claim": "y", "margin_bits": 1}', "id 'a' is used twice"),
    "words": ('{"id": "a", "kind": "no_warmup", "margin_bits": 1}', "'claim': the claim in words"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_CLAIMS))
def test_a_malformed_claim_is_one_line_naming_the_file_and_the_claim(tmp_path, case):
    claims, words = BAD_CLAIMS[case]
    source = EXAMPLE.read_text().replace("    claims = (\n", f"    claims = ({claims},)\n    _unused = (\n", 1)
    (tmp_path / "gated_preln.py").write_text(source)
    with pytest.raises(LayoutFileError) as error:
        user_layout(f"{tmp_path / 'gated_preln.py'}:GatedPreLN")
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'gated_preln.py'}: GatedPreLN.claims[")
    assert words in message, message
