"""records: a run dir's files and the one way every reader reads a run. Never starts a process or builds an argv."""
