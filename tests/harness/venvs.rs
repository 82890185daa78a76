//! The Python tools some tests hold the product to (httpx, tuspy, pyarrow, the Standard Webhooks
//! verifier), each in a venv of its own that `tests/stack/test.sh` installs from a pinned
//! `tests/<tool>/requirements.txt` into `target/<venv>` and names in an environment variable.

use std::path::PathBuf;

use crate::processes::repo_root;

/// The venv's python: `$env_var` when set to a file, else `target/<venv>/bin/python`; a test
/// without either fails saying how to install it (`tool`, the package the test needs).
pub fn python(env_var: &str, venv: &str, tool: &str) -> PathBuf {
    std::env::var_os(env_var)
        .map(PathBuf::from)
        .into_iter()
        .chain([repo_root().join("target").join(venv).join("bin/python")])
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no python with {tool}: run tests/stack/test.sh, which installs it into \
                 target/{venv} (or set {env_var})"
            )
        })
}
