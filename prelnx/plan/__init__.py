"""plan: a config -> its data folder, fairseq argv, workers, batch and run dir (`plan.launch.plan_run`). Pure: never
writes a file or starts a process; a task is one planner module."""
