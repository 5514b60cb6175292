"""The thread list: the sidebar (search, pinned, by date) and its item model."""
