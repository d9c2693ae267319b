"""THE layout table: every model.layout prelnx trains, one row each; a shipped layout is one row here plus one plugin
file (prelnx_fairseq_plugin/models/<name>.py). A user's `model.layout: PATH.py:CLASS` (docs/your_layout.md) is loaded
here at config validation (thread-safe: sweeps validate in threads), its class attributes one more row. Standard
library, exits.py and layout_options.py only: the plugin reads this table too (and loads a user's file alike), and
the names it shares with the config (tasks, arch presets, decays), which live here for that reason.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from prelnx.exits import Refusal
from prelnx.layout_options import Option

# Families: the paper's two, the warm-up-free recipes (docs/warmup_free.md), the norm placements since 2023
# (docs/placements.md), and DeepNorm (docs/variants.md). A user's layout is a placement of theirs.
PAPER, WARMUP_FREE, PLACEMENT, VARIANT = "paper", "warm-up-free", "placement", "variant"
ALL_TASKS = ("translation", "masked_lm", "sentence_prediction", "language_model")  # config.task's values, named once
# fairseq's translation presets (fairseq/models/transformer/transformer_legacy.py): config.model.arch's values, each
# registered by the plugin as prelnx_<name> (read here: a config validates without importing fairseq, 4 s).
ARCH_PRESETS = ("transformer", "transformer_iwslt_de_en", "transformer_wmt_en_de", "transformer_vaswani_wmt_en_de_big",
                "transformer_vaswani_wmt_en_fr_big", "transformer_wmt_en_de_big", "transformer_wmt_en_de_big_t2t")
# schedule.decay's values, each a --decay of the plugin's lr_scheduler/warmup_decay.py (here: the plugin reads no higher)
DECAYS = ("inverse_sqrt", "constant", "step", "linear")
TRANSLATION, TRANSLATION_AND_LM = ("translation",), ("translation", "language_model")
ALL_NORMS, STATISTICAL, LAYERNORM = ("layernorm", "rmsnorm", "dyt"), ("layernorm", "rmsnorm"), ("layernorm",)
# Why a family refuses a norm or QK-Norm, in the config's error.
NORM_REASON = {PAPER: "is defined", VARIANT: "rescales a normalised residual stream",
               WARMUP_FREE: "is built as its authors built it, with LayerNorm (or none)",
               PLACEMENT: "places a statistical norm"}  # fmt: skip
QK_REASON = {WARMUP_FREE: "is built as its authors built it"}
USER_COLOUR = "tab:pink"  # a user's layout that names no colour
# The claims a user's layout file may declare (its class's `claims`), each kind with the numbers it needs: kinds of
# prelnx/methods.yaml decided by a sweep of Post-LN, Pre-LN and the layout, with and without warm-up (a test keeps
# prelnx/report/warmup_free.py's CHECKS a superset).
CLAIM_KINDS: dict[str, tuple[str, ...]] = {
    "no_warmup": ("margin_bits",),  # without warm-up minus with, below the margin
    "matches_postln": ("margin_bits",),  # the layout (arm: no_warmup, or warmup) minus Post-LN with warm-up
    "beats_preln": ("margin_bits",),  # with warm-up minus Pre-LN with warm-up
    "converges_faster": ("target_loss_bits", "speedup", "margin_factor"),  # updates to a loss, a ratio claim
}


# Each number a claim kind needs: (the smallest value it may take, the rule in words; a bound in the words' ">" is
# excluded). Checked when a config naming the file is validated (one line naming the file and the claim, exit 2), so
# a report never meets a claim it cannot decide: a zero margin_factor or speedup divides by zero, a factor below 1
# inverts the band, inf claims nothing. A margin of 0 bits is a sign claim ("strictly better"; paper.yaml has one).
NUMBER_RULES: dict[str, tuple[float, str]] = {
    "margin_bits": (0.0, "a finite number >= 0 (bits)"),
    "target_loss_bits": (0.0, "a finite number > 0 (bits)"),
    "speedup": (0.0, "a finite number > 0 (the baseline's updates over the method's)"),
    "margin_factor": (1.0, "a finite number > 1 (the band ratio / factor to ratio x factor, ordered and not empty)"),
}


@dataclass(frozen=True)
class Reference:
    """The code a layout transcribes: repository, file, commit."""

    repo: str
    file: str = ""
    commit: str = ""


@dataclass(frozen=True)
class Layout:
    """One layout. `name` is its model.layout value (for a user's layout, `/abs/path.py:CLASS`)."""

    name: str
    display: str  # in tables, figures and report arms
    family: str
    tasks: tuple[str, ...]
    norms: tuple[str, ...]  # model.norm values it is defined with
    qk_norm: bool  # model.qk_norm allowed
    pre_ln: bool  # built on fairseq's normalize_before (input norms, a final norm) rather than Post-LN
    colour: str  # matplotlib colour in every figure
    reference: Reference | None = None
    file: str | None = None  # a user's layout: the absolute PATH.py:CLASS the plugin loads (--layout-file)
    claims: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)  # a user's file's claims (CLAIM_KINDS)
    options: tuple[Option, ...] = ()  # its own model.<key> options (a user's: its class's `options`)

    @property
    def scheme(self) -> bool:
        """Built by the plugin as a --layout-scheme (or a --layout-file): not fairseq's own Post-/Pre-LN, not DeepNorm."""
        return self.family in (WARMUP_FREE, PLACEMENT)


