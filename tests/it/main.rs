//! it.
mod services;
