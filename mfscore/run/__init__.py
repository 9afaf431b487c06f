"""The local runner: a task's plan, score, fold and report in this process (and a process pool)."""
