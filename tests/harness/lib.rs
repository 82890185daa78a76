//! The integration-test harness: throwaway Postgres and Azurite ([`services`]), the api served
//! in-process ([`app`]), drivers for the worker's loops and binary ([`worker`], with its fakes),
//! and the api and worker executables, built before a test runs them ([`binaries`]); storage
//! that is down on demand ([`outage`]) and a local KEDA-like scaler of drain jobs ([`scaler`]);
//! files with planted faults for template validation, with the errors they must raise
//! ([`faults`]); a webhook receiver that answers as a test says ([`receiver`]).

pub mod app;
pub mod binaries;
mod fakes;
pub mod faults;
pub mod migrations;
pub mod outage;
mod processes;
pub mod receiver;
pub mod scaler;
pub mod services;
pub mod venvs;
pub mod worker;
