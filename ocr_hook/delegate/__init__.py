"""Delegate mode (DESIGN.md 15): a host coding agent does a review's reasoning through ocr-hook's tools.

`ops` holds the three operations (start, call, and the agent finish hands to the review pipeline); `session`
keeps each session on disk. The brief, the tool answers and the settling of comments are the agent's own code
(ocr_hook.agent.hosted); the entry points are ocr_hook.commands.delegate and the MCP server.
"""
