#!/usr/bin/env bash
# Install the Microsoft SARIF multitool (npm package @microsoft/sarif-multitool) for the tests.
# It goes into a cache directory outside the repository; the tests find it there.
#   OCR_HOOK_TOOLS   install directory (default: $HOME/.cache/ocr-hook-test-tools)
# The Linux package ships a self-contained .NET single-file executable (x86-64): no dotnet is
# needed. It would use libicu for globalisation; the tests run it with
# DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 so it needs nothing from Debian besides node/npm here.
set -euo pipefail

VERSION="5.7.0"
DIR="${OCR_HOOK_TOOLS:-$HOME/.cache/ocr-hook-test-tools}"
BIN="$DIR/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"

runs() {
    local out
    [ -f "$BIN" ] && chmod u+x "$BIN" 2>/dev/null \
        && out="$(DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 "$BIN" --version 2>&1)" \
        && [[ "$out" == *"Multitool $VERSION"* ]]
}

if runs; then
    echo "sarif-multitool $VERSION already installed: $BIN"
    exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "install_multitool.sh: the npm package only ships a Linux x86-64 binary; this is $(uname -s)-$(uname -m)" >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_multitool.sh: npm not found (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
fi
mkdir -p "$DIR"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "@microsoft/sarif-multitool@$VERSION"
# npm 11 does not run the package's own postinstall (a chmod) unless approved; do it here.
chmod u+x "$BIN"
if ! runs; then
    echo "install_multitool.sh: $BIN was installed but does not run" >&2
    exit 1
fi
echo "sarif-multitool $VERSION installed: $BIN"
