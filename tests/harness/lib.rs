//! harness.
pub mod services;
pub mod worker;
