"""The warm worker for commit-time reviews (DESIGN.md 14): `client` decides and hands a run over, `worker`
forks a fresh copy of itself per run, `control` is `ocr-hook warm status|start|stop`, `protocol` what the
two sides share. Nothing here is imported by a cold run beyond the client's light modules."""
