//! harness.
