"""Issue 46 finding 4 (the verdict engine, round four): a layout file's claim numbers are checked when the config is
validated, and the claims are frozen into sweep.json when a sweep starts, so the report decides from that record."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from tests.layouts.test_user_claims import EXAMPLE
from tests.layouts.test_user_layout import write_config


# Finding 4: a layout file's numbers are checked when the config is validated.

BAD_NUMBERS = {
    "inf margin": ('"kind": "no_warmup", "margin_bits": float("inf")', "'margin_bits', a finite number >= 0"),
    "factor of 1": ('"kind": "converges_faster", "target_loss_bits": 6.5, "speedup": 1.56, "margin_factor": 1',
                    "'margin_factor', a finite number > 1"),
    "factor below 1": ('"kind": "converges_faster", "target_loss_bits": 6.5, "speedup": 1.56, "margin_factor": 0.9',
                       "'margin_factor', a finite number > 1"),
    "zero speedup": ('"kind": "converges_faster", "target_loss_bits": 6.5, "speedup": 0, "margin_factor": 1.25',
                     "'speedup', a finite number > 0"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_NUMBERS))
def test_finding_4_a_layout_files_claim_numbers_are_refused_at_config_validation(tmp_path, case, monkeypatch):
    """inf, a factor of 1 (an empty band) or below (an inverted one) and a zero speed-up (a ZeroDivisionError in
    `prelnx report`, exit 70) were accepted; now `prelnx train` refuses the config in one line naming the file and the
    claim, exit 2. (A margin of 0 bits stays valid: a sign claim, "strictly better".) The app and its handler run in
    this process, as tests/layouts/test_user_layout.py's bad layout files do (a child's start costs seconds of
    fairseq imports per case; that test runs the installed entry point in a child once)."""
    numbers, words = BAD_NUMBERS[case]
    claim = f'{{"id": "bad", "claim": "x", {numbers}}}'
    source = EXAMPLE.read_text().replace("    claims = (\n", f"    claims = ({claim},)\n    _unused = (\n", 1)
    (tmp_path / "gated_preln.py").write_text(source)
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["train", "-c", "tiny.yaml"])
    assert done.exit_code == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "gated_preln.py" in line]
    assert lines and "GatedPreLN.claims[0] (bad)" in lines[0] and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr


# Finding 4: the claims are frozen into sweep.json when the sweep starts; the report decides from the record.


def test_finding_4_the_report_decides_from_the_claims_frozen_at_the_sweeps_start(tmp_path):
    """A layout file's margin edited after the runs (0.5 -> 5 bits) decided them (was: "does not hold" at 0.5,
    "holds" at 5, read when the report ran); now the report decides from sweep.json's record and lists the change."""
    import json

    from prelnx.records.frozen_claims import CLAIMS_KEY, current_claims
    from prelnx.report.report import write_report
    from tests.layouts.test_user_claims import _sweep as gated_sweep

    folder = gated_sweep(tmp_path, [5.2, 5.3, 5.25])  # without warm-up 1.2 bits worse: "needs no warm-up" fails
    spec = f"{tmp_path / 'gated_preln.py'}:GatedPreLN"
    index = json.loads((folder / "sweep.json").read_text())
    (folder / "sweep.json").write_text(json.dumps({**index, CLAIMS_KEY: current_claims([spec, "post"])}))
    source = (tmp_path / "gated_preln.py").read_text()
    edited = source.replace('"kind": "no_warmup", "margin_bits": 0.5', '"kind": "no_warmup", "margin_bits": 5', 1)
    assert edited != source
    (tmp_path / "gated_preln.py").write_text(edited)
    report = write_report(folder, tmp_path / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| **Gated Pre-LN**") and "needs no" in line)
    assert row.endswith("| **does not hold** |") and "claimed < +0.50" in row, row
    assert f"- changed: {spec}#gated_preln_no_warmup: margin_bits 0.5 -> 5" in report


def test_finding_4_a_sweep_freezes_its_claims_once_and_a_resumed_sweep_keeps_them(tmp_path, monkeypatch):
    import json

    from prelnx.config.schema import Config
    from prelnx.records.frozen_claims import CLAIMS_KEY
    from prelnx.sweep.execute import save_spec
    from prelnx.sweep.spec import SweepPoint, SweepSpec

    spec, points = SweepSpec("s", tmp_path / "base.yaml"), [SweepPoint("a", {}, Config())]
    save_spec(tmp_path, spec, points)
    record = json.loads((tmp_path / "sweep.json").read_text())[CLAIMS_KEY]
    assert record["paper"]["training"][0]["id"] == "postln_adam_needs_warmup" and record["methods"]
    record["paper"]["training"][0]["margin_bits"] = 0.25  # as if paper.yaml had said 0.25 when the sweep started
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "s", "runs": [], CLAIMS_KEY: record}))
    save_spec(tmp_path, spec, points)  # resumed: the record it started with stays
    assert json.loads((tmp_path / "sweep.json").read_text())[CLAIMS_KEY]["paper"]["training"][0]["margin_bits"] == 0.25
