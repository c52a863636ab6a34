"""Checks (DESIGN.md 20): the team's own rules, each answered for the whole change.

`model` holds the small types every stage reads (a check as its file defines it, a verdict with its
evidence, an override). Loading check files, the change-level pass and the verdict cache live beside it;
reports and publishing read only `model`.
"""
