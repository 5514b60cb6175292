"""Evals in the window: "Run evals…" (the pass-rate matrix filling in live, the failures, the comparison with
the last run) and "Save as test case" (the open thread as a case appended to an eval file)."""
