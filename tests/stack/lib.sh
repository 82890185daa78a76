#!/usr/bin/env bash
# Helpers for the local stack scripts (up.sh, down.sh, test.sh, browser.sh, api_fuzz.sh) and,
# through services.sh, the Rust test harness: install and start Postgres and Azurite on loopback,
# install pinned Python tools into venvs, plus small polling helpers. Source it; every function logs what it does on stderr (stdout is kept
# for values a caller captures).
#
#   source tests/stack/lib.sh
#   ensure_postgres && ensure_azurite
#   start_postgres /some/dir 55432 && start_azurite /other/dir 10000 10001 10002
#
# Postgres refuses to run as root: when root, the data directory belongs to the `postgres` system
# user and initdb/pg_ctl run through `runuser -u postgres --`.
set -euo pipefail

STACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$STACK_DIR/../.." && pwd)"
PG_SUPERUSER=postgres

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf '!!! %s\n' "$*" >&2; }
die() {
  printf 'ERROR: %s\n' "$*" >&2
  exit 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if is_root; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root for: $* (and sudo is not installed)"
  fi
}

# ---------------------------------------------------------------------------------------------
# Waiting: poll, never sleep blindly.

# wait_until TIMEOUT_SECONDS DESCRIPTION COMMAND... — run COMMAND every 0.2 s until it succeeds.
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      warn "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# free_port — a TCP port nothing listens on at 127.0.0.1 now (the kernel picks it, through node).
free_port() {
  node -e 'const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# wait_for_port HOST PORT [TIMEOUT] — until something accepts TCP connections there.
wait_for_port() {
  local host=$1 port=$2 timeout=${3:-60}
  wait_until "$timeout" "$host:$port to accept connections" port_open "$host" "$port"
}

# http_status_is STATUS URL [CURL ARGS...] — true when GET URL answers STATUS.
http_status_is() {
  local want=$1 url=$2
  shift 2
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$url")" = "$want" ]
}

# wait_for_http URL [STATUS] [TIMEOUT] — until GET URL answers with STATUS (default 200).
wait_for_http() {
  local url=$1 status=${2:-200} timeout=${3:-60}
  wait_until "$timeout" "GET $url to answer $status" http_status_is "$status" "$url"
}

# ---------------------------------------------------------------------------------------------
# Background processes with pid files.

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

pidfile_alive() { [ -s "$1" ] && pid_alive "$(cat "$1")"; }

