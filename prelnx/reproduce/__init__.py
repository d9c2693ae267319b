"""`prelnx reproduce`: every experiment of the paper at one scale, as stages with explicit dependencies.

- scales.py: the one table of what each scale runs (existing configs, their toy-size overrides, the order).
- plan.py: a scale -> stages with their runs, data checks and compute estimate (pure: writes nothing).
- estimate.py: the compute estimate (a measured CPU probe for demo/cpu; GPU-hours for paper).
- choose.py: the choices a protocol makes after a premise sweep, by its committed rule.
- run.py: executes the stages in order, skipping complete ones; one progress line with an ETA.
- summary.py: report.md of the whole reproduction, from the run dirs alone.
"""
