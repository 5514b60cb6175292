"""Widgets every feature may use: labels that elide, flow rows, notices, the command palette,
shortcuts, the robots' colours and task status drawing. Feature widgets live in their feature."""
