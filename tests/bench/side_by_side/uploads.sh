#!/usr/bin/env bash
# Side by side: small uploads and their parses through two (or more) builds of the api and the
# worker, alternated round by round on one Postgres and one Azurite, with the same Python client
# (httpx, concurrency C). Postgres is durable here (fsync and synchronous_commit on, as in
# production), unlike the test clusters: commit latency is what a hot row serialises on.
#
#   tests/bench/side_by_side/uploads.sh old=/path/to/old/target/release new=target/release
#
# Each LABEL=DIR names a directory holding `api` and `worker`; each build runs against a database
# of its own, migrated by its own api. ROUNDS (3), N uploads (500), C concurrency (16), TENANTS
# (1: every upload as one tenant; more: the uploads take the tenants in turn), WORKER (1; 0: the
# api alone, so tasks/s is not measured), DURABLE (1; 0 keeps the test clusters' fsync = off),
# STATEMENTS (1: Postgres's top STATEMENTS_LIMIT, 25, statements per run), RUST_LOG (warn; `info`
# logs each task's completion). Prints one JSON line per build and round and the medians per build.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../stack/lib.sh
source "$REPO_ROOT/tests/stack/lib.sh"

ROUNDS=${ROUNDS:-3} N=${N:-500} C=${C:-16} TENANTS=${TENANTS:-1} DURABLE=${DURABLE:-1}
[ $# -ge 1 ] || die "usage: $0 LABEL=BIN_DIR [LABEL=BIN_DIR ...]"
STATE="$REPO_ROOT/target/bench/side-by-side"
mkdir -p "$STATE"
ensure_postgres
VENV=$(ensure_venv edge-venv "$REPO_ROOT/tests/edge/requirements.txt")

PG_PORT=$(free_port) BLOB_PORT=$(free_port) QUEUE_PORT=$(free_port) TABLE_PORT=$(free_port)
rm -rf "$STATE/pg" "$STATE/azurite"
init_postgres "$STATE/pg"
if [ "$DURABLE" = 1 ]; then
  printf '\n# side by side: durable, as in production\nfsync = on\nsynchronous_commit = on\nfull_page_writes = on\n' \
    >>"$STATE/pg/postgresql.conf"
fi
# `STATEMENTS=1`: what Postgres spent its time on, per build, printed after each run.
if [ "${STATEMENTS:-0}" = 1 ]; then
  printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\npg_stat_statements.track_planning = on\n" \
    >>"$STATE/pg/postgresql.conf"
fi
start_postgres "$STATE/pg" "$PG_PORT"
start_azurite "$STATE/azurite" "$BLOB_PORT" "$QUEUE_PORT" "$TABLE_PORT"
cleanup() {
  stop_pidfile "$STATE/worker.pid" worker || true
  stop_pidfile "$STATE/api.pid" api || true
  stop_azurite "$STATE/azurite" || true
  stop_postgres "$STATE/pg" || true
}
trap cleanup EXIT

AZURE_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$BLOB_PORT" "$QUEUE_PORT")
export AZURE_STORAGE_CONNECTION_STRING RUST_LOG=${RUST_LOG:-warn} NO_COLOR=1
# No limit in the way: the rate is what is measured, not what refuses.
export UPLOAD_RATE=1000000/s

for round in $(seq 1 "$ROUNDS"); do
  for spec in "$@"; do
    label=${spec%%=*} bin=${spec#*=}
    db="sbs_${label}_${round}"
    create_database "$PG_PORT" "$db" >/dev/null
    export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/$db"
    export QUEUE_NAME="sbs-${label}-${round}" BLOB_CONTAINER="sbs-${label}-${round}"
    api_port=$(free_port)
    LISTEN_ADDR="127.0.0.1:$api_port" METRICS_ADDR="127.0.0.1:$(free_port)" \
      start_bg "$STATE/api.pid" "$STATE/api-$label.log" "$bin/api"
    wait_for_http "http://127.0.0.1:$api_port/healthz" 200 120
    keys=""
    for t in $(seq 1 "$TENANTS"); do
      keys+="${keys:+,}$("$bin/api" keys create --name bench --tenant "tenant-$t" 2>/dev/null)"
    done
    if [ "${WORKER:-1}" = 1 ]; then
      METRICS_ADDR="127.0.0.1:$(free_port)" \
        start_bg "$STATE/worker.pid" "$STATE/worker-$label.log" "$bin/worker" run
    fi
    result=$("$VENV/bin/python" "$REPO_ROOT/tests/bench/side_by_side/upload_client.py" \
      "http://127.0.0.1:$api_port" "$keys" "$N" "$C" "${WORKER:-1}" \
      "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres "$db")
    echo "{\"build\": \"$label\", \"tenants\": $TENANTS, \"round\": $round, \"result\": $result}" | tee -a "$STATE/results.jsonl"
    stop_pidfile "$STATE/worker.pid" worker
    stop_pidfile "$STATE/api.pid" api
    if [ "${STATEMENTS:-0}" = 1 ]; then
      "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
        -c "SELECT calls, round(total_exec_time) AS ms, round(total_plan_time) AS plan_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
            FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
            ORDER BY total_exec_time + total_plan_time DESC LIMIT ${STATEMENTS_LIMIT:-25}" -c "SELECT pg_stat_statements_reset()" >"$STATE/statements-$label-$round.txt"
    fi
  done
done
python3 - "$STATE/results.jsonl" "$ROUNDS" "$#" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])][-int(sys.argv[2]) * int(sys.argv[3]):]
for build in dict.fromkeys(l["build"] for l in lines):
    runs = [l["result"] for l in lines if l["build"] == build]
    med = {k: statistics.median(r[k] or 0 for r in runs) for k in ("uploads_per_s", "tasks_per_s", "p99_ms")}
    print(f"{build}: uploads/s {med['uploads_per_s']} ({', '.join(str(r['uploads_per_s']) for r in runs)}), "
          f"tasks/s {med['tasks_per_s']} ({', '.join(str(r['tasks_per_s']) for r in runs)}), p99 {med['p99_ms']} ms")
PY
