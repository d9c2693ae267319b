"""records: a run dir's files — status.json, metrics.jsonl rows, TensorBoard events, the lock, the checkpoints'
state and the reconciliation of all of them — and the one way every reader (sweep summary, plots, report) reads a
run. Never starts a process and never builds an argv.
"""
