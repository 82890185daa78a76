//! it.
mod services;
mod consumer;
mod relay;
mod worker_process;