FAIRSEQ = Reference("facebookresearch/fairseq", "fairseq/modules/transformer_layer.py", "v0.12.3 (ve-fairseq 0.12.3)")
ADMIN_INIT = Option("admin_init", "profile", "Admin's w: a profiling forward pass at initialisation (profile, the "
                    "paper's) or sqrt((n+1)/ln(n+1) - 1) for n sublayers (closed_form, microsoft/admin-torch)",
                    choices=("profile", "closed_form"))  # fmt: skip
REZERO_FFN_INIT = Option("rezero_ffn_init", "xavier", "ReZero's FFN init: xavier (Transformer-Clinic's Linear, zero "
                         "bias, 70f72b7) or torch (majumderb/rezero's nn.Linear)", choices=("xavier", "torch"))
MIXLN_ALPHA = Option("mixln_alpha", 0.25, "Mix-LN's share of Post-LN layers at the bottom of each stack (floor(alpha "
                     "L) of L; the paper's 0.25)", low=0.0, high=1.0)  # fmt: skip


def post_ln_layers(alpha: float, layers: int) -> int:
    """floor(alpha L), Mix-LN's Post-LN layers at the bottom of a stack of L (a hair of slack for 0.29 x 100)."""
    return math.floor(alpha * layers + 1e-9)


CLINIC = Reference("LiyuanLucasLiu/Transformer-Clinic", "fairseq/fairseq/modules/transformer_layer.py",
                   "70f72b708ab074db5ca3726494e3263516041159")  # fmt: skip
LAYOUTS: dict[str, Layout] = {row.name: row for row in (
    Layout("post", "Post-LN", PAPER, ALL_TASKS, ALL_NORMS, True, False, "tab:orange", FAIRSEQ),
    Layout("pre", "Pre-LN", PAPER, ALL_TASKS, ALL_NORMS, True, True, "tab:blue", FAIRSEQ),
    Layout("deepnorm", "DeepNorm", VARIANT, TRANSLATION, STATISTICAL, True, False, "tab:purple",
           Reference("microsoft/torchscale", "the paper's Table of alpha, beta (arXiv:2203.00555, Section 2)")),
    Layout("admin", "Admin", WARMUP_FREE, TRANSLATION, LAYERNORM, False, False, "tab:red", CLINIC, options=(ADMIN_INIT,)),
    Layout("tfixup", "T-Fixup", WARMUP_FREE, TRANSLATION, LAYERNORM, False, False, "tab:brown",
           Reference("layer6ai-labs/T-Fixup", "fairseq/modules/transformer_layer.py",
                     "b17e166d9f60671a92c3f39e24c9b8c93995e5a3")),
    Layout("rezero", "ReZero", WARMUP_FREE, TRANSLATION, LAYERNORM, False, False, "tab:gray", CLINIC,
           options=(REZERO_FFN_INIT,)),
    Layout("rezero_postln", "ReZero (Post-LN)", WARMUP_FREE, TRANSLATION, LAYERNORM, False, False, "tab:cyan", CLINIC,
           options=(REZERO_FFN_INIT,)),
    Layout("b2t", "B2T", WARMUP_FREE, TRANSLATION, LAYERNORM, False, False, "tab:olive",
           Reference("takase/b2t_connection", "fairseq/modules/transformer_layer.py",
                     "4d80167fe2d58c1a4dc93545bb319c252dfc36e4")),
    Layout("peri", "Peri-LN", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, True, "gold",
           Reference("huggingface/transformers", "src/transformers/models/gemma2/modeling_gemma2.py",
                     "9a80143ca26066ee3266749a57c7b3850d8843be")),
    Layout("reorder", "Reordered norm (OLMo 2)", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, True, "teal",
           Reference("huggingface/transformers", "src/transformers/models/olmo2/modular_olmo2.py",
                     "46474e6759e4160bb54fb49fd0a8fdd71d5ac933")),
    Layout("mixln", "Mix-LN", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, True, "navy",
           Reference("pixeli99/MixLN", "peft_pretraining/modeling_llama.py", "ff458269dff837f1900025fb7cc864b404b9c7e6"),
           options=(MIXLN_ALPHA,)),
    Layout("residual", "ResiDual", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, False, "magenta",
           Reference("microsoft/ResiDual", "resi_dual/resi_dual_layers.py", "8682f7510be105a0caf5b98a021e712f44f90ace")),
    Layout("lnscale", "LayerNorm Scaling", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, True, "darkgoldenrod",
           Reference("lmsdss/LayerNorm-Scaling", "peft_pretraining/modeling_llama.py",
                     "3ac54dde961b04780b152bc8b38b71b2f8e1c16a")),
)}  # fmt: skip