# start_bg PIDFILE LOGFILE COMMAND... — start COMMAND in its own session (a Ctrl-C in this
# terminal does not reach it), output appended to LOGFILE, pid written to PIDFILE.
start_bg() {
  local pidfile=$1 logfile=$2
  shift 2
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  # setsid does not fork here (a background job of a non-interactive shell is not a process
  # group leader), so $! is the pid of COMMAND itself.
  setsid "$@" >>"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

# stop_pidfile PIDFILE NAME — SIGTERM, wait up to 20 s, then SIGKILL. No-op when not running.
stop_pidfile() {
  local pidfile=$1 name=$2 pid
  if ! pidfile_alive "$pidfile"; then
    log "$name is not running"
    rm -f "$pidfile"
    return 0
  fi
  pid=$(cat "$pidfile")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until 20 "$name to exit" bash -c "! kill -0 $pid"; then
    warn "$name did not exit on SIGTERM: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# ---------------------------------------------------------------------------------------------
# Postgres

# The newest Debian Postgres bin directory (/usr/lib/postgresql/<version>/bin), if any.
pg_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

# ensure_postgres — install Debian's postgresql package when no server binaries exist; sets PG_BIN.
ensure_postgres() {
  if PG_BIN=$(pg_bindir); then
    log "Postgres server binaries: $PG_BIN"
  else
    log "Postgres server not installed: installing Debian's postgresql package"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
    PG_BIN=$(pg_bindir) || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb found"
    log "Postgres server binaries: $PG_BIN"
  fi
  export PG_BIN
}

# The system user that owns clusters when we are root (created by the Debian package).
ensure_postgres_user() {
  if ! id -u postgres >/dev/null 2>&1; then
    log "creating system user postgres"
    useradd --system --user-group --home-dir /var/lib/postgresql --no-create-home \
      --shell /bin/sh postgres
  fi
}

# Run a Postgres server tool as the cluster owner: `postgres` when root, ourselves otherwise.
pg_run() {
  if is_root; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# postgres_data_dir PREFERRED — PREFERRED, unless we are root and the postgres user cannot reach
# it (e.g. a clone under /root, which is mode 0700): then a stable directory under /var/lib.
postgres_data_dir() {
  local preferred=$1 parent
  parent=$(dirname "$preferred")
  if ! is_root; then
    echo "$preferred"
    return 0
  fi
  ensure_postgres_user
  mkdir -p "$parent"
  if runuser -u postgres -- test -x "$parent"; then
    echo "$preferred"
  else
    local key
    key=$(printf '%s' "$preferred" | cksum | cut -d' ' -f1)
    warn "user postgres cannot reach $parent: keeping the cluster in /var/lib/sheetrelay-dev/$key"
    mkdir -p "/var/lib/sheetrelay-dev/$key"
    chmod 755 /var/lib/sheetrelay-dev "/var/lib/sheetrelay-dev/$key"
    echo "/var/lib/sheetrelay-dev/$key/postgres"
  fi
}

postgres_running() {
  [ -f "$1/PG_VERSION" ] && pg_run "$PG_BIN/pg_ctl" -D "$1" status >/dev/null 2>&1
}

# init_postgres DIR — create a cluster in DIR unless one is there: trust auth for loopback,
# superuser `postgres`, durability off (for development and tests only). The one definition of
# our clusters: up.sh and browser.sh get theirs through start_postgres, the Rust test harness
# through services.sh.
init_postgres() {
  local dir=$1
  [ -n "${PG_BIN:-}" ] || ensure_postgres
  [ -f "$dir/PG_VERSION" ] && return 0
  log "creating Postgres cluster in $dir"
  mkdir -p "$dir"
  chmod 700 "$dir"
  if is_root; then
    ensure_postgres_user
    chown postgres:postgres "$dir"
    runuser -u postgres -- test -w "$dir" ||
      die "user postgres cannot write $dir: a parent directory is not searchable"
  fi
  pg_run "$PG_BIN/initdb" -D "$dir" -U "$PG_SUPERUSER" --auth=trust --no-locale -E UTF8 \
    --no-sync >"$dir.initdb.log" 2>&1 || {
    cat "$dir.initdb.log" >&2
    die "initdb failed"
  }
  # A small shared_buffers: the tests run several clusters at once.
  cat >>"$dir/postgresql.conf" <<'EOF'

# sheetrelay dev/test settings (tests/stack/lib.sh): loopback only, no durability.
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 300
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  # `BENCH_PG_STATEMENTS=1 bench ...`: statement counts and times (tests/bench/src/pg_statements.rs).
  if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
    cat >>"$dir/postgresql.conf" <<'EOF'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
EOF
  fi
}

# pg_ctl_up DIR PORT start|restart — (re)start the cluster in DIR on 127.0.0.1:PORT, with its
# log in DIR/server.log.
pg_ctl_up() {
  local dir=$1 port=$2 verb=$3
  log "Postgres $verb on 127.0.0.1:$port (log: $dir/server.log)"
  pg_run "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -o "-p $port" -m fast -w -t 60 \
    "$verb" >/dev/null || {
    tail -n 30 "$dir/server.log" >&2 || true
    die "Postgres did not start"
  }
}

# start_postgres DIR PORT — init_postgres DIR (once) and start it on 127.0.0.1:PORT.
start_postgres() {
  local dir=$1 port=$2
  init_postgres "$dir"
  if postgres_running "$dir"; then
    log "Postgres already running from $dir"
  else
    pg_ctl_up "$dir" "$port" start
  fi
  wait_for_postgres "$port"
}

wait_for_postgres() {
  local port=$1
  wait_until 60 "Postgres on 127.0.0.1:$port" \
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$PG_SUPERUSER" -d postgres ||
    die "Postgres is not accepting connections on 127.0.0.1:$port"
}

# stop_postgres DIR [fast|immediate] — shut down (fast disconnects clients; immediate skips the
# checkpoint). No-op when not running.
stop_postgres() {
  local dir=$1 mode=${2:-fast}
  [ -n "${PG_BIN:-}" ] || PG_BIN=$(pg_bindir) || {
    log "Postgres is not installed: nothing to stop"
    return 0
  }
  if postgres_running "$dir"; then
    log "stopping Postgres ($dir, $mode)"
    pg_run "$PG_BIN/pg_ctl" -D "$dir" -m "$mode" -w -t 60 stop >/dev/null
  else
    log "Postgres is not running ($dir)"
  fi
}

# psql_admin PORT ARGS... — psql as the superuser on database postgres.
psql_admin() {
  local port=$1
  shift
  "$PG_BIN/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$PG_SUPERUSER" -d postgres "$@"
}

# create_database PORT NAME — CREATE DATABASE NAME unless it exists.
create_database() {
  local port=$1 name=$2
  if [ "$(psql_admin "$port" -tAc "select 1 from pg_database where datname = '$name'")" = 1 ]; then
    log "database $name exists"
  else
    log "creating database $name"
    psql_admin "$port" -qc "create database \"$name\""
  fi
}

# ---------------------------------------------------------------------------------------------
# Azurite and playwright-core (pinned in package.json / package-lock.json)

AZURITE_BIN="$REPO_ROOT/node_modules/.bin/azurite"
NPM_STAMP="$REPO_ROOT/node_modules/.sheetrelay-package-lock.sha256"

# ensure_azurite — `npm ci` (Azurite, and playwright-core for the browser tests) when Azurite is
# missing or package-lock.json changed since the last one.
ensure_azurite() {
  local want
  want=$(sha256sum "$REPO_ROOT/package-lock.json" | cut -d' ' -f1)
  if [ -x "$AZURITE_BIN" ] && [ "$(cat "$NPM_STAMP" 2>/dev/null || true)" = "$want" ]; then
    log "Azurite installed: $AZURITE_BIN"
    return 0
  fi
  command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js 20 (with npm) first"
  log "installing Azurite with npm ci (package-lock.json)"
  (cd "$REPO_ROOT" && npm ci --no-audit --no-fund)
  [ -x "$AZURITE_BIN" ] || die "npm ci did not install $AZURITE_BIN"
  echo "$want" >"$NPM_STAMP"
}

# azurite_flags BLOBPORT QUEUEPORT TABLEPORT — sets AZURITE_FLAGS to what every Azurite we start
# runs with: loopback on the three ports, no API-version check (the SDK sends a newer service
# version than Azurite knows), no telemetry. Where its data goes is the caller's choice.
azurite_flags() {
  AZURITE_FLAGS=(--silent --skipApiVersionCheck --disableTelemetry --loose
    --blobHost 127.0.0.1 --queueHost 127.0.0.1 --tableHost 127.0.0.1
    --blobPort "$1" --queuePort "$2" --tablePort "$3")
}

# start_azurite DIR BLOBPORT QUEUEPORT [TABLEPORT] — Azurite on 127.0.0.1 with data in DIR,
# pid in DIR/azurite.pid, log in DIR/azurite.log. No-op when the one started from DIR runs.
start_azurite() {
  local dir=$1 blob=$2 queue=$3 table=${4:-$(($3 + 1))}
  local pidfile="$dir/azurite.pid" logfile="$dir/azurite.log" port
  [ -x "$AZURITE_BIN" ] || ensure_azurite
  mkdir -p "$dir"
  if pidfile_alive "$pidfile"; then
    log "Azurite already running (pid $(cat "$pidfile"))"
  else
    for port in "$blob" "$queue" "$table"; do
      if port_open 127.0.0.1 "$port"; then
        die "port $port is taken by another process (another Azurite?): stop it or pick other ports"
      fi
    done
    log "starting Azurite: blob 127.0.0.1:$blob, queue :$queue, table :$table (log: $logfile)"
    azurite_flags "$blob" "$queue" "$table"
    start_bg "$pidfile" "$logfile" "$AZURITE_BIN" "${AZURITE_FLAGS[@]}" --location "$dir"
  fi
  for port in "$blob" "$queue" "$table"; do
    if ! wait_for_port 127.0.0.1 "$port" 60 || ! pidfile_alive "$pidfile"; then
      tail -n 30 "$logfile" >&2 || true
      die "Azurite did not come up"
    fi
  done
}

stop_azurite() { stop_pidfile "$1/azurite.pid" Azurite; }

# azurite_connection_string BLOB_PORT QUEUE_PORT — the connection string of an Azurite on
# 127.0.0.1 with its well-known development account: `UseDevelopmentStorage=true` on the default
# ports, the account spelled out on any others.
azurite_connection_string() {
  if [ "$1:$2" = 10000:10001 ]; then
    printf '%s\n' "UseDevelopmentStorage=true"
    return
  fi
  local key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
  printf '%s\n' "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:$2/devstoreaccount1"
}

# ---------------------------------------------------------------------------------------------
# Chromium, for the browser tests (tests/browser, driven by playwright-core)

CHROMIUM_BIN=/usr/bin/chromium

# ensure_chromium — install Debian's chromium package when /usr/bin/chromium is missing.
# Playwright's own browser download needs the internet; Debian's package comes from the mirror.
ensure_chromium() {
  if [ -x "$CHROMIUM_BIN" ]; then
    log "Chromium installed: $CHROMIUM_BIN"
    return 0
  fi
  log "Chromium not installed: installing Debian's chromium package"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
  [ -x "$CHROMIUM_BIN" ] || die "chromium installed but $CHROMIUM_BIN is missing"
}

# ensure_promtool — make `promtool` (checks and unit-tests Prometheus rules) available and export
# PROMTOOL with its path. One on the PATH is used as is; otherwise it is extracted from Debian's
# `prometheus` package into target/promtool/ rather than installed: installing the package would
# also start a Prometheus server (on :9090, the api's default METRICS_ADDR) and pull in its web UI's
# dependencies. Without the package (no mirror), it warns and the rule checks are skipped.
PROMTOOL_DIR="$REPO_ROOT/target/promtool"
ensure_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    PROMTOOL=$(command -v promtool)
  elif [ -x "$PROMTOOL_DIR/promtool" ]; then
    PROMTOOL="$PROMTOOL_DIR/promtool"
  else
    log "promtool not installed: extracting it from Debian's prometheus package into $PROMTOOL_DIR"
    local tmp
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1); then
      as_root env DEBIAN_FRONTEND=noninteractive apt-get update
      if ! (cd "$tmp" && apt-get download prometheus); then
        rm -rf "$tmp"
        warn "no prometheus package to take promtool from: the alert rules will not be checked"
        return 0
      fi
    fi
    dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
    mkdir -p "$PROMTOOL_DIR"
    mv "$tmp/usr/bin/promtool" "$PROMTOOL_DIR/promtool"
    rm -rf "$tmp"
    PROMTOOL="$PROMTOOL_DIR/promtool"
  fi
  export PROMTOOL
  log "promtool: $PROMTOOL ($("$PROMTOOL" --version 2>&1 | head -n 1))"
}

# ---------------------------------------------------------------------------------------------
# Python tools: the schema fuzzer (tests/fuzz) and the frictionless oracle (tests/oracle)

# ensure_venv NAME REQUIREMENTS — a venv in target/NAME holding exactly what REQUIREMENTS pins, made
# afresh whenever that file changed since the venv's last install; prints the venv's directory.
# pip runs in hash-checking mode: every package, transitive ones included, must be pinned `==` with
# its sha256 (generate the file with pip-compile --generate-hashes), so a tool cannot change under
# the tests, nor be swapped on the index, without a change to a committed file.
ensure_venv() {
  local venv="$REPO_ROOT/target/$1" requirements=$2
  if cmp -s "$requirements" "$venv/requirements.txt"; then
    log "$1 up to date with $requirements"
  else
    log "installing $requirements into $venv"
    # Debian's python3 comes without venv (and the ensurepip it needs): that is python3-venv.
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
      log "python3 cannot make venvs: installing Debian's python3-venv package"
      as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3-venv >&2
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
      -r "$requirements" >&2 || die "pip could not install $requirements into $venv"
    # Written last: an interrupted install is redone on the next call.
    cp "$requirements" "$venv/requirements.txt"
  fi
  echo "$venv"
}
