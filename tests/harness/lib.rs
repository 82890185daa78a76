//! The integration-test harness: throwaway Postgres and Azurite ([`services`]), the api served
//! in-process ([`app`]) and drivers for the worker's loops and binary ([`worker`]).

pub mod app;
pub mod services;
pub mod worker;
