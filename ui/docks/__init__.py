"""Inspector docks of the main window."""
