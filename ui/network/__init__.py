"""Networks of robots in the window: the Network dock (graph, the selected task) and the item models of
robots and networks (the header's picker lists both)."""
