#!/usr/bin/env bash
# The worker as scale-to-zero jobs on this machine, by hand, against the stack of up.sh: stops
# up.sh's always-on worker (run up.sh again to get it back), then runs the local KEDA-like scaler
# (harness::scaler, through `bench scaler`). Every polling interval it reads the queue's
# approximate length and the outbox backlog (shared::db::outbox::SCALER_BACKLOG_QUERY), starts
# `target/trial/worker run --drain` jobs (the binary up.sh built) by KEDA's ScaledJob default rule and reaps them; it
# prints a line whenever what it sees changes. Upload files meanwhile (up.sh prints a curl line)
# and watch jobs come, finish the work and go. Ctrl-C stops polling, lets the running jobs finish
# and prints the number of executions. Job logs: .local/logs/jobs/job-<n>.log.
#
# Settings (environment): SCALER_POLLING_INTERVAL (1s; KEDA's default is 30s),
# SCALER_QUEUE_LENGTH (5, messages per job), SCALER_BACKLOG_TARGET (5 outbox rows per job, or
# `none` when an always-on relay fills the queue), SCALER_MAX_EXECUTIONS (20), JOB_ROLE (all;
# `consumer` with an always-on relay), and the ports of up.sh (PG_PORT, BLOB_PORT, QUEUE_PORT).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE_DIR="$REPO_ROOT/.local"
PG_PORT=${PG_PORT:-55432}
BLOB_PORT=${BLOB_PORT:-10000}
QUEUE_PORT=${QUEUE_PORT:-10001}

port_open 127.0.0.1 "$PG_PORT" || die "no Postgres on port $PG_PORT: run tests/stack/up.sh first"
port_open 127.0.0.1 "$QUEUE_PORT" || die "no Azurite on port $QUEUE_PORT: run tests/stack/up.sh first"

log "building the worker (release, as up.sh does) and the scaler (bench, debug)"
(cd "$REPO_ROOT" && cargo build --release -p worker && cargo build -p bench)

# The jobs do the work now: an always-on worker would take it all before a job starts.
stop_pidfile "$STATE_DIR/worker.pid" worker

export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/sheetrelay"
AZURE_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$BLOB_PORT" "$QUEUE_PORT")
export AZURE_STORAGE_CONNECTION_STRING
export RUST_LOG="${RUST_LOG:-info}"
export NO_COLOR=1

exec "$REPO_ROOT/target/debug/bench" scaler \
  --worker "$REPO_ROOT/target/${PROFILE:-trial}/worker" \
  --role "${JOB_ROLE:-all}" \
  --polling-interval "${SCALER_POLLING_INTERVAL:-1s}" \
  --queue-length "${SCALER_QUEUE_LENGTH:-5}" \
  --backlog-target "${SCALER_BACKLOG_TARGET:-5}" \
  --max-executions "${SCALER_MAX_EXECUTIONS:-20}" \
  --logs "$STATE_DIR/logs/jobs" \
  "$@"
