"""Legacy module paths only: jobs that submitit pickled before prelnx 0.2 name their classes by the module path of
that time (`prelnx.run.slurm_train.SlurmTrainTask`), and a requeued job must still start. Nothing else lives here;
new code imports from `prelnx.launch`."""
