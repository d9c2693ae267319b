"""`prelnx theory`: the paper's mean-field checks (hidden-state norms, LayerNorm's Jacobian), tables and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.analysis.theory import TheorySettings
from prelnx.commands import options

DEFAULTS = TheorySettings()  # the owner of the check's defaults


def theory_command(
    out: Annotated[Optional[Path], options.out("Folder for the CSVs, theory_summary.json and the plots (none: print only).")] = None,
    hidden_size: Annotated[int, typer.Option("--hidden-size", help="Hidden size d.")] = DEFAULTS.d,
    layers: Annotated[int, typer.Option("--layers", help="Layers to stack.")] = DEFAULTS.layers,
    seeds: Annotated[str, options.seeds("The seeds")] = str(len(DEFAULTS.seeds)),
    tokens: Annotated[int, typer.Option("--tokens", help="Sequence length of the Gaussian input.")] = DEFAULTS.tokens,
    scales: Annotated[str, typer.Option("--scales", help="Comma-separated input scalings for the LayerNorm Jacobian check.")] = ",".join(f"{s:g}" for s in DEFAULTS.scales),
    dry_run: Annotated[bool, options.dry_run("Print the settings that would be checked; compute nothing.")] = False,
) -> None:
    """Check the paper's mean-field results in its simplified model (uniform attention, Xavier d x d weights).

    Post-LN: ||x^(post,5)||^2 / d ~ 3/2 at every layer. Pre-LN: ||x_l||^2 / d inside [1 + l/2, 1 + 3l/2].
    LayerNorm: the spectral norm of its Jacobian follows sqrt(d) / ||x|| as the input is scaled.
    """
    from prelnx.analysis.theory import TheoryError, run_theory
    from prelnx.report.theory_claims import judge

    try:
        scale_values = tuple(float(part) for part in scales.split(",") if part.strip())
    except ValueError:
        raise TheoryError(f"--scales: expected numbers like 1,2,4, got {scales!r}") from None
    settings = TheorySettings(d=hidden_size, layers=layers, seeds=options.parse_seeds(seeds), tokens=tokens, scales=scale_values)
    if dry_run:
        typer.echo(f"would check d {settings.d}, {settings.layers} layers, {settings.tokens} tokens, seeds "
                   f"{','.join(map(str, settings.seeds))}, scales {scales} -> {out or 'the terminal only'}")  # fmt: skip
        return
    from prelnx.launch.local import sigterm_interrupts

    with sigterm_interrupts():  # kill as Ctrl-C: exit 130
        run_theory(settings, out, judge=judge)  # Lemma 1's verdicts (report sits above analysis)
    if out is not None:
        typer.echo(f"wrote {out}/theory_hidden.csv, theory_layernorm.csv, theory_summary.json, theory_hidden.png, theory_layernorm.png")
