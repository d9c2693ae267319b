"""plan: a config -> where its data is, the exact fairseq-train argv, its workers and batch, its run dir.

Never writes a file and never starts a process: every function here is a pure function of the config, the
environment it is given and (for the data checks) files it reads. One call, `plan.launch.plan_run`, turns a
config into everything a launch needs (`RunPlan`); a task is one planner module (`translation`, `encoder`).
"""
