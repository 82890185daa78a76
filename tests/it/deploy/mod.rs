//! The deployment files in `deploy/` checked against the binaries they deploy, so that no
//! manifest drifts from the code silently: every environment variable the Bicep and the
//! Kubernetes manifests set is one `api --help` or `worker run --help` lists (with a value it
//! accepts, where it lists them), commands name real subcommands and flags and the images'
//! entrypoints, the consumer's scale rule watches the queue the consumer reads, as the
//! identity it runs as, and a job may run longer than a replica can (the longer of its parse
//! deadline and its `WORKER_MAX_RUNTIME`, plus its shutdown grace; defaults read from `--help`,
//! so a changed default fails here). The help text
//! comes from the built binaries (`harness::app::api_exe`, `harness::worker::worker_exe`).
//! Bicep is read as text: there is no `az bicep` offline, so the Bicep keeps one environment
//! entry, `args` list and scale-rule setting per line for this test to read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod bicep;
mod kubernetes;

/// One option of a `--help` page.
#[derive(Debug, Default)]
struct Opt {
    flag: String,
    env: Option<String>,
    default: Option<String>,
    values: Vec<String>,
}

/// What a binary's `--help` says.
#[derive(Debug, Default)]
struct Help {
    text: String,
    options: Vec<Opt>,
    subcommands: BTreeSet<String>,
    /// Flags in the usage line outside `[OPTIONS]`: required.
    required: Vec<String>,
}

impl Help {
    fn run(exe: &Path, args: &[&str]) -> Help {
        let out = Command::new(exe)
            .args(args)
            .arg("--help")
            .env_clear()
            .output()
            .unwrap_or_else(|e| panic!("{} {args:?} --help: {e}", exe.display()));
        assert!(
            out.status.success(),
            "{} {args:?} --help failed",
            exe.display()
        );
        Help::parse(&String::from_utf8_lossy(&out.stdout))
    }

    fn parse(text: &str) -> Help {
        let mut help = Help {
            text: text.to_owned(),
            ..Help::default()
        };
        let mut in_commands = false;
        for line in text.lines() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            if let Some(usage) = line.strip_prefix("Usage: ") {
                help.required = usage
                    .split_whitespace()
                    .filter(|t| t.starts_with("--"))
                    .map(str::to_owned)
                    .collect();
            } else if line == "Commands:" {
                in_commands = true;
            } else if in_commands {
                match trimmed.split_whitespace().next() {
                    Some(name) => {
                        help.subcommands.insert(name.to_owned());
                    }
                    None => in_commands = false,
                }
            } else if trimmed.starts_with('-') && indent <= 6 {
                let flag = trimmed
                    .split([' ', ','])
                    .find(|t| t.starts_with("--"))
                    .unwrap_or(trimmed);
                help.options.push(Opt {
                    flag: flag.to_owned(),
                    ..Opt::default()
                });
            } else if let Some(opt) = help.options.last_mut() {
                if let Some(rest) = trimmed.strip_prefix("[env: ") {
                    let name = rest.split(['=', ']']).next().unwrap_or_default();
                    opt.env = Some(name.to_owned());
                } else if let Some(rest) = trimmed.strip_prefix("[default: ") {
                    opt.default = Some(rest.trim_end_matches(']').to_owned());
                } else if let Some(rest) = trimmed.strip_prefix("[possible values: ") {
                    let values = rest.trim_end_matches(']').split(", ");
                    opt.values.extend(values.map(str::to_owned));
                } else if let Some(rest) = trimmed.strip_prefix("- ") {
                    if indent > 6 {
                        let value = rest.split(':').next().unwrap_or_default();
                        opt.values.push(value.to_owned());
                    }
                }
            }
        }
        help
    }

    fn by_env(&self, name: &str) -> Option<&Opt> {
        self.options.iter().find(|o| o.env.as_deref() == Some(name))
    }

    fn by_flag(&self, flag: &str) -> Option<&Opt> {
        self.options.iter().find(|o| o.flag == flag)
    }

    /// The default of the setting `name`, as seconds (it must be a duration).
    fn default_secs(&self, name: &str) -> f64 {
        let opt = self
            .by_env(name)
            .unwrap_or_else(|| panic!("no {name} in --help"));
        seconds(
            opt.default
                .as_deref()
                .unwrap_or_else(|| panic!("{name} has no default")),
        )
    }
}

/// The four help pages the deployments depend on.
struct Binaries {
    api: Help,
    worker: Help,
    worker_run: Help,
}

fn binaries() -> &'static Binaries {
    static HELP: OnceLock<Binaries> = OnceLock::new();
    HELP.get_or_init(|| {
        let (api, worker) = (harness::app::api_exe(), harness::worker::worker_exe());
        Binaries {
            api: Help::run(&api, &[]),
            worker: Help::run(&worker, &[]),
            worker_run: Help::run(&worker, &["run"]),
        }
    })
}

