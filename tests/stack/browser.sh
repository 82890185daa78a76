#!/usr/bin/env bash
# The browser tests (tests/browser/*.test.mjs): headless Chromium, driven by playwright-core,
# against the real api and worker on a throwaway Postgres and Azurite.
#
# Everything runs on free loopback ports with its state in a temp directory, so a dev stack from
# up.sh (or another run of this script) can keep running. The debug api and worker are built
# (cargo build -p api -p worker), two API keys are created (tenant A: the default tenant, tenant
# B: another one), `node --test tests/browser/` runs, and everything is stopped and removed on
# exit. Extra arguments go to `node --test` (e.g. --test-name-pattern=delete). When the browser
# tests pass, tests/stack/api_fuzz.sh fuzzes the same api against its OpenAPI document.
#
# Screenshots go to $BROWSER_ARTIFACTS (default target/browser-artifacts); logs of the services
# are printed when a test fails. KEEP_BROWSER_STACK=1 keeps the temp directory for a look;
# BROWSER_SKIP_BUILD=1 runs the binaries already in target/debug. The binaries come from
# $CARGO_TARGET_DIR when it is set, where cargo build puts them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Everything below runs from functions, which bash reads whole before it runs them: editing this
# file while a run is under way (it takes minutes) cannot change what that run executes.

cleanup() {
  set +e
  stop_pidfile "$work/worker.pid" worker
  stop_pidfile "$work/api.pid" api
  stop_azurite "$work/azurite"
  stop_postgres "$pg_dir"
  if [ "$status" -ne 0 ]; then
    for name in api worker; do
      if [ -s "$work/$name.log" ]; then
        warn "last lines of the $name log:"
        tail -n 40 "$work/$name.log" >&2
      fi
    done
  fi
  if [ "${KEEP_BROWSER_STACK:-0}" = 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
}

# create_key ARGS... — `api keys create ARGS`, which prints the key as its only stdout line.
create_key() {
  local out
  out=$("$API_BIN" keys create "$@")
  [ -n "$out" ] || die "api keys create $* printed no key"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || die "api keys create printed more than the key: $out"
  printf '%s\n' "$out"
}

main() {
  ensure_postgres
  ensure_azurite
  ensure_chromium
  [ -d "$REPO_ROOT/node_modules/playwright-core" ] || die "playwright-core is missing from node_modules (npm ci)"

  work=$(mktemp -d -t sheetrelay-browser.XXXXXX)
  # When root, Postgres runs as `postgres`, which must reach its data directory in here.
  chmod 755 "$work"
  pg_dir="$work/postgres"
  status=1

  trap cleanup EXIT

  PG_PORT=$(free_port)
  BLOB_PORT=$(free_port)
  QUEUE_PORT=$(free_port)
  TABLE_PORT=$(free_port)
  API_PORT=$(free_port)
  API_METRICS_PORT=$(free_port)
  WORKER_METRICS_PORT=$(free_port)

  # Relative to the repository, as cargo (run from there) reads it.
  target_dir=$(cd "$REPO_ROOT" && realpath -m "${CARGO_TARGET_DIR:-target}")

  start_postgres "$pg_dir" "$PG_PORT"
  create_database "$PG_PORT" sheetrelay
  start_azurite "$work/azurite" "$BLOB_PORT" "$QUEUE_PORT" "$TABLE_PORT"

  if [ "${BROWSER_SKIP_BUILD:-0}" = 1 ]; then
    log "BROWSER_SKIP_BUILD=1: using the api and worker in $target_dir/debug as they are"
  else
    log "building api and worker (cargo build -p api -p worker)"
    (cd "$REPO_ROOT" && cargo build --locked -p api -p worker)
  fi
  API_BIN="$target_dir/debug/api"
  WORKER_BIN="$target_dir/debug/worker"

  export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/sheetrelay"
  AZURE_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$BLOB_PORT" "$QUEUE_PORT")
  export AZURE_STORAGE_CONNECTION_STRING
  export LISTEN_ADDR="127.0.0.1:$API_PORT"
  # Small enough that the tests can send a file over it without a large upload.
  export MAX_UPLOAD_BYTES=${MAX_UPLOAD_BYTES:-2097152}
  export RUST_LOG="${RUST_LOG:-info}"
  export NO_COLOR=1
  # Webhooks work on this throwaway stack (and the schema fuzzer reaches their real answers): a
  # key of its own, and receivers on loopback allowed.
  WEBHOOK_SECRET_KEY=$(head -c 32 /dev/urandom | base64)
  export WEBHOOK_SECRET_KEY WEBHOOK_ALLOW_PRIVATE_NETWORKS=true
  API="http://127.0.0.1:$API_PORT"

  log "starting api on $API (it applies migrations at start)"
  start_bg "$work/api.pid" "$work/api.log" env METRICS_ADDR="127.0.0.1:$API_METRICS_PORT" "$API_BIN"
  deadline=$((SECONDS + 90))
  until http_status_is 200 "$API/readyz"; do
    pidfile_alive "$work/api.pid" || die "the api exited"
    [ "$SECONDS" -lt "$deadline" ] || die "GET $API/readyz is not 200 after 90s"
    sleep 0.2
  done
  log "starting worker"
  start_bg "$work/worker.pid" "$work/worker.log" \
    env METRICS_ADDR="127.0.0.1:$WORKER_METRICS_PORT" "$WORKER_BIN" run

  # Tenant A is the default tenant; tenant B is another one, with an Entra-style GUID id.
  TENANT_B=6f1c1a52-3f0e-4d8e-9b1a-2c5d7e9f0b1b
  SHEETRELAY_KEY_A=$(create_key --name browser-tests-a)
  SHEETRELAY_KEY_B=$(create_key --name browser-tests-b --tenant "$TENANT_B")

  export SHEETRELAY_URL="$API" SHEETRELAY_KEY_A SHEETRELAY_KEY_B SHEETRELAY_API_BIN="$API_BIN"
  export BROWSER_ARTIFACTS=${BROWSER_ARTIFACTS:-$REPO_ROOT/target/browser-artifacts}
  mkdir -p "$BROWSER_ARTIFACTS"

  cd "$REPO_ROOT"
  set +e
  if [ -n "${BROWSER_BENCH:-}" ]; then
    # BROWSER_BENCH=tests/browser/bench/embed.mjs: a benchmark on the same stack, printing figures.
    log "node $BROWSER_BENCH"
    node "$BROWSER_BENCH"
    status=$?
    API_FUZZ=0
  else
    log "node --test tests/browser/ (screenshots in $BROWSER_ARTIFACTS)"
    node --test --test-concurrency=1 "$@" tests/browser/
    status=$?
  fi
  set -e
  # The same stack, from outside: a schema fuzzer checks every answer against /openapi.json.
  # API_FUZZ=0 skips it.
  if [ "$status" -eq 0 ] && [ "${API_FUZZ:-1}" != 0 ]; then
    SHEETRELAY_KEY="$SHEETRELAY_KEY_A" "$STACK_DIR/api_fuzz.sh" || status=1
  fi
  pidfile_alive "$work/worker.pid" || {
    warn "the worker is no longer running"
    status=1
  }
  exit "$status"
}

main "$@"
