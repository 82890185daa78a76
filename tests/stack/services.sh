#!/usr/bin/env bash
# The servers of the Rust test harness (tests/harness/services.rs), set up by lib.sh exactly as
# the stack scripts set up theirs: one bootstrap for both. The harness picks the directories and
# ports, and watches the servers so that none outlives its test run.
#
#   services.sh postgres-start DIR PORT      init DIR (once), start it on 127.0.0.1:PORT, wait
#   services.sh postgres-restart DIR PORT    restart it (fast shutdown first)
#   services.sh postgres-stop DIR MODE       stop it (MODE: fast or immediate)
#   services.sh azurite BLOB QUEUE TABLE     run Azurite in the foreground, its data in memory
#                                            ($SHEETRELAY_AZURITE instead of the pinned one)
#
# It installs nothing: tests/stack/test.sh does (Debian's postgresql, Azurite through npm ci).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_postgres() {
  PG_BIN=$(pg_bindir) ||
    die "no Postgres server binaries (/usr/lib/postgresql/*/bin): run tests/stack/test.sh"
}

case "${1:-}" in
  postgres-start)
    need_postgres
    start_postgres "$2" "$3"
    ;;
  postgres-restart)
    need_postgres
    pg_ctl_up "$2" "$3" restart
    wait_for_postgres "$3"
    ;;
  postgres-stop)
    need_postgres
    stop_postgres "$2" "$3"
    ;;
  azurite)
    azurite=${SHEETRELAY_AZURITE:-$AZURITE_BIN}
    [ -x "$azurite" ] || die "$azurite is missing: run tests/stack/test.sh (or npm ci at the repo root)"
    azurite_flags "$2" "$3" "$4"
    # Throwaway data, like the clusters' fsync = off: Azurite's disk persistence (LokiJS autosave,
    # extent files) only costs CPU on the one core it runs on.
    exec "$azurite" "${AZURITE_FLAGS[@]}" --inMemoryPersistence
    ;;
  *)
    die "usage: services.sh postgres-start|postgres-restart DIR PORT | postgres-stop DIR MODE | azurite BLOB QUEUE TABLE"
    ;;
esac
