"""Figures of the gradient study (like the paper's Figure 3) and of the mean-field checks, drawn from the summary
their analysis wrote (grads_summary.json, theory_summary.json), so a figure can be redrawn from the files alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prelnx.layouts import display_name
from prelnx.layouts import layout as layout_row
from prelnx.plots.diagnostics import new_figure, save_figure

CHECKPOINT_COLOUR = "tab:green"  # a trained model's bars; every layout's colour is its row's (prelnx/layouts.py)


def colour(name: str) -> str:
    """The layout's colour in every figure (a user's layout: its class's `colour`, or prelnx.layouts.USER_COLOUR)."""
    return layout_row(name).colour


def _legend_beside(axis: Any) -> None:
    """The legend right of the axes, never over the bars (with eight layouts it covered the first layers)."""
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)


def plot_figure3(summary: dict[str, Any], path: Path) -> Path:
    """(a)(b) W1 and W2 gradient norm per layer at the bars depth, Post-LN vs Pre-LN (and a checkpoint if measured),
    mean +- std over seeds; (c)(d) the last decoder layer's W2 gradient norm against depth, Pre-LN then Post-LN."""
    figure, axes = new_figure((15, 8), 2, 2)
    depth = summary["growth_depth"]
    series = [(layout, f"{display_name(layout)} (init)", summary["per_layer"], depth) for layout in summary["layouts"]]
    for entry in summary.get("checkpoint", [])[:1]:
        ck_layout, ck_depth = entry["layout"], entry["depth"]
        series.append((ck_layout, f"{display_name(ck_layout)} (checkpoint)", summary["checkpoint"], ck_depth))
    width = 0.8 / max(len(series), 1)
    for axis, weight, letter in ((axes[0, 0], "W1", "a"), (axes[0, 1], "W2", "b")):
        labels: list[str] = []
        for index, (layout, name, entries, series_depth) in enumerate(series):
            chosen = (e for e in entries if (e["layout"], e["depth"], e["weight"]) == (layout, series_depth, weight))
            bars = sorted(chosen, key=lambda e: (e["side"] != "encoder", e["layer"]))  # encoder layers, then decoder
            positions = [i + (index - (len(series) - 1) / 2) * width for i in range(len(bars))]
            color = CHECKPOINT_COLOUR if entries is not summary["per_layer"] else colour(layout)
            axis.bar(positions, [b["mean"] for b in bars], width, yerr=[b["std"] for b in bars], capsize=2,
                     color=color, label=name)  # fmt: skip
            if len(bars) > len(labels):
                labels = [f"{'E' if b['side'] == 'encoder' else 'D'}{b['layer']}" for b in bars]
        axis.set_xticks(range(len(labels)), labels)
        axis.set_title(f"({letter}) gradient norm of {weight} per layer, {depth}-{depth} layers")
        axis.set_xlabel("layer (E = encoder, D = decoder)")
        axis.set_ylabel(f"||dL/d{weight}||_F")
        _legend_beside(axis)
    # (c) Pre-LN and (d) Post-LN as in the paper; every other measured layout beside the one it is built on.
    measured = list(summary["last_layer_w2"])
    pre_like = [name for name in measured if layout_row(name).pre_ln]
    post_like = [name for name in measured if name not in pre_like]
    for axis, layouts, letter in ((axes[1, 0], pre_like, "c"), (axes[1, 1], post_like, "d")):
        if not layouts:
            axis.set_visible(False)
            continue
        depths = list(summary["last_layer_w2"][layouts[0]])
        bar = 0.6 / len(layouts)
        for index, name in enumerate(layouts):
            by_depth = summary["last_layer_w2"][name]
            positions = [i + (index - (len(layouts) - 1) / 2) * bar for i in range(len(depths))]
            axis.bar(positions, [by_depth[d]["mean"] for d in depths], bar, yerr=[by_depth[d]["std"] for d in depths],
                     capsize=3, color=colour(name), label=display_name(name))  # fmt: skip
        axis.set_xticks(range(len(depths)), [f"{d}-{d}" for d in depths])
        base = "Pre-LN" if letter == "c" else "Post-LN"
        shown = ", ".join(display_name(name) for name in layouts) if len(layouts) <= 2 else f"{base} and the layouts built on it"
        axis.set_title(f"({letter}) {shown}: last layer's W2 gradient vs depth")
        axis.set_xlabel("layers (encoder = decoder)")
        axis.set_ylabel("||dL/dW2||_F, last decoder layer")
        _legend_beside(axis)
    figure.suptitle(f"FFN gradient norms at initialisation ({summary['settings']['config'] if 'settings' in summary else ''}, "
                    f"mean +- std over {len(summary['seeds'])} seeds)")  # fmt: skip
    return save_figure(figure, path.parent, path.stem, ("png",))[0]


def plot_hidden_norms(summary: dict[str, Any], path: Path) -> Path:
    """||x||^2 / d per layer: Post-LN's x^(post,5) against 3/2, Pre-LN's x_l inside [1 + l/2, 1 + 3l/2]."""
    figure, axis = new_figure((7, 4.5))
    layers = [row["layer"] for row in summary["hidden"]]
    for key, color, name in (("post", colour("post"), "Post-LN ||x^(post,5)||^2 / d"), ("pre", colour("pre"), "Pre-LN ||x_l||^2 / d")):
        axis.errorbar(layers, [r[f"{key}_mean"] for r in summary["hidden"]], yerr=[r[f"{key}_std"] for r in summary["hidden"]],
                      marker="o", capsize=3, color=color, label=name)  # fmt: skip
    axis.fill_between(layers, [1 + l / 2 for l in layers], [1 + 3 * l / 2 for l in layers], color=colour("pre"), alpha=0.15,
                      label="Pre-LN bounds [1 + l/2, 1 + 3l/2]")  # fmt: skip
    axis.axhline(1.5, color=colour("post"), linestyle="--", label="Post-LN expectation 3/2")
    axis.set_xlabel("layer l")
    axis.set_ylabel("squared norm / d")
    axis.set_title(f"Hidden-state norms at initialisation (d {summary['d']}, mean +- std over {len(summary['seeds'])} seeds)")
    axis.legend()
    return save_figure(figure, path.parent, path.stem, ("png",))[0]


def plot_layernorm_jacobian(summary: dict[str, Any], path: Path) -> Path:
    """The spectral norm of LayerNorm's Jacobian against ||x||, beside sqrt(d) / ||x||, on log-log axes."""
    figure, axis = new_figure((6, 4.5))
    rows = summary["layernorm"]
    norms = [r["x_norm"] for r in rows]
    axis.loglog(norms, [r["jacobian_norm"] for r in rows], "o", color=colour("pre"), label="||J_LN(x)||_2 (measured)")
    axis.loglog(norms, [r["sqrt_d_over_norm"] for r in rows], "-", color="black", label="sqrt(d) / ||x||")
    axis.set_xlabel("||x||_2")
    axis.set_ylabel("spectral norm")
    axis.set_title(f"LayerNorm's Jacobian shrinks as its input grows (d {summary['d']})")
    axis.legend()
    return save_figure(figure, path.parent, path.stem, ("png",))[0]
