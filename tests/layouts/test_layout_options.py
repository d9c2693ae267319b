"""A layout's options (prelnx.layouts.Option) are declared once, on the layout: Mix-LN's on its row, a user's in its
file. The one declaration fills the config's default, refuses a bad value in one line naming the key and what is
allowed, is what the plan passes fairseq (--layout-options) and what the plugin's scheme reads."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.config.load import ConfigError, config_from_dict, config_to_dict, load_config
from prelnx.layouts import LAYOUTS, MIXLN_ALPHA, post_ln_layers
from prelnx.plan.common import variant_argv

runner = CliRunner()


def planned_options(config) -> dict | None:
    argv = variant_argv(config)
    return json.loads(argv[argv.index("--layout-options") + 1]) if "--layout-options" in argv else None


def test_mixlns_option_is_declared_on_its_row_and_drives_default_check_and_argv(tiny_config_file):
    assert LAYOUTS["mixln"].options == (MIXLN_ALPHA,) and (MIXLN_ALPHA.low, MIXLN_ALPHA.high) == (0.0, 1.0)
    default, _ = load_config(tiny_config_file(model={"layout": "mixln", "encoder_layers": 4, "decoder_layers": 4}))
    assert default.model.options == {"mixln_alpha": 0.25} and planned_options(default) == {"mixln_alpha": 0.25}
    half, _ = load_config(tiny_config_file(model={"layout": "mixln"}), ["model.mixln_alpha=0.5"])
    assert planned_options(half) == {"mixln_alpha": 0.5}
    assert config_to_dict(half)["model"]["mixln_alpha"] == 0.5  # written as the config names it
    assert config_from_dict(config_to_dict(half), "run").model.options == {"mixln_alpha": 0.5}
    with pytest.raises(ConfigError) as refused:
        load_config(tiny_config_file(model={"layout": "mixln"}), ["model.mixln_alpha=1.5"])
    (line,) = [line for line in str(refused.value).splitlines() if "mixln_alpha" in line]
    assert "--set model.mixln_alpha=1.5: model.mixln_alpha: expected a number in [0.0, 1.0], got 1.5" in line
    with pytest.raises(ConfigError, match="model.mixln_alpha: expected a number in .0.0, 1.0., got 'half'"):
        load_config(tiny_config_file(model={"layout": "mixln", "mixln_alpha": "half"}))
    # typed as the schema's own keys are (layout_options.scalar): YAML 1.1's 5e-1 text is a number, a bool is not
    assert load_config(tiny_config_file(model={"layout": "mixln"}), ["model.mixln_alpha=5e-1"])[0].model.options == {
        "mixln_alpha": 0.5}
    for refused_value in ("true", ".nan"):
        with pytest.raises(ConfigError, match="model.mixln_alpha: expected a number"):
            load_config(tiny_config_file(model={"layout": "mixln"}), [f"model.mixln_alpha={refused_value}"])
    # another layout does not take it (a run dir's old config.yaml holds every shipped option: still read)
    pre, _ = load_config(tiny_config_file(model={"layout": "pre", "mixln_alpha": 0.5, "admin_init": "profile"}))
    assert pre.model.options == {} and planned_options(pre) is None
    admin, _ = load_config(tiny_config_file(model={"layout": "admin"}), ["model.admin_init=closed_form"])
    assert planned_options(admin) == {"admin_init": "closed_form"}
    with pytest.raises(ConfigError, match="model.admin_init: expected one of 'profile', 'closed_form', got 'guess'"):
        load_config(tiny_config_file(model={"layout": "admin", "admin_init": "guess"}))


def test_the_plugin_reads_the_declared_value_and_refuses_another(tiny_config_file):
    """The planned value reaches the model: Mix-LN with alpha 0.5 of 4 layers has 2 Post-LN layers (0.25: 1)."""
    from tests.plugin import build

    for alpha, post in ((0.5, 2), (0.25, 1)):
        config, _ = load_config(tiny_config_file(model={"layout": "mixln", "encoder_layers": 4, "decoder_layers": 4}),
                                [f"model.mixln_alpha={alpha}"])  # fmt: skip
        _, _, model = build.translation(config)
        assert [layer.normalize_before for layer in model.encoder.layers] == [False] * post + [True] * (4 - post)
    from argparse import Namespace

    from prelnx_fairseq_plugin.models.mixln import MixLN

    with pytest.raises(ValueError, match=r"--layout-options: model.mixln_alpha: expected a number in \[0.0, 1.0\]"):
        MixLN(Namespace(layout_options='{"mixln_alpha": 2}'))



def test_a_mixln_with_no_post_ln_layer_is_refused_by_the_count_the_plugin_builds_with(tiny_config_file):
    """One count (prelnx.layouts.post_ln_layers) decides both the refusal and the model: floor, with slack."""
    assert [post_ln_layers(0.25, n) for n in (3, 4, 8)] == [0, 1, 2] and post_ln_layers(0.29, 100) == 29
    with pytest.raises(ConfigError, match=r"model.encoder_layers: layout: mixln with mixln_alpha 0.25 has no Post-LN "
                                          r"layer in 3 layers \(floor\(alpha L\) = 0: it would be Pre-LN\)"):
        load_config(tiny_config_file(model={"layout": "mixln", "encoder_layers": 3, "decoder_layers": 4}))


OPTIONED = '''
import torch
from torch import nn

from prelnx_fairseq_plugin.models.schemes import LayoutScheme, Option


class Offset(LayoutScheme):
    pre_ln = True
    options = (Option("offset", 0.0, "added to every residual branch's output", low=-1.0, high=1.0),
               Option("where", "both", "which residuals", choices=("both", "ffn")))

    def build_layer(self, layer, cfg, side):
        layer.register_buffer("offset", torch.tensor(self.option("offset")))

    def residual(self, layer, index, x, residual):
        return residual + x + layer.offset
'''


def test_a_user_files_option_is_checked_planned_and_built(tmp_path, tiny_config_file, monkeypatch):
    from tests.plugin import build

    (tmp_path / "offset.py").write_text(OPTIONED)
    spec = f"{tmp_path / 'offset.py'}:Offset"
    config, _ = load_config(tiny_config_file(model={"layout": spec, "offset": 0.5}))
    assert config.model.options == {"offset": 0.5, "where": "both"}
    assert planned_options(config) == {"offset": 0.5, "where": "both"}
    _, _, model = build.translation(config)
    assert {float(layer.offset) for layer in (*model.encoder.layers, *model.decoder.layers)} == {0.5}
    shown = runner.invoke(app, ["layouts", "show", spec])
    assert "model.offset (default 0.0; a number in [-1.0, 1.0]): added to" in shown.output, shown.output
    # a bad value: exit 2, one line naming the key and what is allowed, no traceback
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["train", "-c", str(tiny_config_file(model={"layout": spec})), "--set",
                               "model.where=attention", "--dry-run"])  # fmt: skip
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    (line,) = [line for line in done.output.splitlines() if "model.where" in line]
    assert "model.where: expected one of 'both', 'ffn', got 'attention'" in line
    # a key no layout declares is still an unknown key
    with pytest.raises(ConfigError, match="model.ofset: unknown key"):
        load_config(tiny_config_file(model={"layout": spec, "ofset": 0.5}))


def test_a_bad_declaration_is_one_line_naming_the_file(tmp_path):
    from prelnx.layouts import LayoutFileError, user_layout

    bad = OPTIONED.replace('"both", "which residuals"', '"all", "which residuals"')
    (tmp_path / "offset.py").write_text(bad)
    with pytest.raises(LayoutFileError) as refused:
        user_layout(f"{tmp_path / 'offset.py'}:Offset")
    assert "\n" not in str(refused.value) and ("Offset.options: where's default 'all' is not allowed: expected one of "
                                              "'both', 'ffn', got 'all'") in str(refused.value)


def test_a_schemes_own_norm_is_dyt_at_the_configured_initial_alpha():
    """A layout's make_norm built DyT at the default alpha 0.5 whatever --dyt-init-alpha said."""
    from argparse import Namespace

    from prelnx_fairseq_plugin.models.norms import DynamicTanh
    from prelnx_fairseq_plugin.models.schemes import LayoutScheme

    norm = LayoutScheme(Namespace(norm_type="dyt", dyt_init_alpha=1.25)).make_norm(8)
    assert isinstance(norm, DynamicTanh) and norm.alpha.item() == 1.25


