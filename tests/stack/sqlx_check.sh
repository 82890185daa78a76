#!/usr/bin/env bash
# `.sqlx/` (the offline query data every build uses) must match the queries in the code:
# `cargo sqlx prepare --check` against a throwaway Postgres, on a free loopback port, with every
# migration applied. Installs sqlx-cli 0.8 when it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_postgres
if ! command -v cargo-sqlx >/dev/null; then
  log "installing sqlx-cli 0.8 (cargo install)"
  cargo install sqlx-cli --version '^0.8' --no-default-features --features postgres,rustls --locked
fi

work=$(mktemp -d -t sheetrelay-sqlx.XXXXXX)
# When root, Postgres runs as `postgres`, which must reach its data directory in here.
chmod 755 "$work"
trap 'stop_postgres "$work/postgres" || true; rm -rf "$work"' EXIT
port=$(free_port)
start_postgres "$work/postgres" "$port"
create_database "$port" sqlx_check
export DATABASE_URL="postgres://postgres@127.0.0.1:$port/sqlx_check"

cd "$REPO_ROOT"
log "sqlx migrate run; cargo sqlx prepare --workspace --check"
cargo sqlx migrate run --source migrations
SQLX_OFFLINE=false cargo sqlx prepare --workspace --check -- --all-targets --locked
