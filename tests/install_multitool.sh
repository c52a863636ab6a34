#!/usr/bin/env bash
# Install the Microsoft SARIF multitool for the tests (npm package @microsoft/sarif-multitool-linux, the
# Linux build the package @microsoft/sarif-multitool would pick; installed directly so the version is exact).
# tests/validators.py runs this on first use; .ci/run runs it up front. Already installed: exits at once.
#   OCR_HOOK_TOOLS   install directory (default: .test-tools/ in this checkout, gitignored)
# Exit codes: 0 installed and runs · 3 no build for this platform · 4 npm not installed · other: failed.
# The package ships a self-contained .NET single-file executable (x86-64): no dotnet is needed. It would use
# libicu for globalisation; it is run with DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 so it needs only node/npm.
set -euo pipefail

VERSION="5.7.0"
PACKAGE="@microsoft/sarif-multitool-linux"
DIR="${OCR_HOOK_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)/.test-tools}"
BIN="$DIR/node_modules/$PACKAGE/Sarif.Multitool"

runs() {
    local out
    [ -f "$BIN" ] && chmod u+x "$BIN" 2>/dev/null \
        && out="$(DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 "$BIN" --version 2>&1)" \
        && [[ "$out" == *"Multitool $VERSION"* ]]
}

if runs; then
    echo "sarif-multitool $VERSION already installed: $BIN"
    exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "install_multitool.sh: npm has no multitool build for $(uname -s)-$(uname -m), only Linux x86-64" >&2
    exit 3
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_multitool.sh: npm not found (Debian: apt-get install -y nodejs npm)" >&2
    exit 4
fi
mkdir -p "$DIR"
rm -rf "$DIR/node_modules"  # whatever an earlier, broken or older install left: npm would keep it
# --prefer-offline: the version is exact, so a copy in npm's cache is the right one (no registry round trip).
# --ignore-scripts: the package's only script is a chmod, done below (npm 11 would not run it unapproved).
npm install --prefix "$DIR" --prefer-offline --ignore-scripts --no-audit --no-fund --no-save --loglevel=error \
    "$PACKAGE@$VERSION"
chmod u+x "$BIN"
if ! runs; then
    echo "install_multitool.sh: $BIN was installed but does not run" >&2
    exit 1
fi
echo "sarif-multitool $VERSION installed: $BIN"
