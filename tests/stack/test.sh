#!/usr/bin/env bash
# README command #2: run the whole test suite.
#
# Installs what the integration tests need (Postgres server binaries from Debian's packages,
# Azurite via npm ci) and runs `cargo test --workspace --locked` with any extra arguments, e.g.
#   tests/stack/test.sh -p sheetrelay-tests --test it services
# The test harness (tests/harness/services.rs) starts its own throwaway Postgres and Azurite on
# free loopback ports; nothing here starts a server.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_postgres
ensure_azurite

cd "$REPO_ROOT"
# The tests run the api and worker binaries as child processes (key administration, job runs):
# build them first, so they are never older than the code under test.
log "cargo build --locked -p api -p worker"
cargo build --locked -p api -p worker
log "cargo test --workspace --locked $*"
exec cargo test --workspace --locked "$@"
