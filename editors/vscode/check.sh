#!/usr/bin/env bash
# Type-check the VS Code client (tsc --noEmit) and package it to a .vsix with @vscode/vsce, from the committed
# package-lock.json (npm ci). CI runs it (.ci/run, beside the other npm installs); run it after changing the
# client. Fails (non-zero) when the client does not type-check, vsce refuses the manifest, or the package lacks
# the language client it runs on.
#   $1  where to write the .vsix (default: a temporary directory)
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-$(mktemp -d)/ocr-hook.vsix}"
if ! command -v npm >/dev/null 2>&1; then
    echo "editors/vscode/check.sh: npm not found (Debian: apt-get install -y nodejs npm)" >&2
    exit 4
fi
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
./node_modules/.bin/tsc -p . --noEmit
./node_modules/.bin/vsce package --allow-missing-repository --skip-license --out "$out" </dev/null
python3 - "$out" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for needed in ("extension/out/extension.js", "extension/node_modules/vscode-languageclient/package.json"):
    if needed not in names:
        sys.exit(f"editors/vscode/check.sh: {needed} is not in the package")
PY
echo "the VS Code client type-checks and packages: $out"
