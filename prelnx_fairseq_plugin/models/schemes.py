"""The layouts the plugin builds as a scheme (`--layout-scheme NAME`, or a user's `--layout-file PATH.py:CLASS`).

A shipped scheme is one published recipe in its own module, with its formula and sources; it registers itself here
when imported, against its row of prelnx/layouts.py (a scheme without a row is refused; the row's flags become the
class's). A user's scheme is a `LayoutScheme` subclass in a file of theirs, whose class attributes are its row. A
scheme acts at fairseq's own seams, the hooks below (their table: docs/your_layout.md); the defaults leave fairseq's
layer as it is. It is built on Post-LN (`pre_ln` false) or on fairseq's Pre-LN; prelnx's config checks the row's
flags once (prelnx/config/schema.py's layout_problems), and the plugin builds what it is given.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import torch
from fairseq import utils
from torch import nn

from prelnx.layout_options import Option, option_values  # Option: for a user's file to import
from prelnx.layouts import LAYOUTS, load_class

from .norms import NormVariant, replace_layer_norms

SCHEMES: dict[str, type[LayoutScheme]] = {}
NO_SCHEME = "none"


class LayoutScheme:
    """The default hooks: fairseq's layer unchanged (Post-LN, or Pre-LN with `pre_ln`). Subclass it, override the
    hooks your placement needs, and set the class attributes that describe it (a user's scheme: its layout row)."""

    name: ClassVar[str] = ""  # a user's scheme: default its class name; must not be a shipped layout's
    display_name: ClassVar[str] = ""  # in tables, figures and report arms; default the class name
    pre_ln: ClassVar[bool] = False  # built on fairseq's Pre-LN (normalize_before) rather than Post-LN
    norm_types: ClassVar[tuple[str, ...]] = ("layernorm",)  # the model.norm values it is defined with
    allows_qk_norm: ClassVar[bool] = False
    language_model: ClassVar[bool] = False  # defined for the decoder-only model too (no encoder, no cross-attention)
    colour: ClassVar[str] = ""  # a matplotlib colour for its figures ("" = prelnx.layouts.USER_COLOUR)
    reference: ClassVar[str] = ""  # where its formula comes from (a paper, a repository at a commit)
    # What you claim for it, checked by `prelnx report` on a sweep that has the arms (docs/your_layout.md): dicts of
    # prelnx.layouts.CLAIM_KINDS' kinds, e.g. {"id": "mine_no_warmup", "kind": "no_warmup", "claim": "...",
    # "margin_bits": 0.5}, decided as methods.yaml's claims are
    claims: ClassVar[tuple[dict[str, Any], ...]] = ()
    # Its options, model.<key> in a config: Option(key, default, help, choices=... or low=/high=) from
    # prelnx.layouts; checked by the config and read with self.option(key) (a shipped scheme: its row's, by register)
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, args: Any) -> None:
        self.args = args
        given = json.loads(utils.safe_getattr(args, "layout_options", None) or "{}")
        self.values, problems = option_values(type(self), given)
        if problems:  # the config checked it; a command line of one's own may not have
            raise ValueError("--layout-options: " + "; ".join(f"{key}: {message}" for key, message in problems))

    def option(self, key: str) -> Any:
        """The value of one of its declared options (its default unless --layout-options sets it)."""
        return self.values[key]

    def make_norm(self, dim: int) -> nn.Module:
        """A norm of the model's --norm-type (LayerNorm, RMSNorm or DyT, at --dyt-init-alpha) of size dim, as the
        layer's own norms."""
        return NormVariant.of(self.args).norm(dim)

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        """Called once fairseq has built `layer` (side: encoder or decoder)."""

    def final_norm(self, stack: nn.Module, cfg: Any, side: str, norm: nn.Module | None) -> nn.Module | None:
        """The stack's final norm, applied after its last layer: fairseq's (`norm`: a module under Pre-LN, None
        under Post-LN) or what replaces it (None: none)."""
        return norm

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        """Called once fairseq has built the encoder or decoder `stack` with its layers (`stack.layers`), after
        final_norm."""

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """fairseq's residual_connection of sublayer `index` (encoder: 0 self-attention, 1 FFN; decoder: 0, 1 cross-
        attention, 2 FFN): x its output after dropout, residual its input, `layer.layer_input` the layer's input."""
        return residual + x

    def build_model(self, model: nn.Module, args: Any) -> None:
        """Called once the whole model is built."""


def register(scheme: type[LayoutScheme]) -> type[LayoutScheme]:
    """Register a shipped scheme under its name, against its row of the layout table (whose flags it takes)."""
    row = LAYOUTS.get(scheme.name)
    if row is None or not row.scheme:
        raise ValueError(f"scheme {scheme.name!r} has no scheme row in prelnx/layouts.py's LAYOUTS; add one")
    if scheme.name in SCHEMES:
        raise ValueError(f"scheme {scheme.name!r} is registered twice")
    scheme.pre_ln, scheme.norm_types, scheme.allows_qk_norm = row.pre_ln, row.norms, row.qk_norm
    scheme.language_model, scheme.display_name, scheme.colour = "language_model" in row.tasks, row.display, row.colour
    scheme.options = row.options
    SCHEMES[scheme.name] = scheme
    return scheme


def scheme_class(cfg: Any) -> type[LayoutScheme] | None:
    """The class of --layout-file (a user's PATH.py:CLASS, loaded by prelnx.layouts' loader) or --layout-scheme."""
    spec = utils.safe_getattr(cfg, "layout_file", None)
    if spec:
        return load_class(str(spec))  # type: ignore[return-value]
    name = str(utils.safe_getattr(cfg, "layout_scheme", None) or NO_SCHEME)
    if name == NO_SCHEME:
        return None
    if name not in SCHEMES:
        raise ValueError(f"--layout-scheme: unknown {name!r}; allowed: {', '.join((NO_SCHEME, *SCHEMES))}")
    return SCHEMES[name]


def make_scheme(cfg: Any) -> LayoutScheme | None:
    cls = scheme_class(cfg)
    return None if cls is None else cls(cfg)


def sublayer_count(layer: nn.Module) -> int:
    """Residual sublayers of a fairseq layer: 2 in the encoder, 3 in a decoder with cross-attention."""
    return 3 if getattr(layer, "encoder_attn", None) is not None else 2


def xavier_ffn_(layer: nn.Module) -> None:
    """fc1 and fc2 re-drawn as Transformer-Clinic's and T-Fixup's fairseq `Linear` helper draws them:
    xavier_uniform_ weight, zero bias (fairseq 0.12 keeps torch's Kaiming-uniform default)."""
    for linear in (layer.fc1, layer.fc2):
        nn.init.xavier_uniform_(linear.weight)
        nn.init.zeros_(linear.bias)


def drop_layer_norms(layer: nn.Module) -> None:
    """Every LayerNorm of the layer becomes an nn.Identity (no parameters: none left unused, which DDP's unused-
    parameter check would refuse); the attribute names stay fairseq's so its forward runs unchanged."""
    replace_layer_norms(layer, lambda dim: nn.Identity())


# fairseq's sublayer norms, in sublayer order (a decoder without cross-attention has no encoder_attn_layer_norm):
# under Pre-LN (normalize_before) each is applied to its sublayer's input
INPUT_NORMS = ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")