# A layout's recipe: its own options and the keys outside model.layout its authors set with it (a claim comparing
# layouts compares recipes where a sweep sets these per layout; prelnx/report/arms.py, docs/verdicts.md).
AUTHORS_KEYS = {"tfixup": ("train.clip_norm",)}  # the authors' fairseq defaults --clip-norm to 25 (docs/warmup_free.md)
RECIPE_KEYS: dict[str, tuple[str, ...]] = {
    name: (*AUTHORS_KEYS.get(name, ()), *(f"model.{option.key}" for option in row.options))
    for name, row in LAYOUTS.items() if row.options or name in AUTHORS_KEYS
}


def names(family: str | None = None) -> tuple[str, ...]:
    """The shipped layouts' names, in the table's order (of one family)."""
    return tuple(n for n, row in LAYOUTS.items() if family in (None, row.family))


class LayoutFileError(Refusal):
    """A user's layout file that cannot be a layout; the message names the file and what is wrong, in one line."""


def is_file_spec(layout: str) -> bool:
    """`./mine.py:Gated` (or any value naming a .py file) is a user's layout; `pre` is a name of the table."""
    return ".py" in layout or "/" in layout or ":" in layout


def absolute_spec(layout: str, root: Path | None = None) -> str:
    """A user's `PATH.py:CLASS` with PATH made absolute. THE rule for a relative PATH (docs/your_layout.md): `root`
    is the folder of the file that names it (a config, its base:, a sweep spec), None (the working directory) where
    the command line names it (--set, --grid, --layouts)."""
    if not is_file_spec(layout):
        return layout
    path, sep, cls = layout.rpartition(":") if layout.rpartition(":")[2].isidentifier() else (layout, "", "")
    return str(((root or Path.cwd()) / Path(path).expanduser()).resolve()) + sep + cls


def layout(value: str) -> Layout:
    """The row of a model.layout value (a user's file is loaded and checked); KeyError or LayoutFileError if none."""
    return user_layout(value) if is_file_spec(value) else LAYOUTS[value]


def option_keys(value: str | None) -> set[str] | None:
    """Every key a model.<key> option may have under layout `value`: the shipped layouts' (a run dir's config holds
    them all) and a user file's own; None for a file that does not load (any key may be its: model.layout's check
    says why, not an 'unknown key' per option)."""
    keys = {option.key for row in LAYOUTS.values() for option in row.options}
    try:
        return keys | ({o.key for o in layout(value).options} if isinstance(value, str) else set())
    except KeyError:
        return keys
    except LayoutFileError:
        return None


def display_name(value: str) -> str:
    """A layout's display name; a user's file that no longer loads is named by its class (a report of old runs)."""
    try:
        return layout(value).display
    except (KeyError, LayoutFileError):
        return value.rpartition(":")[2] or value



# ---- a user's layout: PATH.py:CLASS ------------------------------------------------------------------------------

