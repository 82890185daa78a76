//! The Azure deployment (`deploy/azure`), read as text: resources, their containers' `env`,
//! `command` and `args`, the job's scale rule and the parameters it uses.

use std::collections::BTreeMap;

use super::*;

/// One top-level `resource` of a Bicep file: its symbol, type and text.
struct Resource {
    symbol: String,
    kind: String,
    body: String,
}

fn bicep_resources(text: &str) -> Vec<Resource> {
    let mut out: Vec<Resource> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some(decl) = line.strip_prefix("resource ") {
            let mut parts = decl.split_whitespace();
            let symbol = parts.next().unwrap_or_default().to_owned();
            let kind = parts
                .next()
                .unwrap_or_default()
                .trim_matches('\'')
                .to_owned();
            out.push(Resource {
                symbol,
                kind,
                body: String::new(),
            });
            open = true;
        } else if line == "}" {
            open = false;
        } else if open {
            if let Some(r) = out.last_mut() {
                r.body.push_str(line);
                r.body.push('\n');
            }
        }
    }
    out
}

/// The value of `key: value` on its own line (first match).
fn bicep_value<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.lines()
        .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix(": "))
        .map(str::trim)
        .next()
}

/// The quoted items of a one-line `key: [ 'a', 'b' ]`.
fn bicep_list(body: &str, key: &str) -> Vec<String> {
    let list = bicep_value(body, key).unwrap_or_else(|| panic!("no {key}"));
    list.trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('\'').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The container's `env` entries, `{ name: 'X', value: … }` or `{ name: 'X', secretRef: … }`,
/// as name → the expression (a literal keeps its quotes).
fn bicep_env(body: &str) -> BTreeMap<String, String> {
    body.lines()
        .filter_map(|l| {
            let entry = l.trim().strip_prefix("{ name: '")?.strip_suffix(" }")?;
            let (name, rest) = entry.split_once("', ")?;
            let expr = rest
                .strip_prefix("value: ")
                .or_else(|| rest.strip_prefix("secretRef: "))?;
            Some((name.to_owned(), expr.to_owned()))
        })
        .collect()
}

fn literal(expr: &str) -> Option<String> {
    let inner = expr.strip_prefix('\'')?.strip_suffix('\'')?;
    (!inner.contains("${")).then(|| inner.to_owned())
}

/// `param <name> <type> = <default>` and the `@minValue(..)` above it.
fn bicep_param(text: &str, name: &str) -> (Option<f64>, Option<f64>) {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(&format!("param {name} ")))
        .unwrap_or_else(|| panic!("no param {name}"));
    let default = lines[at]
        .split_once(" = ")
        .and_then(|(_, v)| v.trim().parse().ok());
    let min = lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.starts_with('@'))
        .find_map(|l| {
            l.strip_prefix("@minValue(")?
                .strip_suffix(')')?
                .parse()
                .ok()
        });
    (default, min)
}

fn main_bicep() -> (String, Vec<Resource>) {
    let text = read(&deploy_dir().join("azure/main.bicep"));
    let mut resources = bicep_resources(&text);
    for r in &mut resources {
        r.body = with_vars(&text, &r.body);
    }
    (text, resources)
}

/// `body` with each `env: <var>` line replaced by the lines of `var <var> = [ … ]`, so that
/// two jobs sharing one list of settings are read as each having them.
fn with_vars(text: &str, body: &str) -> String {
    body.lines()
        .map(|line| {
            let Some(var) = line.trim().strip_prefix("env: ") else {
                return format!("{line}\n");
            };
            if var.starts_with('[') {
                return format!("{line}\n");
            }
            let start = text
                .find(&format!("var {var} = ["))
                .unwrap_or_else(|| panic!("no var {var}"));
            let block = &text[start..];
            let end = block
                .find("\n]")
                .unwrap_or_else(|| panic!("var {var} is not closed"));
            format!("{}\n", &block[..end])
        })
        .collect()
}

fn bicep_container(r: &Resource) -> (&'static str, Settings) {
    let binary = match bicep_value(&r.body, "image") {
        Some("apiImage") => "api",
        Some("workerImage") => "worker",
        other => panic!("{}: image {other:?}", r.symbol),
    };
    let settings = bicep_env(&r.body)
        .into_iter()
        .map(|(name, expr)| {
            let value = literal(&expr);
            (name, value)
        })
        .collect();
    (binary, settings)
}

