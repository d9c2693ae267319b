"""launch: the only code that starts or stops a training process — a local fairseq child, torchrun workers, the
tasks of a Slurm job (and fairseq in this process, for the models that analysis builds). It follows what the
process does as typed events and outcomes and hands them to the records and to whoever watches. It decides
nothing about what to train (that is the plan's) and renders no message for users beyond `events.render`.
"""
