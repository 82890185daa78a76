#!/usr/bin/env bash
# A schema fuzzer against a running api: schemathesis reads /openapi.json and sends generated
# requests (valid ones, and invalid ones in its coverage phase) to every operation, with a key,
# and fails on any answer the document does not declare: a status it does not list, a body that
# does not match its schema, a content type it does not name, or a 5xx.
#
#   SHEETRELAY_URL=http://127.0.0.1:8080 SHEETRELAY_KEY=srk_… tests/stack/api_fuzz.sh
#
# The event stream is left out: a valid request to it is answered with a stream that never ends
# (tests/it/events/stream.rs checks it).
#
# Bounded: at most FUZZ_MAX_EXAMPLES (default 30) examples per operation. schemathesis (pinned with
# hashes in tests/fuzz/requirements.txt) is installed from PyPI into target/fuzz-venv on first use.
#
# One worker: with two, hypothesis describes its lambdas by calling `ast.parse` from two threads at
# once, which CPython 3.11 does not survive (`SystemError: AST constructor recursion depth
# mismatch`, CPython gh-106905): the run then ends in a "Runtime Error" that says nothing about the
# api. Seen on GET /api/v1/events in one run of two; the run is ~20 s either way.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${SHEETRELAY_URL:?set SHEETRELAY_URL to the base URL of the api}"
: "${SHEETRELAY_KEY:?set SHEETRELAY_KEY to an API key}"
venv=$(ensure_venv fuzz-venv "$REPO_ROOT/tests/fuzz/requirements.txt")

log "schemathesis against $SHEETRELAY_URL/openapi.json"
# tests/fuzz/hooks.py: how to send the media types schemathesis does not know (tus's PATCH body).
export SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$REPO_ROOT/tests/fuzz${PYTHONPATH:+:$PYTHONPATH}"
exec "$venv/bin/st" run "$SHEETRELAY_URL/openapi.json" \
  --header "Authorization: Bearer $SHEETRELAY_KEY" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "${FUZZ_MAX_EXAMPLES:-30}" \
  --workers 1 \
  --seed "${FUZZ_SEED:-20261124}" \
  --no-color \
  --exclude-path /api/v1/events/stream \
  "$@"
