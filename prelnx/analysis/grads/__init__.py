"""The gradient study of the paper's Figure 3: FFN weight-gradient norms of real fairseq models at initialisation.

For every layout x depth x seed, a model built as `prelnx train` builds it gets the same real mini-batches; a row
of grads.csv is the Frobenius norm of an FFN weight's (W1 = fc1, W2 = fc2) per-token gradient, the mean over the
batches; hidden.csv holds each layer's output RMS.
"""