BASE_MODULE, BASE_CLASS = "prelnx_fairseq_plugin.models.schemes", "LayoutScheme"
# The hooks a scheme may override, with their parameters after self (the plugin's LayoutScheme documents them).
HOOKS = {"build_layer": ("layer", "cfg", "side"), "residual": ("layer", "index", "x", "residual"),
         "build_stack": ("stack", "cfg", "side"), "final_norm": ("stack", "cfg", "side", "norm"),
         "build_model": ("model", "args")}  # fmt: skip
_LOCK = threading.RLock()
_MODULES: dict[tuple[str, int, int], Any] = {}  # (path, mtime, size) -> the executed module


def load_module(path: Path) -> Any:
    """The file executed as a module, once per version of the file. Under a lock, and entered in sys.modules (under
    a name of its own) only once its code has run: a thread never sees a half-executed module."""
    shown = str(path)
    try:
        stat = path.stat()
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LayoutFileError(f"{shown}: no such file (a layout file is PATH.py:CLASS; docs/your_layout.md)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise LayoutFileError(f"{shown}: cannot be read ({error})") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        if key in _MODULES:
            return _MODULES[key]
        try:
            code = compile(source, shown, "exec")
        except SyntaxError as error:
            raise LayoutFileError(f"{shown}: line {error.lineno}: {error.msg} (a syntax error)") from None
        name = "prelnx_user_layout_" + hashlib.sha1(key[0].encode()).hexdigest()[:12]
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None, origin=key[0]))
        module.__file__ = key[0]
        try:
            exec(code, module.__dict__)
        except Exception as error:  # the user's code: whatever it raised is their file's problem, said in one line
            line = next((f.lineno for f in reversed(inspect.trace()) if f.filename == shown), None)
            where = f"line {line}: " if line else ""
            raise LayoutFileError(f"{shown}: {where}{type(error).__name__}: {error} (while importing it)") from None
        sys.modules[name] = module
        _MODULES[key] = module
        return module


def load_class(spec: str) -> type:
    """CLASS of `PATH.py:CLASS`, checked: a subclass of the plugin's LayoutScheme that overrides at least one hook,
    each with the hook's parameters. LayoutFileError (one line, naming the file) otherwise."""
    file, _, name = spec.rpartition(":")
    if not file or not name.isidentifier():
        raise LayoutFileError(f"{spec}: name a class in the file, PATH.py:CLASS (e.g. ./my_layout.py:GatedPreLN)")
    path = Path(file).expanduser()
    module = load_module(path)
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, type) and v.__module__ == module.__name__)
        raise LayoutFileError(f"{path}: no class {name} (classes defined there: {', '.join(found) or 'none'})")
    base = next((c for c in cls.__mro__ if c.__name__ == BASE_CLASS and c.__module__.endswith(BASE_MODULE)), None)
    if base is None:
        raise LayoutFileError(f"{path}: {name} is not a subclass of {BASE_MODULE}.{BASE_CLASS}")
    overridden = [hook for hook in HOOKS if getattr(cls, hook, None) is not getattr(base, hook)]
    if not overridden:
        raise LayoutFileError(f"{path}: {name} overrides none of the hooks {', '.join(HOOKS)} (it would be "
                              f"{'Pre-LN' if getattr(cls, 'pre_ln', False) else 'Post-LN'} itself)")  # fmt: skip
    for hook in overridden:
        method, parameters = getattr(cls, hook), HOOKS[hook]
        got = f"{hook} = {method!r}"  # not a method (`residual = 3`): no signature to show
        try:
            signature = inspect.signature(method)
            got = f"{hook}{signature}"
            signature.bind(None, *parameters)
        except (TypeError, ValueError):
            raise LayoutFileError(f"{path}: {name}.{hook} must take (self, {', '.join(parameters)}), got {got}") from None
    return cls


