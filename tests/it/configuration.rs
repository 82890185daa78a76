//! `docs/configuration.md` against the binaries' command lines, so that the page lists every
//! setting `api --help` and `worker run --help` show, names none they do not have, and gives each
//! its flag and default as clap has them. The settings are read from the clap commands
//! themselves (`api::config::Cli`, `worker::config::Cli`), every subcommand included but the
//! hidden ones (the parse child, deprecated names): a setting is an argument with an environment
//! variable. The page's tables are read with `shared::docs::Doc`, as the metric and error-code
//! tables are.

use std::collections::BTreeMap;

use clap::CommandFactory as _;
use shared::docs::Doc;

const CONFIGURATION: Doc = Doc {
    path: "docs/configuration.md",
    text: include_str!("../../docs/configuration.md"),
};

/// A setting's flag and default, as the command line or the page has them.
#[derive(Debug, PartialEq, Eq)]
struct Setting {
    flag: String,
    default: Option<String>,
}

/// Every setting of `command` and of its visible subcommands, by environment variable. One
/// variable read by several subcommands must mean the same flag and default in each.
fn settings_of(mut command: clap::Command) -> BTreeMap<String, Setting> {
    command.build();
    let mut settings = BTreeMap::new();
    collect(&command, &mut settings);
    settings
}

fn collect(command: &clap::Command, settings: &mut BTreeMap<String, Setting>) {
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(env) = arg.get_env() else { continue };
        let env = env.to_string_lossy().into_owned();
        let flag = format!("--{}", arg.get_long().unwrap_or_default());
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let setting = Setting {
            flag,
            default: (!defaults.is_empty()).then(|| defaults.join(",")),
        };
        if let Some(seen) = settings.get(&env) {
            assert_eq!(
                seen,
                &setting,
                "{env} differs between subcommands of `{}`",
                command.get_name()
            );
        } else {
            settings.insert(env, setting);
        }
    }
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, settings);
    }
}

/// The rows of the page's table headed `header`: `| `VAR` | `--flag` | `default` or — | … |`.
fn documented(header: &str) -> BTreeMap<String, Setting> {
    let unquote = |cell: &str| cell.trim_matches('`').to_owned();
    let mut rows = BTreeMap::new();
    for cells in CONFIGURATION.table(header) {
        let [env, flag, default, ..] = cells[..] else {
            panic!(
                "{}: a row of `{header}` has fewer than 3 cells: {cells:?}",
                CONFIGURATION.path
            );
        };
        let setting = Setting {
            flag: unquote(flag),
            default: (default != "—").then(|| unquote(default)),
        };
        let previous = rows.insert(unquote(env), setting);
        assert!(previous.is_none(), "{env} is listed twice under `{header}`");
    }
    rows
}

/// Compares a binary's settings with its table, saying every difference at once.
fn assert_documented(binary: &str, actual: BTreeMap<String, Setting>, header: &str) {
    let page = documented(header);
    let mut problems = Vec::new();
    for (env, setting) in &actual {
        match page.get(env) {
            None => problems.push(format!("{env} ({}) is missing", setting.flag)),
            Some(row) if row != setting => problems.push(format!(
                "{env}: the page says {row:?}, `{binary}` has {setting:?}"
            )),
            Some(_) => {}
        }
    }
    for env in page.keys().filter(|env| !actual.contains_key(*env)) {
        problems.push(format!("{env} is not a setting of `{binary}`"));
    }
    assert!(
        problems.is_empty(),
        "{} (table `{header}`) and the command line of `{binary}` disagree:\n  {}",
        CONFIGURATION.path,
        problems.join("\n  ")
    );
}

#[test]
fn the_configuration_page_lists_every_setting_of_the_api_and_no_other() {
    assert_documented(
        "api",
        settings_of(api::config::Cli::command()),
        "| api variable | flag | default | |",
    );
}

#[test]
fn the_configuration_page_lists_every_setting_of_the_worker_and_no_other() {
    assert_documented(
        "worker",
        settings_of(worker::config::Cli::command()),
        "| worker variable | flag | default | |",
    );
}

#[test]
fn every_option_of_api_and_worker_run_is_a_setting_with_an_environment_variable() {
    let mut api = api::config::Cli::command();
    api.build();
    let mut worker = worker::config::Cli::command();
    worker.build();
    let run = worker
        .find_subcommand("run")
        .expect("`worker run` exists")
        .clone();
    for command in [&api, &run] {
        let without_env: Vec<_> = command
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_long().is_some() && a.get_env().is_none())
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(
            without_env.is_empty(),
            "`{}` has options no environment variable sets, so no deployment can: {without_env:?}",
            command.get_name()
        );
    }
}
