"""The layout table (prelnx/layouts.py) is the one list of layouts: the config's checks, the plan, the plots and the
plugin's scheme registry read it; and its loader of a user's file is safe in a sweep's threads."""

from __future__ import annotations

import dataclasses
import sys
import threading
import typing

import pytest

from prelnx.config.schema import Config, ModelConfig, TrainConfig, check_values
from prelnx.layouts import LAYOUTS, PLACEMENT, STATISTICAL, TRANSLATION, Layout, LayoutFileError, load_module


def config_of(task: str = "translation", **model) -> Config:
    return Config(task=task, model=dataclasses.replace(ModelConfig(), **model), train=TrainConfig(max_epoch=1))


def test_every_row_speaks_the_schemas_vocabulary():
    norms = typing.get_args(typing.get_type_hints(ModelConfig)["norm"])
    tasks = typing.get_args(typing.get_type_hints(Config)["task"])
    colours = [row.colour for row in LAYOUTS.values()]
    assert len(set(colours)) == len(colours)  # every layout its own colour in a figure
    for name, row in LAYOUTS.items():
        assert row.name == name and set(row.tasks) <= set(tasks) and set(row.norms) <= set(norms), name
        assert not check_values(config_of(norm=row.norms[0], layout=name)), name  # each row trains as the table says


def test_a_new_row_is_read_by_the_checks_the_plan_and_the_plots(monkeypatch):
    from prelnx.plan.common import normalize_before_argv, variant_argv
    from prelnx.plots.gradients import colour

    monkeypatch.setitem(LAYOUTS, "toy", Layout("toy", "Toy-LN", PLACEMENT, TRANSLATION, ("rmsnorm",), False, True, "black"))
    assert check_values(config_of(layout="toy", norm="rmsnorm")) == []
    assert [key for key, _ in check_values(config_of(layout="toy"))] == ["model.norm"]  # layernorm: not its row's
    assert [key for key, _ in check_values(config_of(layout="toy", norm="rmsnorm", qk_norm=True))] == ["model.qk_norm"]
    lm = config_of("language_model", layout="toy", norm="rmsnorm", arch="transformer_lm", encoder_layers=None)
    assert ("model.layout" in {key for key, _ in check_values(lm)})  # the row says translation only
    config = config_of(layout="toy", norm="rmsnorm")
    assert variant_argv(config) == ["--norm-type", "rmsnorm", "--layout-scheme", "toy"]
    assert normalize_before_argv(config, ("encoder", "decoder")) == ["--encoder-normalize-before",
                                                                     "--decoder-normalize-before"]  # fmt: skip
    assert colour("toy") == "black"


def test_the_plugins_schemes_are_the_tables_scheme_rows():
    from prelnx.launch.inprocess import load_plugin

    load_plugin()
    from prelnx_fairseq_plugin.models.schemes import SCHEMES, LayoutScheme, register

    assert set(SCHEMES) == {name for name, row in LAYOUTS.items() if row.scheme}
    for name, scheme in SCHEMES.items():  # the row's flags are the class's
        row = LAYOUTS[name]
        assert (scheme.pre_ln, scheme.norm_types, scheme.allows_qk_norm) == (row.pre_ln, row.norms, row.qk_norm)
        assert scheme.language_model == ("language_model" in row.tasks)

    class Unlisted(LayoutScheme):
        name = "unlisted"

    with pytest.raises(ValueError, match="no scheme row in prelnx/layouts.py"):
        register(Unlisted)
    with pytest.raises(ValueError, match="registered twice"):
        register(SCHEMES["peri"])
    assert "unlisted" not in SCHEMES and STATISTICAL == LAYOUTS["peri"].norms


def test_a_file_loaded_by_eight_threads_at_once_runs_once_and_is_never_seen_half_run(tmp_path):
    log = tmp_path / "log.txt"
    path = tmp_path / "slow.py"
    path.write_text(
        "import sys, time\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write('seen ' if __name__ in sys.modules else 'run ')\n"
        "time.sleep(0.3)\n"
        "class Slow: pass\n"
    )
    barrier, found, errors = threading.Barrier(8), [], []

    def load() -> None:
        barrier.wait()
        try:
            found.append(load_module(path))
        except Exception as error:  # noqa: BLE001  (the test reports it)
            errors.append(error)

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(found) == 8 and len({id(module) for module in found}) == 1
    assert log.read_text() == "run "  # executed once, and not yet in sys.modules while it ran
    assert sys.modules[found[0].__name__] is found[0] and found[0].Slow.__module__ == found[0].__name__


def test_a_file_that_fails_while_it_runs_leaves_nothing_behind(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("x = 1\nraise RuntimeError('no GPU here')\n")
    before = set(sys.modules)
    with pytest.raises(LayoutFileError, match=r"broken.py: line 2: RuntimeError: no GPU here"):
        load_module(path)
    assert set(sys.modules) == before


@pytest.mark.parametrize(
    ("source", "words"),
    [("class Mine:\n    def residual(self, layer, index, x, residual):\n        return residual + x\n",
      "Mine is not a subclass of prelnx_fairseq_plugin.models.schemes.LayoutScheme"),
     ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass Mine(LayoutScheme):\n"
      "    def residual(self, layer, x):\n        return x\n",
      "Mine.residual must take (self, layer, index, x, residual), got residual(self, layer, x)"),
     ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass Mine(LayoutScheme):\n"
      "    display_name = 'Peri-LN'\n    def residual(self, layer, index, x, residual):\n        return residual + x\n",
      "clashes with the shipped layout peri (Peri-LN)"),
     ("import no_such_module_here\n", "line 1: ModuleNotFoundError: No module named 'no_such_module_here'")],
)  # fmt: skip
def test_a_file_that_cannot_be_a_layout_is_one_line_naming_it(tmp_path, source, words):
    path = tmp_path / "mine.py"
    path.write_text(source)
    problems = check_values(config_of(layout=f"{path}:Mine"))
    assert len(problems) == 1 and problems[0][0] == "model.layout"
    assert problems[0][1].startswith(f"{path}: ") and words in problems[0][1] and "\n" not in problems[0][1]


def test_display_names_read_the_row_or_a_users_class(tmp_path):
    from prelnx.layouts import display_name

    from tests.conftest import REPO

    assert display_name("tfixup") == "T-Fixup" and display_name("pre") == "Pre-LN"
    assert display_name(f"{REPO / 'examples' / 'gated_preln.py'}:GatedPreLN") == "Gated Pre-LN"
    assert display_name(f"{tmp_path / 'gone.py'}:Gone") == "Gone"  # an old run's file no longer there
    assert display_name("sideways") == "sideways"
