"""Qt item models over core data. They hold no references to views and are tested without widgets."""
