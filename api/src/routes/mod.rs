//! HTTP handlers, one module per resource.

pub mod files;
pub mod health;
pub mod rows;
pub mod tasks;
