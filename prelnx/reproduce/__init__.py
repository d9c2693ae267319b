"""`prelnx reproduce`: every experiment of the paper at one scale, as stages with explicit dependencies (scales.py)."""