#[test]
fn the_bicep_apps_and_job_set_only_settings_the_binaries_read_and_run_real_commands() {
    let (_, resources) = main_bicep();
    let containers: Vec<&Resource> = resources
        .iter()
        .filter(|r| {
            r.kind.starts_with("Microsoft.App/containerApps@")
                || r.kind.starts_with("Microsoft.App/jobs@")
        })
        .collect();
    let symbols: Vec<&str> = containers.iter().map(|r| r.symbol.as_str()).collect();
    assert_eq!(
        symbols,
        [
            "api",
            "relay",
            "webhooks",
            "consumer",
            "sources",
            "sourcesSweep"
        ]
    );
    let mut roles = Vec::new();
    for r in &containers {
        let (binary, settings) = bicep_container(r);
        let args = bicep_list(&r.body, "args");
        check_container(
            &r.symbol,
            binary,
            &bicep_list(&r.body, "command"),
            &args,
            &settings,
        );
        roles.push(args.join(" "));
        let env = bicep_env(&r.body);
        assert_eq!(
            env["DATABASE_URL"], "'database-url'",
            "{}: the secret",
            r.symbol
        );
        if r.symbol == "webhooks" {
            // Webhook delivery needs no storage: no storage settings, its key from a secret.
            assert!(
                !settings.keys().any(|k| k.starts_with("AZURE_")),
                "{settings:?}"
            );
            assert_eq!(env["WEBHOOK_SECRET_KEY"], "'webhook-secret-key'");
            continue;
        }
        // Storage through the app's own managed identity, never a key.
        assert_eq!(
            settings["AZURE_STORAGE_CREDENTIAL"].as_deref(),
            Some("managed-identity")
        );
        assert!(
            !settings.contains_key("AZURE_STORAGE_CONNECTION_STRING"),
            "{}",
            r.symbol
        );
        let identity = user_assigned_identity(&r.body);
        assert_eq!(
            env["AZURE_CLIENT_ID"],
            format!("{identity}.properties.clientId"),
            "{}",
            r.symbol
        );
    }
    assert_eq!(
        roles,
        [
            "serve",
            "run --role relay",
            "run --role webhooks",
            "run --role consumer --drain",
            "run --role sources --drain",
            "run --role sources --drain"
        ]
    );
}

#[test]
fn the_bicep_sources_jobs_scale_on_the_events_queue_and_sweep_on_a_schedule() {
    let (text, resources) = main_bicep();
    let job = |symbol: &str| {
        resources
            .iter()
            .find(|r| r.symbol == symbol)
            .unwrap_or_else(|| panic!("no {symbol}"))
    };
    let events = job("sources");
    let env = bicep_env(&events.body);
    assert_eq!(bicep_value(&events.body, "triggerType"), Some("'Event'"));
    let rules = &events.body[events.body.find("rules: [").expect("scale rules")..];
    assert_eq!(bicep_value(rules, "type"), Some("'azure-queue'"));
    // The scaler counts the queue the worker reads events from, as the job's identity.
    assert_eq!(
        bicep_value(rules, "queueName"),
        Some(env["SOURCE_EVENTS_QUEUE"].as_str())
    );
    assert_eq!(
        bicep_value(rules, "accountName"),
        Some(env["AZURE_STORAGE_ACCOUNT"].as_str())
    );
    let identity = user_assigned_identity(&events.body);
    assert_eq!(
        bicep_value(rules, "identity"),
        Some(format!("{identity}.id").as_str())
    );
    assert_eq!(
        env["WEBHOOK_SECRET_KEY"], "'webhook-secret-key'",
        "it opens credentials"
    );
    bicep_param(&text, "sourcesMaxExecutions");
    // The sweep runs the same command on a schedule, as the same identity.
    let sweep = job("sourcesSweep");
    assert_eq!(bicep_value(&sweep.body, "triggerType"), Some("'Schedule'"));
    assert!(bicep_value(&sweep.body, "cronExpression").is_some());
    assert_eq!(user_assigned_identity(&sweep.body), identity);
    assert_eq!(bicep_env(&sweep.body), env);
    // The storage module makes the events queue and gives the identity its roles there.
    let storage = read(&deploy_dir().join("azure/modules/storage.bicep"));
    assert!(
        storage.contains("name: sourceEventsQueue"),
        "the events queue"
    );
    assert!(storage.contains("guid(eventsQueue.id, sourcesPrincipalId"));
    let events_module = read(&deploy_dir().join("azure/modules/source-events.bicep"));
    assert!(events_module.contains("'Microsoft.Storage.BlobCreated'"));
    assert!(events_module.contains("endpointType: 'StorageQueue'"));
}

