"""Checks (DESIGN.md 20): the team's own rules, each answered for the whole change.

`model` holds the small types every stage reads (a check as its file defines it, a verdict with its
evidence, an override), loading check files, and overrides. The change-level pass and the verdict cache are the
agent's (agent/checks_pass.py, agent/checks_stage.py);
reports and publishing read only `model`.
"""
