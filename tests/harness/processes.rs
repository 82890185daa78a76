//! The servers' processes, and what they need from the machine: a `sh` watchdog per server that
//! stops it and deletes its directory once this test process is gone (statics are never dropped,
//! and a killed test run must not leave servers behind), free loopback ports, temp directories,
//! and commands run to completion with their output kept for the failure message.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use uuid::Uuid;

/// What a watchdog does with its command.
#[derive(Clone, Copy)]
pub(crate) enum WatchdogMode {
    /// Run the command as the server (in the background) and kill it at the end.
    Serve,
    /// The server runs on its own (pg_ctl); run the command at the end to stop it.
    Stop,
}

/// Watches this process (pid and start time): when it is gone, or `<dir>/.release` appears,
/// stops the server and deletes `dir`. In Serve mode a server that exits on its own ends the
/// watchdog and its `dir` is kept, for the log.
const WATCHDOG_SH: &str = r#"
parent=$1; born=$2; dir=$3; mode=$4; shift 4
child=
# Field 22 of /proc/PID/stat (start time): a recycled pid or thread id does not match it.
started() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; set -- ${s##*) }; shift 19; echo "$1"; }
if [ "$mode" = serve ]; then "$@" & child=$!; fi
finish() {
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null; wait "$child" 2>/dev/null
    else
        "$@" >/dev/null 2>&1
    fi
    rm -rf "$dir"
    exit 0
}
trap 'finish "$@"' HUP INT TERM
while [ "$(started "$parent")" = "$born" ] && [ ! -e "$dir/.release" ]; do
    if [ -n "$child" ] && ! kill -0 "$child" 2>/dev/null; then exit 1; fi
    sleep 0.5
done
finish "$@"
"#;

/// Starts the watchdog of the server in `dir` (in its own process group, out of reach of a
/// terminal's Ctrl-C), the server's output going to `log` when given.
pub(crate) fn spawn_watchdog(
    dir: &Path,
    mode: WatchdogMode,
    command: &Command,
    log: Option<&Path>,
) -> Child {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(WATCHDOG_SH)
        .arg("sheetrelay-watchdog")
        .arg(std::process::id().to_string())
        .arg(own_start_time())
        .arg(dir)
        .arg(match mode {
            WatchdogMode::Serve => "serve",
            WatchdogMode::Stop => "stop",
        })
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null())
        // Never inherit our stdout/stderr: whoever reads them would wait for the watchdog.
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(log) = log {
        let file = fs::File::create(log).expect("create server log");
        let file2 = file.try_clone().expect("clone log handle");
        sh.stdout(file).stderr(file2);
    }
    sh.spawn().expect("spawn watchdog (sh)")
}

/// This process's start time (field 22 of /proc/self/stat), which the watchdog compares.
fn own_start_time() -> String {
    let stat = fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    let after_comm = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    after_comm
        .split_whitespace()
        .nth(19)
        .expect("start time in /proc/self/stat")
        .to_owned()
}

/// `N` distinct free loopback ports (all bound at once, then released).
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0"))
        .collect();
    std::array::from_fn(|i| {
        listeners[i]
            .local_addr()
            .expect("local address of a bound socket")
            .port()
    })
}

/// A new directory under the system temp directory, named after `label` and this process.
pub(crate) fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sheetrelay-{label}-{}-{}",
        std::process::id(),
        Uuid::new_v4().simple()
    ));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// Runs `cmd` to completion (stdin closed) and returns its status and output.
pub(crate) async fn output(cmd: Command) -> Output {
    let program = cmd.get_program().to_string_lossy().into_owned();
    tokio::process::Command::from(cmd)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {program}: {e}"))
}

/// Status and output of a finished command, for a failure message.
pub(crate) fn describe(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The repository's root directory.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}
