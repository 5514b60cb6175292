"""Replay: a thread's messages sent again to another model or robot, and the comparison with the record."""
