"""`ocr-hook mcp`: the review and preview commands as tools of a Model Context Protocol server (stdio).

Coding agents call `review` before they commit. The server is a thin entry point like the CLI: it
reuses commands.review / commands.preview and the JSON report unchanged. Only `ocr-hook mcp` imports
this package, and only it needs the optional `mcp` SDK (the `mcp` extra).
"""
