#!/usr/bin/env bash
# Stops what up.sh started: worker, api, Azurite, Postgres. Data stays in .local/ (delete that
# directory for a clean slate). Safe to run when nothing is running.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE_DIR="$REPO_ROOT/.local"

stop_pidfile "$STATE_DIR/worker.pid" worker
stop_pidfile "$STATE_DIR/api.pid" api
stop_azurite "$STATE_DIR/azurite"
if [ -d "$STATE_DIR" ]; then
  stop_postgres "$(postgres_data_dir "$STATE_DIR/postgres")"
fi
log "stopped"
