"""Project guidance: what the team tells the reviewer (DESIGN.md section 5).

REVIEW.md and AGENTS.md/CLAUDE.md files found from the root down to each reviewed file, and the
`rules` of the settings, all read from the *trusted revision* (the side of the change that is not
under review), so a change can never rewrite the guidance that judges it. Nothing here talks to the
model: the agent receives the guidance as prompt text through its ReviewJob.
"""
