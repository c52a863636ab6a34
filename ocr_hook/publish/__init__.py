"""Publishing a finished review where people read it: a GitHub pull-request review, a SARIF upload.

Reads the `--format json` report (never the review's internals), so it runs after the gate is decided
and can never change it. Pure parts (which findings go where, the texts, the markers) are apart from
the HTTP client (github_api), which is the only module that talks to the network.
"""
