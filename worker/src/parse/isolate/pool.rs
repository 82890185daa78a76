//! The parent's side of child reuse: how parse children are found for a parse (an idle one, or
//! a new one) and which are kept afterwards. A process start would otherwise be most of a small
//! file's cost, but a child that grew may not give its memory back, so only children that parsed
//! a small file and stayed small are kept, and none beyond [`MAX_PARSES_PER_CHILD`] parses.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::spawn::ParseChild;
use crate::parse::ParseLimits;

/// Files up to this size are parsed by a child that is then kept for the next one.
pub(super) const REUSE_MAX_FILE: u64 = 1 << 20;
/// A child whose peak RSS went past this is not kept.
const REUSE_MAX_PEAK_RSS: u64 = 64 << 20;
/// Idle children kept at most (the consumer's concurrency rarely needs more).
const MAX_IDLE: usize = 8;
/// Parses after which a child is retired anyway.
const MAX_PARSES_PER_CHILD: u32 = 1000;

/// How to start parse children, and the idle ones kept for reuse.
#[derive(Clone)]
pub struct Isolation {
    /// The worker executable (`std::env::current_exe()` in production; tests pass
    /// `env!("CARGO_BIN_EXE_worker")`).
    pub exe: PathBuf,
    pub limits: ParseLimits,
    idle: Arc<Mutex<Vec<ParseChild>>>,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation")
            .field("exe", &self.exe)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Isolation {
    pub fn new(exe: PathBuf, limits: ParseLimits) -> Self {
        Self {
            exe,
            limits,
            idle: Arc::default(),
        }
    }

    /// An idle child that is still alive, or a new one.
    pub(super) fn child(&self) -> anyhow::Result<ParseChild> {
        loop {
            let Some(mut child) = self.idle().pop() else {
                return ParseChild::spawn(&self.exe, &self.limits);
            };
            // One that died while idle (killed from outside) is reaped by dropping it.
            if child.is_alive() {
                return Ok(child);
            }
        }
    }

    /// Keeps a child that parsed a small file successfully, if it is fit for another.
    pub(super) fn keep(&self, child: ParseChild) {
        if child.parses >= MAX_PARSES_PER_CHILD {
            return;
        }
        // A small file can still inflate (an xlsx is compressed): a child whose heap grew may
        // not give the memory back, and would start the next parse closer to its limit.
        let peak = child
            .pid()
            .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .and_then(|status| peak_rss_bytes(&status));
        if peak.is_none_or(|bytes| bytes > REUSE_MAX_PEAK_RSS) {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(child);
        }
    }

    /// How many children wait for work (for tests).
    pub fn idle_children(&self) -> usize {
        self.idle().len()
    }

    fn idle(&self) -> MutexGuard<'_, Vec<ParseChild>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `VmHWM` (peak resident set) from the text of `/proc/<pid>/status`, in bytes.
fn peak_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_rss_is_read_from_proc_status() {
        let status = "Name:\tworker\nVmPeak:\t  20000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(peak_rss_bytes(status), Some(5 << 20));
        assert_eq!(peak_rss_bytes("Name:\tworker\n"), None);
        let own = std::fs::read_to_string("/proc/self/status").ok();
        assert!(own
            .as_deref()
            .and_then(peak_rss_bytes)
            .is_some_and(|b| b > 0));
    }
}
