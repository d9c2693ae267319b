"""launch: the only code that starts or stops a training (a local fairseq child, torchrun workers, a Slurm job's
tasks; fairseq in this process for analysis), followed as typed events; it decides nothing about what to train."""
