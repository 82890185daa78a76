#!/usr/bin/env bash
# README command #1: the whole stack on this machine, then one upload end to end.
#
# Installs what is missing (Postgres from Debian's packages, Azurite with npm ci), starts both on
# loopback with state in .local/ (Postgres 55432, Azurite 10000/10001/10002, api 8080, metrics of
# the api 9090 and of the worker 9091; PG_PORT, BLOB_PORT, QUEUE_PORT, TABLE_PORT, API_PORT,
# METRICS_PORT and WORKER_METRICS_PORT override the ports when they are taken), builds and
# (re)starts the api and the worker, creates a development API key (kept in .local/dev-key and
# reused while it works), uploads tests/stack/sample.csv with it and prints its task, its first
# rows, a ready curl line and the web page's sign-in link. Run it again at any time: running services are reused, api and worker restart on the new
# build. Stop everything with tests/stack/down.sh. Logs: .local/logs/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE_DIR="$REPO_ROOT/.local"
LOG_DIR="$STATE_DIR/logs"
DB_NAME=sheetrelay
# Fixed dev ports; override them only when something else already holds one.
PG_PORT=${PG_PORT:-55432}
BLOB_PORT=${BLOB_PORT:-10000}
QUEUE_PORT=${QUEUE_PORT:-10001}
TABLE_PORT=${TABLE_PORT:-10002}
API_PORT=${API_PORT:-8080}
METRICS_PORT=${METRICS_PORT:-9090}
WORKER_METRICS_PORT=${WORKER_METRICS_PORT:-9091}
API="http://127.0.0.1:$API_PORT"
KEY_FILE="$STATE_DIR/dev-key"
TASK_TIMEOUT=${TASK_TIMEOUT:-60}

mkdir -p "$LOG_DIR"

# --- services ---------------------------------------------------------------------------------
ensure_postgres
ensure_azurite
start_postgres "$(postgres_data_dir "$STATE_DIR/postgres")" "$PG_PORT"
create_database "$PG_PORT" "$DB_NAME"
start_azurite "$STATE_DIR/azurite" "$BLOB_PORT" "$QUEUE_PORT" "$TABLE_PORT"

# --- api and worker ---------------------------------------------------------------------------
# The `trial` profile: optimised, without release's fat LTO (a first build in minutes, not a
# quarter of an hour; Cargo.toml says more). PROFILE=release builds as the images do.
PROFILE=${PROFILE:-trial}
log "building api and worker (cargo build --profile $PROFILE)"
(cd "$REPO_ROOT" && cargo build --locked --profile "$PROFILE" -p api -p worker)

export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/$DB_NAME"
AZURE_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$BLOB_PORT" "$QUEUE_PORT")
export AZURE_STORAGE_CONNECTION_STRING
export LISTEN_ADDR="127.0.0.1:$API_PORT"
# Each process serves /metrics on its own port (set below per process).
unset METRICS_ADDR
export RUST_LOG="${RUST_LOG:-info}"
export NO_COLOR=1 # plain log files
# Webhooks on the dev stack: a sealing key kept with its state (endpoints made in an earlier run
# must still sign), and receivers on this machine allowed.
[ -s "$STATE_DIR/webhook-secret-key" ] || head -c 32 /dev/urandom | base64 >"$STATE_DIR/webhook-secret-key"
WEBHOOK_SECRET_KEY=$(cat "$STATE_DIR/webhook-secret-key")
export WEBHOOK_SECRET_KEY WEBHOOK_ALLOW_PRIVATE_NETWORKS=true

# Restart so that they run the build we just made.
stop_pidfile "$STATE_DIR/worker.pid" worker
stop_pidfile "$STATE_DIR/api.pid" api
if port_open 127.0.0.1 "$API_PORT"; then
  die "port $API_PORT is taken by a process up.sh did not start: stop it, or set API_PORT"
fi

log "starting api (log: $LOG_DIR/api.log); it applies migrations at start"
start_bg "$STATE_DIR/api.pid" "$LOG_DIR/api.log" \
  env METRICS_ADDR="127.0.0.1:$METRICS_PORT" "$REPO_ROOT/target/$PROFILE/api"
log "starting worker (log: $LOG_DIR/worker.log)"
start_bg "$STATE_DIR/worker.pid" "$LOG_DIR/worker.log" \
  env METRICS_ADDR="127.0.0.1:$WORKER_METRICS_PORT" "$REPO_ROOT/target/$PROFILE/worker" run

