"""Publishing a finished review where people read it: merge/pull-request reviews on every forge, a SARIF upload.

Reads the `--format json` report (report_input; never the review's internals), so it runs after the gate
is decided and can never change it. The pure core knows no forge: plan (which findings go inline, the
summary, markers, the identity rule), render (model text and paths made inert), pr_diff (the lines a
forge takes comments on). forges holds the adapter protocol, the registry and forge detection;
publishing drives one adapter; forge_NAME speaks one forge's API, through api_client, the only
module that talks to the network (github_api is its GitHub form, also used by the SARIF upload).
"""
