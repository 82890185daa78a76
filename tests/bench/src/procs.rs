//! Reading `/proc`: CPU time of a process tree (for CPU seconds per 1,000 tasks), resident
//! memory (current and peak), the server process behind a listening port, and a sampler that
//! records the peak RSS of a process and its descendants while a measurement runs.

use std::collections::HashMap;
use std::fs;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ; 100 on every Linux we run on).
const TICKS_PER_SEC: f64 = 100.0;

/// (utime+stime, cutime+cstime) in ticks.
fn stat(pid: u32) -> Option<(u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may contain spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17.
    let num = |i: usize| f.get(i - 3).and_then(|s| s.parse::<u64>().ok());
    Some((num(14)? + num(15)?, num(16)?.saturating_add(num(17)?)))
}

/// `root` and every live descendant, from each thread's `/proc/<pid>/task/<tid>/children`: a few
/// reads per process in the tree, where scanning all of /proc read every process on the machine
/// (the peak sampler calls this every 10 ms, from the process whose speed is being measured).
pub fn tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let tasks = fs::read_dir(format!("/proc/{}/task", out[i]));
        for task in tasks.into_iter().flatten().flatten() {
            let children = fs::read_to_string(task.path().join("children")).unwrap_or_default();
            out.extend(
                children
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        i += 1;
    }
    out
}

/// CPU seconds used by `root` and its descendants so far: live processes' own time plus the
/// time of the children they have reaped (Postgres backends, parse children).
pub fn tree_cpu_secs(root: u32) -> f64 {
    let ticks: u64 = tree(root)
        .into_iter()
        .filter_map(stat)
        .map(|(own, reaped)| own + reaped)
        .sum();
    ticks as f64 / TICKS_PER_SEC
}

/// CPU seconds of the children this process has reaped so far (a finished `worker` child's
/// time, its own parse children included, lands here once we have waited for it).
pub fn reaped_children_secs() -> f64 {
    stat(std::process::id())
        .map(|(_, reaped)| reaped as f64 / TICKS_PER_SEC)
        .unwrap_or(0.0)
}

/// CPU seconds of this process itself.
pub fn self_secs() -> f64 {
    stat(std::process::id())
        .map(|(own, _)| own as f64 / TICKS_PER_SEC)
        .unwrap_or(0.0)
}

/// `VmRSS` and `VmHWM` of `pid`, in bytes.
pub fn rss(pid: u32) -> Option<(u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// The pid of the process listening on `127.0.0.1:<port>` (via `ss -ltnp`).
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let out = Command::new("ss")
        .args(["-ltnpH", &format!("sport = :{port}")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("pid=")? + 4;
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Samples every 10 ms the peak `VmHWM` of `root` and of each descendant, until stopped.
pub struct PeakSampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<HashMap<u32, (String, u64)>>>,
    handle: Option<JoinHandle<()>>,
}

/// Peaks seen by a [`PeakSampler`], per process.
#[derive(Debug, Default, Clone)]
pub struct Peaks {
    /// (pid, command name, peak VmHWM bytes)
    pub procs: Vec<(u32, String, u64)>,
}

impl Peaks {
    pub fn of(&self, pid: u32) -> u64 {
        self.procs
            .iter()
            .find(|p| p.0 == pid)
            .map(|p| p.2)
            .unwrap_or(0)
    }

    /// The largest peak among descendants other than `root`.
    pub fn max_child(&self, root: u32) -> u64 {
        self.procs
            .iter()
            .filter(|p| p.0 != root)
            .map(|p| p.2)
            .max()
            .unwrap_or(0)
    }
}

impl PeakSampler {
    pub fn start(root: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new(HashMap::new()));
        let (s, p) = (Arc::clone(&stop), Arc::clone(&peaks));
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for pid in tree(root) {
                    let Some((_, hwm)) = rss(pid) else { continue };
                    let name = fs::read_to_string(format!("/proc/{pid}/comm"))
                        .unwrap_or_default()
                        .trim()
                        .to_owned();
                    if let Ok(mut map) = p.lock() {
                        let e = map.entry(pid).or_insert((name, 0));
                        e.1 = e.1.max(hwm);
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            stop,
            peaks,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let map = self.peaks.lock().map(|m| m.clone()).unwrap_or_default();
        Peaks {
            procs: map.into_iter().map(|(pid, (n, b))| (pid, n, b)).collect(),
        }
    }
}

/// CPU of the processes that take part in a measurement, read before and after.
#[derive(Debug, Clone, Default)]
pub struct CpuMeter {
    roots: Vec<(&'static str, Vec<u32>)>,
    start: Vec<f64>,
}

impl CpuMeter {
    /// `roots`: label → the root pids of that role (e.g. two worker processes).
    pub fn start(roots: Vec<(&'static str, Vec<u32>)>) -> Self {
        let start = roots.iter().map(|(_, pids)| sum(pids)).collect();
        Self { roots, start }
    }

    /// CPU seconds per role since `start`.
    pub fn finish(&self) -> Vec<(&'static str, f64)> {
        self.roots
            .iter()
            .zip(&self.start)
            .map(|((label, pids), s)| (*label, (sum(pids) - s).max(0.0)))
            .collect()
    }
}

fn sum(pids: &[u32]) -> f64 {
    pids.iter().map(|p| tree_cpu_secs(*p)).sum()
}

pub const MB: f64 = 1024.0 * 1024.0;

/// Samples `VmRSS` (current resident memory, not the peak) of one process every 10 ms until
/// stopped: whether memory stays flat while a measurement runs, which a peak cannot tell.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<(Duration, u64)>>>,
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            let mut samples = Vec::new();
            while !s.load(Ordering::Relaxed) {
                if let Some((now, _)) = rss(pid) {
                    samples.push((t0.elapsed(), now));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            samples
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    /// The samples: time since start, VmRSS in bytes.
    pub fn finish(mut self) -> Vec<(Duration, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}
