#!/usr/bin/env bash
# README command #2: run the whole test suite.
#
# Installs what the integration tests need (Postgres server binaries from Debian's packages,
# Azurite and the JavaScript webhook verifier via npm ci, frictionless into target/oracle-venv,
# the Python webhook verifier into target/webhooks-venv) and runs
# `cargo test --workspace --locked` with any extra arguments, e.g.
#   tests/stack/test.sh -p sheetrelay-tests --test it services
# then the browser tests (tests/stack/browser.sh: Debian's chromium, installed when missing).
# The test harness (tests/harness/services.rs) starts its own throwaway Postgres and Azurite on
# free loopback ports, and so does browser.sh; nothing here starts a server.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_postgres
ensure_azurite
# For tests/it/observability.rs: promtool checks the shipped alert rules.
ensure_promtool
# For tests/it/oracle.rs: frictionless, the reference the template validation is checked against.
SHEETRELAY_FRICTIONLESS="$(ensure_venv oracle-venv "$REPO_ROOT/tests/oracle/requirements.txt")/bin/python"
export SHEETRELAY_FRICTIONLESS
# For tests/it/webhooks/verifiers.rs: the official Standard Webhooks verifier for Python (the
# JavaScript one comes with npm ci, from package.json).
SHEETRELAY_WEBHOOKS_PYTHON="$(ensure_venv webhooks-venv "$REPO_ROOT/tests/webhooks/requirements.txt")/bin/python"
export SHEETRELAY_WEBHOOKS_PYTHON
# For tests/it/parquet.rs: pyarrow reads the Parquet exports back.
SHEETRELAY_PARQUET_PYTHON="$(ensure_venv parquet-venv "$REPO_ROOT/tests/parquet/requirements.txt")/bin/python"
export SHEETRELAY_PARQUET_PYTHON
# For tests/it/resumable/tuspy.rs: tuspy, the tus project's client, uploads resumably.
SHEETRELAY_TUS_PYTHON="$(ensure_venv tus-venv "$REPO_ROOT/tests/tus/requirements.txt")/bin/python"
export SHEETRELAY_TUS_PYTHON
# For tests/it/refusals.rs: httpx sends refused uploads, as Python clients do.
SHEETRELAY_EDGE_PYTHON="$(ensure_venv edge-venv "$REPO_ROOT/tests/edge/requirements.txt")/bin/python"
export SHEETRELAY_EDGE_PYTHON

cd "$REPO_ROOT"
# The tests run the api and worker binaries as child processes (key administration, job runs):
# build them first, so they are never older than the code under test.
log "cargo build --locked -p api -p worker"
cargo build --locked -p api -p worker
log "cargo test --workspace --locked $*"
cargo test --workspace --locked "$@"

# The web page in headless Chromium against the api and worker just built (tests/stack/browser.sh
# starts its own Postgres and Azurite). BROWSER_TESTS=0 skips them.
if [ "${BROWSER_TESTS:-1}" = 0 ]; then
  log "BROWSER_TESTS=0: skipping the browser tests"
else
  BROWSER_SKIP_BUILD=1 "$STACK_DIR/browser.sh"
fi
