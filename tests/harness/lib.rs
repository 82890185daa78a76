//! harness.
pub mod services;