deadline=$((SECONDS + 90))
until http_status_is 200 "$API/readyz"; do
  if ! pidfile_alive "$STATE_DIR/api.pid"; then
    tail -n 40 "$LOG_DIR/api.log" >&2 || true
    die "the api exited (log above: $LOG_DIR/api.log)"
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    tail -n 40 "$LOG_DIR/api.log" >&2 || true
    die "GET $API/readyz is not 200 after 90s (log above: $LOG_DIR/api.log)"
  fi
  sleep 0.2
done
log "api ready: $API"
if ! pidfile_alive "$STATE_DIR/worker.pid"; then
  tail -n 20 "$LOG_DIR/worker.log" >&2 || true
  warn "the worker is not running (log above): the task will stay PENDING"
fi

# --- a development key ----------------------------------------------------------------------
# Reused while the api accepts it (a fresh database or a revoked key gets a new one).
DEV_KEY=""
if [ -s "$KEY_FILE" ] && http_status_is 200 "$API/api/v1/files?limit=1" -H "Authorization: Bearer $(cat "$KEY_FILE")"; then
  DEV_KEY=$(cat "$KEY_FILE")
  log "reusing the development API key in $KEY_FILE"
else
  log "creating a development API key (api keys create --name dev)"
  DEV_KEY=$("$REPO_ROOT/target/$PROFILE/api" keys create --name dev)
  (umask 077 && printf '%s\n' "$DEV_KEY" >"$KEY_FILE")
fi
AUTH=(-H "Authorization: Bearer $DEV_KEY")

# --- one upload end to end --------------------------------------------------------------------
# Pretty-print JSON when python3 is around; print it as is otherwise.
pretty() {
  local body
  body=$(cat)
  if command -v python3 >/dev/null 2>&1 && printf '%s' "$body" | python3 -m json.tool 2>/dev/null; then
    return 0
  fi
  printf '%s\n' "$body"
}

# json_string KEY — the value of the first "KEY": "value" in the JSON on stdin (empty if none).
json_string() {
  { grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" || true; } | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

log "uploading tests/stack/sample.csv: POST $API/api/v1/files"
status=$(curl -sS -o "$tmp/upload.json" -D "$tmp/upload.headers" -w '%{http_code}' "${AUTH[@]}" \
  -F "file=@$STACK_DIR/sample.csv" "$API/api/v1/files")
echo "HTTP $status"
pretty <"$tmp/upload.json"
[ "$status" = 202 ] || die "upload was not accepted (HTTP $status)"

# The contract's Location header names the task: /api/v1/tasks/{task_id}.
task_path=$(tr -d '\r' <"$tmp/upload.headers" | sed -n 's/^[Ll]ocation:[[:space:]]*//p' | head -n 1)
[ -n "$task_path" ] || die "the 202 has no Location header"

log "waiting for the task: GET $API$task_path (up to ${TASK_TIMEOUT}s)"
deadline=$((SECONDS + TASK_TIMEOUT))
while :; do
  curl -sS -o "$tmp/task.json" "${AUTH[@]}" "$API$task_path"
  task_status=$(json_string status <"$tmp/task.json")
  case "$task_status" in
  COMPLETED | FAILED) break ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ]; then
    pretty <"$tmp/task.json"
    die "the task is still ${task_status:-unknown} after ${TASK_TIMEOUT}s (worker log: $LOG_DIR/worker.log)"
  fi
  sleep 0.5
done

echo "Task:"
pretty <"$tmp/task.json"
[ "$task_status" = COMPLETED ] || die "the task FAILED (worker log: $LOG_DIR/worker.log)"

source_file_id=$(json_string source_file_id <"$tmp/task.json")
echo "First rows: GET /api/v1/files/$source_file_id/rows?sheet=0&limit=5"
curl -sS "${AUTH[@]}" "$API/api/v1/files/$source_file_id/rows?sheet=0&limit=5" | pretty

log "stack is up: api $API, Postgres $DATABASE_URL, Azurite 127.0.0.1:$BLOB_PORT/$QUEUE_PORT"
log "metrics: api http://127.0.0.1:$METRICS_PORT/metrics, worker http://127.0.0.1:$WORKER_METRICS_PORT/metrics; logs in $LOG_DIR; stop everything with tests/stack/down.sh"
cat <<EOF

Development API key (tenant "default", also in $KEY_FILE):
  $DEV_KEY

Try it:
  curl -H "Authorization: Bearer $DEV_KEY" -F file=@tests/stack/sample.csv $API/api/v1/files
  curl -H "Authorization: Bearer $DEV_KEY" $API/api/v1/files

Web page (signs in with the key; the link's #key= part never reaches the server):
  $API/#key=$DEV_KEY
EOF
