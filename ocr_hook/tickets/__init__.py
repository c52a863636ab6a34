"""Linked tickets (issue 60, DESIGN.md 20): the issues and work items a change says it is for, read from the
forge or from Jira, as the input of the built-in `linked-issues` check.

`model`: the small types (a reference found in the change's texts, a ticket's text as read, what a read
gave). `refs`: finding references in a title, body, branch name and commit messages (pure). The I/O edge the
review in CI calls is publish/tickets_read.py (the forge's adapter's `linked_tickets`, then Jira's
publish/jira.py): it needs the forges' clients, which sit above the agent that reads these types.
Ticket text is untrusted input: it reaches the model only as quoted data (agent/checks_pass.py), never as
settings or instructions.
"""
