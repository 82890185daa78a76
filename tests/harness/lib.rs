//! harness.
pub mod app;
pub mod services;
pub mod worker;
