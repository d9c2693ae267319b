"""DeepNorm (Wang et al. 2022, arXiv:2203.00555): a Post-LN sublayer becomes x -> LN(alpha * x + f(x)), with the
paper's beta-scaled Xavier init (biases keep fairseq's); alpha and beta from the paper's encoder-decoder table, both
in docs/variants.md. The same values are in xformers (`get_deepnorm_coefficients`); Microsoft's torchscale (the
paper's code) multiplies the existing init by 1.15 * (N^4 M)^(-1/16) for the encoder instead: we follow the paper.
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


def deepnorm_init_(layer: nn.Module, beta: float) -> None:
    """Re-initialise one fairseq transformer layer's weights as DeepNet does (biases untouched)."""
    for attention_name in ("self_attn", "encoder_attn"):
        attention = getattr(layer, attention_name, None)
        if attention is None:
            continue
        for name, gain in (("q_proj", 1.0), ("k_proj", 1.0), ("v_proj", beta), ("out_proj", beta)):
            nn.init.xavier_normal_(getattr(attention, name).weight, gain=gain)
    nn.init.xavier_normal_(layer.fc1.weight, gain=beta)
    nn.init.xavier_normal_(layer.fc2.weight, gain=beta)
