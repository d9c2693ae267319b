"""launch: the only code that starts or stops a training process (a local fairseq child, torchrun workers, the tasks
of a Slurm job; fairseq in this process for analysis), followed as typed events and outcomes for the records and
whoever watches. It decides nothing about what to train (the plan's) and renders no message beyond `events.render`.
"""
