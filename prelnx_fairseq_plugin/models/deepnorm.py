"""DeepNorm (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers", arXiv:2203.00555).

A Post-LN sublayer x -> LN(x + f(x)) becomes x -> LN(alpha * x + f(x)). At initialisation the value and output
projections of every attention and both FFN matrices are drawn with xavier_normal_(gain=beta), the query and key
projections with xavier_normal_(gain=1) (the paper's pseudocode, Section 2); biases keep fairseq's init. For an
encoder-decoder with N encoder and M decoder layers (the paper's table, "Enc-Dec" column):

  encoder   alpha = 0.81 * (N^4 * M)^(1/16)     beta = 0.87 * (N^4 * M)^(-1/16)
  decoder   alpha = (3M)^(1/4)                   beta = (12M)^(-1/4)

The same values are in xformers (`get_deepnorm_coefficients`, xformers/components/residual.py) and labml's
annotated DeepNorm. Microsoft's torchscale (the paper's code) multiplies the existing init by 1.15 * (N^4 M)^(-1/16)
for the encoder instead; we follow the paper's table and pseudocode.
"""

from __future__ import annotations

from torch import nn


def deepnorm_coefficients(side: str, encoder_layers: int, decoder_layers: int) -> tuple[float, float]:
    """(alpha, beta) of the table above: the residual weight in LN(alpha * x + f(x)), and the xavier_normal_ gain of
    v_proj, out_proj, fc1 and fc2 (the decoder's depend on M only)."""
    if side == "encoder":
        depth = (encoder_layers**4 * decoder_layers) ** (1 / 16)
        return 0.81 * depth, 0.87 / depth
    return (3 * decoder_layers) ** 0.25, (12 * decoder_layers) ** -0.25


SCALED_BY_BETA = ("v_proj", "out_proj")  # inside each attention
UNSCALED = ("q_proj", "k_proj")  # xavier_normal_ with gain 1


def deepnorm_init_(layer: nn.Module, beta: float) -> None:
    """Re-initialise one fairseq transformer layer's weights as DeepNet does (biases untouched)."""
    for attention_name in ("self_attn", "encoder_attn"):
        attention = getattr(layer, attention_name, None)
        if attention is None:
            continue
        for name in UNSCALED:
            nn.init.xavier_normal_(getattr(attention, name).weight, gain=1.0)
        for name in SCALED_BY_BETA:
            nn.init.xavier_normal_(getattr(attention, name).weight, gain=beta)
    nn.init.xavier_normal_(layer.fc1.weight, gain=beta)
    nn.init.xavier_normal_(layer.fc2.weight, gain=beta)
