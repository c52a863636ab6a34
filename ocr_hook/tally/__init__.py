"""Outcomes (DESIGN.md 18): what became of the findings reviews raised. `entry` turns a review into a history
entry, `count` follows findings through the history and tallies them, `render` shows the tally."""
