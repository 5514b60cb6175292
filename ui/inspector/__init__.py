"""The inspector: the Tool calls, Memory and Trace docks and the Qt item models they read (fed the
bridge's batched events, or a stored thread's events)."""