def test_a_sweep_varies_a_layouts_option_beside_layouts_without_it(tmp_path, tiny_config_file):
    """A grid over model.mixln_alpha, or over a user's option in one row beside Post-LN's, was a bug (exit 70:
    'ModelConfig' object has no attribute 'mixln_alpha'): each point names its option's value, a point whose layout
    has no such option none."""
    from prelnx.sweep.spec import expand, expand_arms, load_spec

    (tmp_path / "offset.py").write_text(OPTIONED)
    base = tiny_config_file(model={"layout": "mixln", "encoder_layers": 4, "decoder_layers": 4})
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"base: {base.name}\ngrid:\n  model.mixln_alpha: [0.25, 0.5]\n")
    points = expand(load_spec(spec))
    assert [(p.name, p.overrides, p.config.model.options) for p in points] == [
        ("mixln_alpha-0.25", {"model.mixln_alpha": 0.25}, {"mixln_alpha": 0.25}),
        ("mixln_alpha-0.5", {"model.mixln_alpha": 0.5}, {"mixln_alpha": 0.5})]
    spec.write_text(f"base: {base.name}\ngrid:\n  - model.layout: [post]\n  - model.layout: [./offset.py:Offset]\n"
                    f"    model.offset: [0.5]\narms:\n  a: {{optimizer.lr: 0.001}}\n  b: {{optimizer.lr: 0.002}}\n")
    arms = {arm.name: arm for arm in expand_arms(load_spec(spec))}
    assert arms["layout-post_a"].overrides == {"model.layout": "post", "optimizer.lr": 0.001}
    assert arms["layout-Offset_b"].overrides["model.offset"] == 0.5
    assert arms["layout-Offset_b"].config.model.options == {"offset": 0.5, "where": "both"}