/// A humantime duration as the binaries accept it (`25s`, `10m`, `1h 30m`, `250ms`), or a bare
/// number of seconds.
fn seconds(text: &str) -> f64 {
    text.split_whitespace()
        .map(|part| {
            let digits = part
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(part.len());
            let n: f64 = part[..digits]
                .parse()
                .unwrap_or_else(|_| panic!("duration {text:?}"));
            n * match &part[digits..] {
                "ms" => 0.001,
                "" | "s" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3_600.0,
                "d" => 86_400.0,
                unit => panic!("unit {unit:?} in {text:?}"),
            }
        })
        .sum()
}

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A setting a container gets: its literal value, or `None` when it comes from elsewhere (a
/// secret, a Bicep expression).
type Settings = BTreeMap<String, Option<String>>;

/// Which binary a container runs, and the checks every container must pass whatever the
/// platform: a real entrypoint, a real subcommand and flags, only settings that binary reads,
/// with values it accepts, and the ones it requires. Returns the help page of what it runs.
fn check_container(
    what: &str,
    binary: &str,
    command: &[String],
    args: &[String],
    settings: &Settings,
) -> &'static Help {
    let b = binaries();
    let entrypoint = format!("/usr/local/bin/{binary}");
    assert_eq!(
        command,
        std::slice::from_ref(&entrypoint),
        "{what}: command"
    );
    let dockerfile = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../Dockerfile"));
    assert!(
        dockerfile.contains(&format!("FROM runtime AS {binary}"))
            && dockerfile.contains(&format!("ENTRYPOINT [\"{entrypoint}\"]")),
        "{what}: the Dockerfile has no {binary} target with ENTRYPOINT {entrypoint}"
    );
    let (top, help) = match binary {
        "api" => (&b.api, &b.api),
        "worker" => (&b.worker, &b.worker_run),
        other => panic!("{what}: unknown binary {other}"),
    };
    let sub = args
        .first()
        .unwrap_or_else(|| panic!("{what}: no subcommand"));
    assert!(
        top.subcommands.contains(sub),
        "{what}: `{binary} {sub}` is not a subcommand"
    );
    if binary == "worker" {
        assert_eq!(sub, "run", "{what}: the worker's long-running command");
    }
    let mut rest = args[1..].iter().peekable();
    while let Some(flag) = rest.next() {
        let opt = help
            .by_flag(flag)
            .unwrap_or_else(|| panic!("{what}: `{binary} {sub}` has no flag {flag}"));
        if !opt.values.is_empty() {
            let value = rest
                .next()
                .unwrap_or_else(|| panic!("{what}: {flag} without a value"));
            assert!(
                opt.values.contains(value),
                "{what}: {flag} {value} is not one of {:?}",
                opt.values
            );
        }
    }
    for (name, value) in settings {
        let opt = help.by_env(name).unwrap_or_else(|| {
            panic!("{what}: sets {name}, which `{binary} {sub} --help` does not list")
        });
        if let (Some(value), false) = (value, opt.values.is_empty()) {
            assert!(
                opt.values.contains(value),
                "{what}: {name}={value} is not one of {:?}",
                opt.values
            );
        }
        if let (Some(value), Some(default)) = (value, &opt.default) {
            if seconds_or_none(default).is_some() {
                assert!(
                    seconds_or_none(value).is_some(),
                    "{what}: {name}={value} is not a duration"
                );
            }
        }
    }
    if binary == "api" || sub == "run" {
        for flag in &help.required {
            let env = help.by_flag(flag).and_then(|o| o.env.clone());
            let env = env.unwrap_or_else(|| panic!("{what}: required {flag} has no env"));
            assert!(
                settings.contains_key(&env),
                "{what}: {env} is required and not set"
            );
        }
    }
    help
}

fn seconds_or_none(text: &str) -> Option<f64> {
    let ok = !text.is_empty()
        && text.split_whitespace().all(|p| {
            let d = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
            d > 0 && ["", "ms", "s", "m", "min", "h", "d"].contains(&&p[d..])
        });
    ok.then(|| seconds(text))
}

/// The longest a consumer replica may need, as it is configured (`settings`) or by default: a
/// parse started at once may take `PARSE_TIMEOUT`, and with `WORKER_MAX_RUNTIME` set the replica
/// takes work until then; either way it then gets `SHUTDOWN_GRACE` to finish what it holds.
fn longest_consumer_run(settings: &Settings) -> f64 {
    let help = &binaries().worker_run;
    let literal = |name: &str| match settings.get(name) {
        Some(Some(v)) => Some(seconds(v)),
        Some(None) => panic!("{name} must be a literal for this test to read it"),
        None => None,
    };
    let effective = |name: &str| literal(name).unwrap_or_else(|| help.default_secs(name));
    // The bound exists, and has no default (unset: no limit).
    let bound = help
        .by_env("WORKER_MAX_RUNTIME")
        .expect("WORKER_MAX_RUNTIME");
    assert_eq!(bound.default, None);
    let taking_work = literal("WORKER_MAX_RUNTIME").unwrap_or(0.0);
    effective("PARSE_TIMEOUT").max(taking_work) + effective("SHUTDOWN_GRACE")
}

/// The api's own OpenAPI document lists these paths.
fn assert_served(paths: &[&str]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let doc = rt.block_on(api::openapi::openapi_json()).0;
    let doc = serde_json::to_value(doc).expect("the OpenAPI document is JSON");
    for path in paths {
        assert!(
            doc["paths"].get(*path).is_some(),
            "the api does not serve {path}"
        );
    }
}

#[test]
fn help_pages_are_read_as_the_binaries_print_them() {
    let b = binaries();
    assert!(b.worker.subcommands.contains("run") && b.api.subcommands.contains("serve"));
    assert_eq!(b.worker_run.required, ["--database-url"]);
    let role = b.worker_run.by_flag("--role").expect("--role");
    assert_eq!(
        role.values,
        ["all", "relay", "consumer", "webhooks", "sources"]
    );
    assert_eq!(
        b.worker_run.by_env("LOG_FORMAT").map(|o| o.values.clone()),
        Some(vec!["text".into(), "json".into()])
    );
    let credential = b
        .api
        .by_env("AZURE_STORAGE_CREDENTIAL")
        .expect("credential");
    assert!(credential.values.contains(&"workload-identity".to_owned()));
    assert!(b.worker_run.default_secs("PARSE_TIMEOUT") >= 60.0);
    assert_eq!(seconds("1h 30m"), 5_400.0);
    assert_eq!(seconds("250ms"), 0.25);
}
