"""Analyses that build the training models in process: the gradient study (Figure 3) and the mean-field checks."""