def test_an_option_named_as_a_model_key_is_refused_not_silently_the_key(tmp_path, tiny_config_file):
    """Option("layout", ...) in a user's file made model.layout the option's value: the run trained Post-LN, exit 0."""
    (tmp_path / "offset.py").write_text(OPTIONED.replace('Option("where"', 'Option("layout"'))
    with pytest.raises(ConfigError, match=r"offset.py:Offset's option 'layout' is the config's own model.layout; "
                                          r"rename it"):  # fmt: skip
        load_config(tiny_config_file(model={"layout": f"{tmp_path / 'offset.py'}:Offset"}))
    # model.options, where the options are kept, is no key of a config either (was: expected dict, got a dict)
    with pytest.raises(ConfigError, match=r"model.options(.mixln_alpha)?: unknown key"):
        load_config(tiny_config_file(model={"layout": "mixln", "options": {"mixln_alpha": 0.5}}))
    with pytest.raises(ConfigError, match=r"--set model.options=\{mixln_alpha: 0.5\}: model.options: unknown key"):
        load_config(tiny_config_file(model={"layout": "mixln"}), ["model.options={mixln_alpha: 0.5}"])


def test_options_or_norm_types_without_the_tuples_comma_is_one_value_not_a_bug(tmp_path):
    """`options = (Option(...))` (no trailing comma: an Option, not a tuple) was a TypeError, exit 70."""
    from prelnx.layouts import user_layout

    (tmp_path / "offset.py").write_text(OPTIONED.replace(
        'options = (Option("offset", 0.0, "added to every residual branch\'s output", low=-1.0, high=1.0),\n'
        '               Option("where", "both", "which residuals", choices=("both", "ffn")))',
        'options = (Option("offset", 0.0, "added to every residual branch\'s output", low=-1.0, high=1.0))'))
    assert [o.key for o in user_layout(f"{tmp_path / 'offset.py'}:Offset").options] == ["offset"]
    # the same slip in norm_types, ("rmsnorm"): was read letter by letter, "got ['r', 'm', 's', ...]"
    (tmp_path / "offset.py").write_text(OPTIONED.replace("    pre_ln = True", "    pre_ln = True\n    norm_types = ('rmsnorm')"))
    assert user_layout(f"{tmp_path / 'offset.py'}:Offset").norms == ("rmsnorm",)


def test_a_run_whose_layout_file_is_gone_says_so_not_unknown_key(tmp_path, tiny_config_file):
    """The file moved after the sweep: report, plot and status said 'model.offset: unknown key; did you mean
    model.embed_dim?' of each run's config.yaml, never that the file is missing."""
    (tmp_path / "offset.py").write_text(OPTIONED)
    config, _ = load_config(tiny_config_file(model={"layout": f"{tmp_path / 'offset.py'}:Offset", "offset": 0.5}))
    (tmp_path / "offset.py").unlink()
    with pytest.raises(ConfigError) as refused:
        config_from_dict(config_to_dict(config), "run/config.yaml")
    assert "offset.py: no such file" in str(refused.value) and "unknown key" not in str(refused.value)
