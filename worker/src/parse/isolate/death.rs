//! Why a parse child ended without its final line: its allocator's abort message or the
//! kernel's OOM killer mean the file needed more memory than allowed (`memory_limit`); any other
//! signal or exit is a crash on this file (`parser_crashed`), reported with the end of stderr.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::process::Signal;

use crate::parse::{ParseFailure, TaskErrorCode};

/// The failure of a child that died with `status`, `stderr` being the tail of what it wrote.
pub(super) fn classify_death(status: ExitStatus, stderr: &str) -> ParseFailure {
    let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return ParseFailure::new(
            TaskErrorCode::MemoryLimit,
            "parsing needed more memory than allowed; the file is too large or malformed",
        );
    }
    match status.signal() {
        // A SIGKILL we did not send: the kernel's OOM killer.
        Some(sig) if sig == Signal::KILL.as_raw() => ParseFailure::new(
            TaskErrorCode::MemoryLimit,
            "the parser was killed, most likely for using too much memory",
        ),
        Some(sig) => ParseFailure::new(
            TaskErrorCode::ParserCrashed,
            format!("the parser crashed (signal {sig}) on this file: {tail}"),
        ),
        None => ParseFailure::new(
            TaskErrorCode::ParserCrashed,
            format!(
                "the parser stopped (exit code {}) without a result: {tail}",
                status.code().unwrap_or(-1)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signalled(signal: Signal) -> ExitStatus {
        ExitStatus::from_raw(signal.as_raw())
    }

    #[test]
    fn deaths_are_told_apart_by_signal_and_stderr() {
        let code = |status, stderr| classify_death(status, stderr).code;
        assert_eq!(
            code(signalled(Signal::KILL), ""),
            TaskErrorCode::MemoryLimit
        );
        assert_eq!(
            code(
                signalled(Signal::ABORT),
                "memory allocation of 8 bytes failed"
            ),
            TaskErrorCode::MemoryLimit
        );
        assert_eq!(
            code(signalled(Signal::SEGV), ""),
            TaskErrorCode::ParserCrashed
        );
        assert_eq!(
            code(ExitStatus::from_raw(3 << 8), "boom"),
            TaskErrorCode::ParserCrashed
        );
    }
}
