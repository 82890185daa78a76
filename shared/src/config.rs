//! Configuration sections shared by both binaries, and the rules every setting follows. Each
//! binary flattens the sections into its own `clap` parser, so every setting is an env var and a
//! flag documented by `--help`; each default is written once, in its `#[arg]` attribute
//! ([`from_args`] builds a section from those defaults for tests and `Default` impls); every
//! duration is written in one syntax ([`parse_duration`]); a renamed setting's old name is read
//! for one release and reported by [`deprecated`].

use std::sync::Mutex;
use std::time::Duration;

pub use crate::db::DatabaseConfig;
pub use crate::storage::StorageConfig;
pub use crate::telemetry::TelemetryConfig;

/// A settings section from the given flags and the defaults of its `#[arg]` attributes alone:
/// the environment is not read. `from_args(&[])` is the section's `Default`.
///
/// # Panics
/// When a setting without a default is not given: a bug in the caller, which tests catch.
pub fn from_args<T: clap::Args + clap::FromArgMatches>(args: &[&str]) -> T {
    let command = T::augment_args(clap::Command::new("settings")).mut_args(|a| a.env(None));
    let matches = command
        .try_get_matches_from(std::iter::once("settings").chain(args.iter().copied()))
        .and_then(|m| T::from_arg_matches(&m));
    match matches {
        Ok(section) => section,
        Err(e) => panic!("settings from {args:?} and their defaults: {e}"),
    }
}

/// Parses a duration in humantime's syntax: `250ms`, `25s`, `1.5s`, `5m`, `1h 30m`, `7d`. A bare
/// number of seconds (`25`), which settings used to accept, is still read for one release,
/// with a [`deprecated`] warning.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| format!("invalid duration {s:?}"))?;
        deprecated(format!(
            "the duration {s:?} has no unit; a bare number of seconds will be refused in the \
             next release: write \"{s}s\""
        ));
        return Duration::try_from_secs_f64(secs)
            .map_err(|e| format!("invalid duration {s:?}: {e}"));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration {s:?}: {e} (e.g. 250ms, 25s, 5m, 7d)"))
}

static DEPRECATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records that a setting was given in a form that goes away in the next release. Settings are
/// read before logging starts, so the warning is kept until [`crate::telemetry::init`] logs it.
pub fn deprecated(message: String) {
    DEPRECATIONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(message);
}

/// The deprecation warnings recorded so far, once each.
pub(crate) fn take_deprecations() -> Vec<String> {
    std::mem::take(
        &mut *DEPRECATIONS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_humantime_and_bare_seconds_are_deprecated() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("25s"), Ok(Duration::from_secs(25)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());

        take_deprecations();
        assert_eq!(parse_duration("25"), Ok(Duration::from_secs(25)));
        let warnings = take_deprecations();
        assert!(
            warnings.iter().any(|w| w.contains("write \"25s\"")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_section_is_built_from_its_defaults_without_the_environment() {
        let db: DatabaseConfig = from_args(&["--database-url", "postgres://x@localhost/db"]);
        assert_eq!(db.url, "postgres://x@localhost/db");
        assert_eq!(db.acquire_timeout, Duration::from_secs(3));
    }

    #[test]
    fn the_old_acquire_timeout_in_milliseconds_is_still_read_but_not_with_the_new_one() {
        let url = ["--database-url", "postgres://x@localhost/db"];
        let old: DatabaseConfig =
            from_args(&[&url[..], &["--database-acquire-timeout-ms", "1500"]].concat());
        assert_eq!(old.acquire_timeout(), Duration::from_millis(1500));
        let both = std::panic::catch_unwind(|| {
            from_args::<DatabaseConfig>(
                &[
                    &url[..],
                    &[
                        "--database-acquire-timeout-ms",
                        "1500",
                        "--database-acquire-timeout",
                        "2s",
                    ],
                ]
                .concat(),
            )
        });
        assert!(both.is_err(), "the two names together are refused");
    }
}
