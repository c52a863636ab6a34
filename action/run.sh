#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install ocr-hook from the action's own checkout, review,
# and publish the outcome as step outputs. Runs outside GitHub too: everything comes from the
# environment (GITHUB_* as the runner sets them, INPUT_* as action.yml maps its inputs).
#
# Always exits 0 once the outputs are written: the review's exit code is the `exit-code` output, and
# action.yml's last step fails the job with it, after the SARIF upload.
set -euo pipefail

action_dir="${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
work="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ocr-hook"
python="${OCR_ACTION_PYTHON:-python3}"
mkdir -p "$work"

output() { # name value: one step output (GITHUB_OUTPUT), echoed to the log when run elsewhere
  if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; else printf 'output %s=%s\n' "$1" "$2"; fi
}
summary() { if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then printf '%s\n' "$1" >>"$GITHUB_STEP_SUMMARY"; fi; }
finish() { # exit-code status: outputs for a run that reviewed nothing
  output exit-code "$1"; output status "$2"; output findings 0; output sarif-file ""
  exit 0
}

# --- the key ------------------------------------------------------------------------------------
if [ -n "${INPUT_ANTHROPIC_API_KEY:-}" ]; then
  export ANTHROPIC_API_KEY="$INPUT_ANTHROPIC_API_KEY"
fi
if [ -z "${ANTHROPIC_API_KEY:-}" ] && [ -z "${ANTHROPIC_AUTH_TOKEN:-}" ]; then
  if [ "${INPUT_REQUIRE_KEY:-false}" = "true" ]; then
    echo "::error title=ocr-hook::no API key: set the anthropic-api-key input (require-key is true)"
    summary "ocr-hook: **failed**: no API key (require-key is true)."
    finish 2 error
  fi
  reason="$("$python" "$action_dir/action/support.py" skip-reason)"
  if [ -n "$reason" ]; then
    echo "::notice title=ocr-hook skipped::no API key: $reason. Set require-key: true to fail instead."
    summary "ocr-hook: **skipped**: no API key ($reason)."
    finish 0 skipped
  fi
  # No key and no reason to expect none: go on, a provider set in .ocr-hook.yaml (Bedrock, Vertex)
  # may have its own credentials; ocr-hook says so clearly when it has none.
fi

# --- the args input (checked before anything slow) ----------------------------------------------------
extra=()
if [ -n "${INPUT_ARGS:-}" ]; then
  # Through a file, not a process substitution: a refused `args` must stop the run, not vanish.
  if ! "$python" "$action_dir/action/support.py" split-args "$INPUT_ARGS" >"$work/args"; then
    echo "::error title=ocr-hook::the args input is not valid shell words (unbalanced quotes?)"
    summary "ocr-hook: **failed**: the args input is not valid shell words."
    finish 2 error
  fi
  while IFS= read -r -d '' word; do extra+=("$word"); done <"$work/args"
fi

# --- history -------------------------------------------------------------------------------------
# actions/checkout fetches one commit by default; the merge base needs more. Fetch it here rather
# than fail: the base branch for pull requests, all history otherwise.
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null || echo false)" = "true" ]; then
  echo "::group::Fetching history (shallow checkout)"
  refspecs=()
  if [ -n "${GITHUB_BASE_REF:-}" ]; then
    refspecs=("+refs/heads/${GITHUB_BASE_REF}:refs/remotes/origin/${GITHUB_BASE_REF}")
  fi
  git -c protocol.version=2 fetch --no-tags --prune --unshallow origin ${refspecs[@]+"${refspecs[@]}"} \
    || echo "::warning title=ocr-hook::could not fetch the history; the review may stop with a shallow-clone error"
  echo "::endgroup::"
fi

# --- install ----------------------------------------------------------------------------------------
echo "::group::Installing ocr-hook from $action_dir"
venv="$work/venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$action_dir"
"$venv/bin/ocr-hook" --version
echo "::endgroup::"

# --- review ------------------------------------------------------------------------------------------
sarif="$work/ocr-hook.sarif"
report="$work/ocr-hook.json"
rm -f "$sarif" "$report"
cmd=("$venv/bin/ocr-hook" review --base "${INPUT_BASE:-auto}" --format github
     --sarif-output "$sarif" --json-output "$report")
[ -n "${INPUT_FAIL_ON:-}" ] && cmd+=(--fail-on "$INPUT_FAIL_ON")
[ -n "${INPUT_MAX_COST:-}" ] && cmd+=(--max-cost "$INPUT_MAX_COST")
[ -n "${INPUT_TIMEOUT:-}" ] && cmd+=(--timeout "$INPUT_TIMEOUT")
[ -n "${INPUT_MODEL:-}" ] && cmd+=(--model "$INPUT_MODEL")
[ -n "${INPUT_EFFORT:-}" ] && cmd+=(--effort "$INPUT_EFFORT")
if [ -n "${INPUT_CACHE_DIR:-}" ]; then cmd+=(--cache-dir "$INPUT_CACHE_DIR"); else cmd+=(--no-cache); fi
# (The ${a[@]+...} form: an empty array under `set -u` is an error in the bash 3 of macOS.)
cmd+=(${extra[@]+"${extra[@]}"})

set +e
"${cmd[@]}"
code=$?
set -e

output exit-code "$code"
if [ "$code" -eq 2 ] || [ ! -s "$report" ]; then
  output status error
  output findings 0
else
  while IFS='=' read -r name value; do output "$name" "$value"; done < <("$python" "$action_dir/action/support.py" report-outputs "$report")
fi
if [ -s "$sarif" ]; then output sarif-file "$sarif"; else output sarif-file ""; fi
exit 0
