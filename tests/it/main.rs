//! Integration tests of the api and the worker on real Postgres and Azurite, started once per
//! run by the harness; every test gets a fresh database and fresh queue and container names.

mod auth;
mod configuration;
mod consumer;
mod deploy;
mod edge;
mod entra;
mod events;
mod fairness;
mod files;
mod forged;
mod inline;
mod jobs;
mod lifecycle;
mod limits;
mod lineage;
mod metrics_ports;
mod observability;
mod oracle;
mod otlp_receiver;
mod parquet;
mod relay;
mod resumable;
mod review;
mod row_chunks;
mod row_store;
mod rows;
mod scaler;
mod services;
mod storage;
mod template_faults;
mod templates;
mod traces;
mod upload;
mod webhooks;
mod worker_process;
