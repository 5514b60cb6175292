"""Widgets every feature may use: labels that elide, flow rows, notices, the command palette,
shortcuts, the robots' colours, task status drawing and the build of a widget made in parts at start-up
(``staged``). Feature widgets live in their feature."""