def user_layout(spec: str) -> Layout:
    """The row of a user's `PATH.py:CLASS` from its class attributes (the plugin's LayoutScheme documents them)."""
    spec = absolute_spec(spec)
    cls = load_class(spec)
    path = spec.rpartition(":")[0]
    scheme = str(getattr(cls, "name", "") or cls.__name__)
    display = str(getattr(cls, "display_name", "") or cls.__name__)
    clash = next((row for row in LAYOUTS.values() if scheme in (row.name, row.display)
                  or display.casefold() in (row.name.casefold(), row.display.casefold())), None)  # fmt: skip
    if clash is not None:
        raise LayoutFileError(f"{path}: {cls.__name__}: name {scheme!r} / display_name {display!r} clashes with the "
                              f"shipped layout {clash.name} ({clash.display}); choose another")  # fmt: skip
    norms = getattr(cls, "norm_types", LAYERNORM)
    norms = (norms,) if isinstance(norms, str) else tuple(norms)  # `("rmsnorm")`, the tuple's comma left out: one
    bad = [n for n in norms if n not in ALL_NORMS]
    if bad or not norms:
        raise LayoutFileError(f"{path}: {cls.__name__}.norm_types: each must be one of {', '.join(ALL_NORMS)}, "
                              f"got {list(norms)}")  # fmt: skip
    tasks = TRANSLATION_AND_LM if getattr(cls, "language_model", False) else TRANSLATION
    reference = Reference(str(getattr(cls, "reference", "") or path))
    return Layout(spec, display, PLACEMENT, tasks, norms, bool(getattr(cls, "allows_qk_norm", False)),
                  bool(getattr(cls, "pre_ln", False)), str(getattr(cls, "colour", "") or USER_COLOUR), reference, spec,
                  _claims(path, cls), _options(path, cls))  # fmt: skip


def _options(path: str, cls: type) -> tuple[Option, ...]:
    """The class's `options`, checked: Options with identifier keys, distinct, their defaults allowed."""
    declared, where = getattr(cls, "options", ()) or (), f"{path}: {cls.__name__}.options"
    declared = tuple(declared) if isinstance(declared, (list, tuple)) else (declared,)  # `(Option(...))`: one
    for option in declared:
        if not isinstance(option, Option) or not option.key.isidentifier():
            raise LayoutFileError(f"{where}: each an Option(key, default, help, ...) (prelnx.layouts.Option) with an "
                                  f"identifier key, got {option!r}")
        try:
            option.coerce(option.default)
        except (ValueError, KeyError) as error:  # ValueError: what its range or choices allow; KeyError: no scalar
            raise LayoutFileError(f"{where}: {option.key}'s default {option.default!r} is not allowed: "
                                  f"{error if isinstance(error, ValueError) else 'a bool, int, float or str'}") from None
    if len({o.key for o in declared}) < len(declared):
        raise LayoutFileError(f"{where}: a key is declared twice")
    return declared


def _claims(path: str, cls: type) -> tuple[dict[str, Any], ...]:
    """The class's `claims`, checked: each a dict with a unique `id`, a `kind` of CLAIM_KINDS, the `claim` in words
    and its kind's numbers; `source` and `paper` default to the file. LayoutFileError (one line) otherwise."""
    declared, checked = getattr(cls, "claims", ()) or (), []
    if not isinstance(declared, (list, tuple)):
        raise LayoutFileError(f"{path}: {cls.__name__}.claims must be a list of dicts, got {type(declared).__name__}")
    for index, claim in enumerate(declared):
        where = f"{path}: {cls.__name__}.claims[{index}]"
        if not isinstance(claim, dict) or not isinstance(claim.get("id"), str) or not claim["id"]:
            raise LayoutFileError(f"{where}: a dict with an 'id' (a name of the claim), a 'kind' and a 'claim'")
        if claim["id"] in {other["id"] for other in checked}:
            raise LayoutFileError(f"{where}: id {claim['id']!r} is used twice")
        kind = claim.get("kind")
        if kind not in CLAIM_KINDS:
            raise LayoutFileError(f"{where} ({claim['id']}): kind {kind!r}; one of {', '.join(CLAIM_KINDS)}")
        if not isinstance(claim.get("claim"), str) or not claim["claim"]:
            raise LayoutFileError(f"{where} ({claim['id']}): 'claim': the claim in words")
        for key in CLAIM_KINDS[kind]:
            value, (low, words) = claim.get(key), NUMBER_RULES[key]
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < low or (value == low and ">=" not in words):
                raise LayoutFileError(f"{where} ({claim['id']}): {kind} needs '{key}', {words}, got {value!r}")
        if kind == "matches_postln" and claim.get("arm", "no_warmup") not in ("no_warmup", "warmup"):
            raise LayoutFileError(f"{where} ({claim['id']}): 'arm' is no_warmup or warmup, got {claim['arm']!r}")
        checked.append({"source": "its layout file", "paper": "-", **claim})
    return tuple(checked)
