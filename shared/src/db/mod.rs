//! Postgres repositories.
