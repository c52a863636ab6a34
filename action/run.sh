#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install ocr-hook from the action's own checkout, review,
# and publish the outcome as step outputs. Runs outside GitHub too: everything comes from the
# environment (GITHUB_* as the runner sets them, INPUT_* as action.yml maps its inputs).
#
# Always exits 0 once the outputs are written: the review's exit code is the `exit-code` output, and
# action.yml's last step fails the job with it, after the SARIF upload. On pull requests it then
# publishes the report as a pull-request review (pr-review), which never changes that exit code.
#
# `run.sh upload-sarif` is action.yml's upload step: the SARIF to code scanning with the ocr-hook
# installed by the review step (action/support.py upload-sarif says how `auto` treats failures).
set -euo pipefail

action_dir="${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
work="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ocr-hook"
python="${OCR_ACTION_PYTHON:-python3}"
venv="$work/venv"
mkdir -p "$work"

# The GitHub token is for publishing only: kept out of the review's environment.
github_token="${INPUT_GITHUB_TOKEN:-}"
unset INPUT_GITHUB_TOKEN

if [ "${1:-}" = "upload-sarif" ]; then
  commit="$(git rev-parse HEAD 2>/dev/null || printf '%s' "${GITHUB_SHA:-}")"
  ref="${GITHUB_REF:-}"
  # A pull request's merge ref names the merge commit; a checkout of the head is that head's ref
  # (what github/codeql-action/upload-sarif sends too).
  if [[ "$ref" =~ ^refs/pull/([0-9]+)/merge$ ]] && [ "$commit" != "${GITHUB_SHA:-}" ]; then
    ref="refs/pull/${BASH_REMATCH[1]}/head"
  fi
  OCR_ACTION_GITHUB_TOKEN="$github_token" OCR_ACTION_COMMIT="$commit" OCR_ACTION_REF="$ref" \
    exec "$venv/bin/python" "$action_dir/action/support.py" upload-sarif
fi

output() { # name value: one step output (GITHUB_OUTPUT), echoed to the log when run elsewhere
  if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; else printf 'output %s=%s\n' "$1" "$2"; fi
}
summary() { if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then printf '%s\n' "$1" >>"$GITHUB_STEP_SUMMARY"; fi; }
finish() { # exit-code status: outputs for a run that reviewed nothing
  output exit-code "$1"; output status "$2"; output findings 0; output sarif-file ""
  exit 0
}

# --- the runner -----------------------------------------------------------------------------------
# The install below is a POSIX virtualenv (bin/, a symlink into the tool cache): Linux and macOS runners.
if [ "${RUNNER_OS:-}" = "Windows" ]; then
  echo "::error title=ocr-hook::this Action runs on Linux and macOS runners, not on Windows: use runs-on: ubuntu-latest for the review job (on Windows, install ocr-hook from this repository as its README says and run ocr-hook review in a step of your own)"
  summary "ocr-hook: **failed**: the Action does not run on Windows runners."
  finish 2 error
fi

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
# Into the runner's tool cache when it has one (RUNNER_TOOL_CACHE; self-hosted runners keep it between
# jobs): an install of the same sources with the same Python is reused there instead of repeated. It is
# complete once its .complete file exists; a .lock directory marks an install under way, and a job that
# finds one installs into its own temporary directory instead of waiting. $venv is always the install
# (a link to the cached one), which the upload step uses too.
install() { # dir
  rm -rf "$1"
  "$python" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check "$action_dir"
}
echo "::group::Installing ocr-hook from $action_dir"
rm -rf "$venv"
cached=""
# Without a key (a Python too old for ocr-hook), no tool cache: pip then says what is wrong.
if [ -n "${RUNNER_TOOL_CACHE:-}" ] && key="$("$python" "$action_dir/action/support.py" install-key "$action_dir")"; then
  cached="$RUNNER_TOOL_CACHE/ocr-hook/$key"
  mkdir -p "$(dirname "$cached")"
fi
if [ -n "$cached" ] && [ -f "$cached.complete" ] && "$cached/bin/ocr-hook" --version >/dev/null 2>&1; then
  echo "Reusing the install in $cached"
  ln -s "$cached" "$venv"
elif [ -n "$cached" ] && mkdir "$cached.lock" 2>/dev/null; then
  rm -f "$cached.complete"
  if install "$cached"; then touch "$cached.complete"; fi
  rmdir "$cached.lock"
  [ -f "$cached.complete" ] || exit 1
  ln -s "$cached" "$venv"
else
  if [ -n "$cached" ]; then
    echo "::notice title=ocr-hook::$cached.lock exists: another job is installing there (or one stopped while it did: remove it if none is running). Installing into this job's temporary directory."
  fi
  install "$venv"
fi
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
# On a pull request whose findings the action posts as review threads, the review reads what maintainers did
# with them (a maintainer's resolve dismisses that finding for this pull request): it needs the token for that.
# Elsewhere it gets none (an empty one reads nothing). Set for the command only, never on a command line.
review_token=""
if [ "${INPUT_PR_REVIEW:-true}" = "true" ]; then
  case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target) review_token="$github_token" ;;
  esac
fi

set +e
GITHUB_TOKEN="$review_token" "${cmd[@]}"
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

# --- the pull-request review ---------------------------------------------------------------------------
if [ "${INPUT_PR_REVIEW:-true}" = "true" ] && [ "$code" -ne 2 ] && [ -s "$report" ]; then
  case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target)
      # One line says what was published or why not; the gate stays the review's exit code.
      GITHUB_TOKEN="$github_token" "$venv/bin/ocr-hook" github-review --from "$report" \
        || echo "::warning title=ocr-hook::the pull-request review was not published"
      ;;
  esac
fi
exit 0
