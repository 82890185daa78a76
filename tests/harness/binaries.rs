//! The api and worker executables the tests run as child processes. `cargo test` builds the
//! test binaries but not necessarily these (`cargo test -p sheetrelay-tests` builds neither, and
//! a stale one would be run as it is), so the first call builds both, for this test binary's
//! profile, once per test process: a no-op when they are current, as after
//! `tests/stack/test.sh`'s own `cargo build -p api -p worker`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::processes::repo_root;

/// The worker executable, built from the code under test.
pub fn worker_exe() -> PathBuf {
    built_dir().join("worker")
}

/// The api executable, built from the code under test.
pub fn api_exe() -> PathBuf {
    built_dir().join("api")
}

/// `target/<profile>`, once `cargo build -p api -p worker` has run there.
fn built_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current exe");
        // target/<profile>/deps/it-<hash> → target/<profile>
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test executable lives in target/<profile>/deps")
            .to_path_buf();
        let profile = dir.file_name().and_then(|p| p.to_str()).unwrap_or("debug");
        // The cargo running the tests (it releases the build directory while they run).
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        build
            .current_dir(repo_root())
            .args(["build", "--quiet", "-p", "api", "-p", "worker", "--bins"]);
        match profile {
            "debug" => {}
            "release" => {
                build.arg("--release");
            }
            other => {
                build.args(["--profile", other]);
            }
        }
        let status = build.status().expect("run cargo build");
        assert!(
            status.success(),
            "cargo build -p api -p worker failed ({status}): the tests run those binaries"
        );
        dir
    })
}
