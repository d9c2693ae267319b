"""The look-by-look sweep (prelnx/sweep/looks.py) with the report's real decider, on run dirs written by hand per
scheduled run (the trainings are faked by their records; tests/sweep/test_sequential_sweep.py trains for real)."""

from __future__ import annotations

import json

import pytest
import yaml

from prelnx.records.run_config import write_run_config
from prelnx.report.sequential import decide_look
from prelnx.sequential import ClaimState
from prelnx.sweep.execute import save_index
from prelnx.sweep.looks import LOOKS_FILE, look_lines, plan_lines, read_state, run_looks
from prelnx.sweep.spec import expand_arms, load_spec
from tests.conftest import TINY
from tests.helpers import config_writer
from tests.report.runs import write_dictionary

Z = (0.9, -1.1, 0.3, -0.4, 1.4, -0.7, 0.1, -0.5)  # a seed's standard score, the same in every arm
FINALS = {"post_w0": (6.5, 0.05), "post_w4000": (4.0, 0.3), "pre_w0": (4.2, 0.3)}  # mean, sd of the final loss


def spec_file(tmp_path, tiny_config_file, seeds):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "looks", "base": str(tiny_config_file()), "seeds": seeds, "arms": {
        "post_w0": {"schedule.warmup_updates": 0},
        "post_w4000": {"schedule.warmup_updates": 4000},
        "pre_w0": {"model.layout": "pre"}}}))  # fmt: skip
    return path


def fake_training(sweep_dir, stop_after=None):
    """Write each run's records as a finished training of 3 validations to its arm's final loss for its seed."""
    written = []

    def run_points(points):
        for point in points:
            if stop_after is not None and len(written) >= stop_after:
                raise KeyboardInterrupt
            arm, seed = point.name.rsplit("_seed-", 1)
            run = sweep_dir / point.name
            if (run / "status.json").is_file():
                continue  # finished: the executor skips it
            run.mkdir(parents=True)
            write_run_config(run, point.config)
            mean, sd = FINALS[arm]
            final = mean + sd * Z[int(seed) - 1]
            rows = [{"epoch": e + 1, "num_updates": 10 * (e + 1), "valid_loss": loss, "valid_nll_loss": loss - 0.3}
                    for e, loss in enumerate((9.0, (9.0 + final) / 2, final))]  # fmt: skip
            (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            (run / "status.json").write_text(json.dumps({"status": "finished", "update": 30, "reason": ""}))
            written.append(point.name)

    return run_points, written


def run(tmp_path, tiny_config_file, folder, seeds=None, stop_after=None):
    spec = load_spec(spec_file(tmp_path, tiny_config_file, seeds or {"looks": [4, 6, 8]}))
    arms = expand_arms(spec)
    sweep_dir = tmp_path / folder
    write_dictionary(sweep_dir / "data", arms[0].config.data.target_lang or "tgt")  # the unigram plateau: 8.30 bits
    run_points, written = fake_training(sweep_dir, stop_after)
    state = run_looks(spec, sweep_dir, arms, spec.plan, decide_look, run_points,
                      lambda points: save_index(sweep_dir, spec, points))
    return state, written, sweep_dir


def runs_of(sweep_dir):
    names = [p["name"] for p in json.loads((sweep_dir / "sweep.json").read_text())["runs"]]
    return {arm: sum(n.startswith(f"{arm}_seed-") for n in names) for arm in FINALS}


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """(state, written, sweep_dir): the plan run look by look to its end, never stopped, once for the tests that only
    read it (the tiny config as tiny_config_file writes it); a test's stopped and resumed sweeps are its own."""
    folder = tmp_path_factory.mktemp("looks")
    return run(folder, config_writer(TINY, folder, "tiny.yaml"), "whole")


def test_seeds_go_only_to_the_arms_an_open_claim_reads(whole):
    state, written, sweep_dir = whole
    needs = state.claims["postln_adam_needs_warmup"]
    assert (needs.state, needs.verdict, needs.look, needs.runs) == (ClaimState.DECIDED, "holds", 0, 8)
    matches = state.claims["preln_without_warmup_matches"]
    assert set(matches.arms) == {"pre_w0", "post_w4000"} and matches.look > 0
    assert runs_of(sweep_dir)["post_w0"] == 4  # decided at the first look: no seed more
    assert runs_of(sweep_dir)["pre_w0"] > 4 and len(written) == sum(runs_of(sweep_dir).values())
    assert "layout_matters_more_than_optimizer" not in state.claims  # not a claim of these arms
    assert state.done and read_state(sweep_dir) == state
    assert any("postln_adam_needs_warmup: decided at look 1" in line for line in look_lines(sweep_dir))


@pytest.mark.parametrize("stop_after", [5, 13])  # a kill in the first look, and in the second
def test_a_killed_sweep_resumes_to_the_same_looks(tmp_path, tiny_config_file, stop_after, whole):
    ended, _, whole_dir = whole
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, tiny_config_file, "killed", stop_after=stop_after)
    halfway = read_state(tmp_path / "killed")
    assert halfway is not None and not halfway.done
    resumed, written, killed_dir = run(tmp_path, tiny_config_file, "killed")
    assert resumed.claims == ended.claims and runs_of(killed_dir) == runs_of(whole_dir)
    assert len(written) == sum(runs_of(whole_dir).values()) - stop_after  # nothing trained twice


def test_a_fixed_list_is_one_look(tmp_path, tiny_config_file):
    spec = load_spec(spec_file(tmp_path, tiny_config_file, [1, 2, 3]))
    arms = expand_arms(spec)
    lines = plan_lines(spec, arms, spec.plan)
    assert "seeds: fixed, seeds 1, 2, 3" in lines[0] and lines[-1] == "at most: 9 runs (3 arms x 3 seeds)"


def test_dry_run_lines_of_a_plan(tmp_path, tiny_config_file):
    spec = load_spec(spec_file(tmp_path, tiny_config_file, {"looks": [4, 6, 8]}))
    lines = plan_lines(spec, expand_arms(spec), spec.plan)
    assert "3 looks at 4, 6, 8 seeds per arm" in lines[0]
    assert "  look 1: 4 seeds per arm, nominal one-sided level 0.0015 per side" in lines
    assert lines[-2].startswith("first look: 12 runs: post_w0_seed-1, post_w4000_seed-1, pre_w0_seed-1,")
    assert lines[-1] == "at most: 24 runs (3 arms x 8 seeds)"
    assert not (tmp_path / LOOKS_FILE).exists()


def test_the_report_lines_say_how_each_claim_was_decided(tmp_path, whole):
    from prelnx.report.sequential import how_decided

    _, _, sweep_dir = whole
    lines = how_decided(sweep_dir)
    assert lines[0].endswith("A fixed design with the plan's 80 % power: 8 seeds per arm.")
    assert ("- postln_adam_needs_warmup: decided at look 1 of 3 (4 seeds per arm): holds, on 8 runs of 2 arm(s); "
            "a fixed design: 16 runs") in lines  # fmt: skip
    assert how_decided(tmp_path) == []


def test_status_does_not_call_a_stopped_sweeps_look_running(tmp_path):
    """looks.json of a sweep whose look has not ended (a killed sweep, or one training now): whether anything trains
    is the runs' table's to say (status.json and its lock), not the look's line."""
    (tmp_path / LOOKS_FILE).write_text(json.dumps({"look": 0, "looks": [2, 3], "method": "obrien-fleming",
                                                   "claims": {}, "running": {}, "done": False}))  # fmt: skip
    assert look_lines(tmp_path) == ["look 1 of 2 (2 seeds per arm), not ended"]
