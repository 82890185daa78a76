//! it.
mod services;
mod upload;
mod consumer;
mod relay;
mod worker_process;
