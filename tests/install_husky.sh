#!/usr/bin/env bash
# Install husky (npm) for tests/test_hook_managers.py, into .test-tools/husky/ (its own prefix: the
# multitool's installer empties .test-tools/node_modules). .ci/run runs it up front; the test runs it on
# first use. Already installed at this version: exits at once.
#   OCR_HOOK_TOOLS   install directory's parent (default: .test-tools/ in this checkout, gitignored)
# Exit codes: 0 installed · 4 npm not installed · other: npm failed.
set -euo pipefail

VERSION="9.1.7"
DIR="${OCR_HOOK_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)/.test-tools}/husky"
PACKAGE_JSON="$DIR/node_modules/husky/package.json"

if [ -f "$PACKAGE_JSON" ] && grep -q "\"version\": \"$VERSION\"" "$PACKAGE_JSON"; then
    echo "husky $VERSION already installed: $DIR/node_modules"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_husky.sh: npm not found (Debian: apt-get install -y nodejs npm)" >&2
    exit 4
fi
mkdir -p "$DIR"
rm -rf "$DIR/node_modules"
npm install --prefix "$DIR" --prefer-offline --no-audit --no-fund --no-save --loglevel=error "husky@$VERSION"
echo "husky $VERSION installed: $DIR/node_modules"