/// The symbol of the one user-assigned identity a resource runs as (`'${x.id}': {}`).
fn user_assigned_identity(body: &str) -> String {
    let ids: Vec<&str> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("'${")?.strip_suffix(".id}': {}"))
        .collect();
    assert_eq!(ids.len(), 1, "one user-assigned identity: {ids:?}");
    ids[0].to_owned()
}

#[test]
fn the_bicep_api_is_probed_and_served_where_it_listens() {
    let (_, resources) = main_bicep();
    let api = resources
        .iter()
        .find(|r| r.symbol == "api")
        .expect("the api app");
    let env = bicep_env(&api.body);
    let port =
        |addr: &str| literal(addr).and_then(|a| a.rsplit_once(':').map(|(_, p)| p.to_owned()));
    let listen = port(&env["LISTEN_ADDR"]).expect("LISTEN_ADDR is a literal address");
    let metrics = port(&env["METRICS_ADDR"]).expect("METRICS_ADDR is a literal address");
    let target_ports: Vec<&str> = api
        .body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("targetPort: "))
        .collect();
    assert_eq!(
        target_ports,
        [listen.as_str(), metrics.as_str()],
        "ingress, then the internal metrics port"
    );
    let probes: Vec<&str> = api
        .body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("httpGet: { path: '"))
        .collect();
    for path in ["/healthz", "/healthz", "/readyz"] {
        let probe = format!("{path}', port: {listen} }}");
        assert!(
            probes.contains(&probe.as_str()),
            "no probe {probe} in {probes:?}"
        );
    }
    assert_served(&["/healthz", "/readyz"]);
}

#[test]
fn the_bicep_consumer_job_scales_on_its_queue_as_its_identity_and_outlives_a_parse() {
    let (text, resources) = main_bicep();
    let job = resources
        .iter()
        .find(|r| r.kind.starts_with("Microsoft.App/jobs@"))
        .expect("the consumer job");
    let env = bicep_env(&job.body);
    assert_eq!(bicep_value(&job.body, "triggerType"), Some("'Event'"));
    let rules = &job.body[job.body.find("rules: [").expect("scale rules")..];
    assert_eq!(rules.matches("type: '").count(), 1, "one scale rule");
    assert_eq!(bicep_value(rules, "type"), Some("'azure-queue'"));
    // The scaler counts the queue the consumer reads, in the account it reads…
    assert_eq!(
        bicep_value(rules, "queueName"),
        Some(env["QUEUE_NAME"].as_str())
    );
    assert_eq!(
        bicep_value(rules, "accountName"),
        Some(env["AZURE_STORAGE_ACCOUNT"].as_str())
    );
    for setting in [
        "queueLength",
        "maxExecutions",
        "pollingInterval",
        "replicaTimeout",
    ] {
        assert!(
            bicep_value(&job.body, setting).is_some(),
            "{setting} is set"
        );
        bicep_param(&text, setting);
    }
    // …authenticated as the job's own identity, not a secret.
    let identity = user_assigned_identity(&job.body);
    assert_eq!(
        bicep_value(rules, "identity"),
        Some(format!("{identity}.id").as_str())
    );
    assert!(!rules.contains("auth:"), "no secret-based auth on the rule");

    // A replica may outlive the longest parse plus the shutdown grace, for any allowed value.
    assert_eq!(
        bicep_value(&job.body, "replicaTimeout"),
        Some("replicaTimeout")
    );
    let (default, min) = bicep_param(&text, "replicaTimeout");
    let needed = longest_consumer_run(&bicep_container(job).1);
    for (what, value) in [("default", default), ("@minValue", min)] {
        let value = value.unwrap_or_else(|| panic!("replicaTimeout has a {what}"));
        assert!(
            value > needed,
            "replicaTimeout {what} {value} s ≤ the longest run, {needed} s"
        );
    }

    // The storage module makes the task queue and the poison queue the worker derives from it.
    let storage = read(&deploy_dir().join("azure/modules/storage.bicep"));
    assert!(storage.contains("  name: queueName\n"), "the task queue");
    assert!(
        storage.contains("  name: '${queueName}-poison'\n"),
        "the poison queue"
    );
    assert!(binaries()
        .worker_run
        .text
        .contains("its poison queue is `<name>-poison`"));
}
