//! The Kubernetes deployment (`deploy/kubernetes`), parsed as YAML: every manifest the
//! kustomization applies, the workloads' containers and the consumer's ScaledJob.

use std::collections::BTreeSet;

use serde_norway::Value as Yaml;

use super::*;

struct Manifests {
    docs: Vec<Yaml>,
}

impl Manifests {
    fn load() -> Manifests {
        let dir = deploy_dir().join("kubernetes");
        let kustomization: Yaml =
            serde_norway::from_str(&read(&dir.join("kustomization.yaml"))).expect("kustomization");
        let listed: BTreeSet<String> = seq(&kustomization["resources"])
            .iter()
            .map(|r| r.as_str().expect("a file name").to_owned())
            .collect();
        let present: BTreeSet<String> = std::fs::read_dir(&dir)
            .expect("deploy/kubernetes")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
            .collect();
        assert_eq!(listed, present, "kustomization.yaml applies every manifest");
        let images: BTreeSet<&str> = seq(&kustomization["images"])
            .iter()
            .filter_map(|i| i["name"].as_str())
            .collect();
        assert_eq!(
            images,
            BTreeSet::from(["sheetrelay-api", "sheetrelay-worker"])
        );
        let mut docs = Vec::new();
        for name in &listed {
            let text = read(&dir.join(name));
            // Documents are separated by `---` lines.
            for doc in text.split("\n---\n") {
                let doc: Yaml =
                    serde_norway::from_str(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
                docs.push(doc);
            }
        }
        Manifests { docs }
    }

    fn all(&self, kind: &str) -> Vec<&Yaml> {
        self.docs
            .iter()
            .filter(|d| d["kind"].as_str() == Some(kind))
            .collect()
    }

    fn one(&self, kind: &str, name: &str) -> &Yaml {
        self.all(kind)
            .into_iter()
            .find(|d| d["metadata"]["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    /// The settings of a container: its `env` and the ConfigMaps of its `envFrom`.
    fn settings(&self, container: &Yaml) -> Settings {
        let mut out = Settings::new();
        for from in seq(&container["envFrom"]) {
            let name = from["configMapRef"]["name"]
                .as_str()
                .expect("envFrom a ConfigMap");
            let data = self.one("ConfigMap", name)["data"]
                .as_mapping()
                .expect("data");
            for (k, v) in data {
                let k = k.as_str().expect("a name").to_owned();
                out.insert(k, Some(scalar(v)));
            }
        }
        for e in seq(&container["env"]) {
            let name = e["name"].as_str().expect("env name").to_owned();
            out.insert(name, e.get("value").map(scalar));
        }
        out
    }
}

/// The value setting `name` takes in a worker container: its own, else `worker run`'s default.
fn worker_setting(settings: &Settings, name: &str) -> String {
    match settings.get(name) {
        Some(Some(v)) => v.clone(),
        _ => binaries()
            .worker_run
            .by_env(name)
            .and_then(|o| o.default.clone())
            .expect(name),
    }
}

fn seq(v: &Yaml) -> &[Yaml] {
    v.as_sequence().map(Vec::as_slice).unwrap_or_default()
}

fn strings(v: &Yaml) -> Vec<String> {
    seq(v).iter().map(scalar).collect()
}

fn scalar(v: &Yaml) -> String {
    match v {
        Yaml::String(s) => s.clone(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Bool(b) => b.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// Every workload's pod spec: (kind/name, pod spec).
fn pod_specs(m: &Manifests) -> Vec<(String, &Yaml)> {
    let mut out = Vec::new();
    for d in m.all("Deployment") {
        out.push((
            format!("Deployment/{}", scalar(&d["metadata"]["name"])),
            &d["spec"]["template"],
        ));
    }
    for d in m.all("ScaledJob") {
        out.push((
            format!("ScaledJob/{}", scalar(&d["metadata"]["name"])),
            &d["spec"]["jobTargetRef"]["template"],
        ));
    }
    for d in m.all("CronJob") {
        out.push((
            format!("CronJob/{}", scalar(&d["metadata"]["name"])),
            &d["spec"]["jobTemplate"]["spec"]["template"],
        ));
    }
    out
}

#[test]
fn the_kubernetes_workloads_set_only_settings_the_binaries_read_and_run_real_commands() {
    let m = Manifests::load();
    let mut roles = BTreeSet::new();
    for (what, template) in pod_specs(&m) {
        let spec = &template["spec"];
        let containers = seq(&spec["containers"]);
        assert_eq!(containers.len(), 1, "{what}");
        let c = &containers[0];
        let binary = match c["image"].as_str() {
            Some("sheetrelay-api") => "api",
            Some("sheetrelay-worker") => "worker",
            other => panic!("{what}: image {other:?}"),
        };
        let settings = m.settings(c);
        let args = strings(&c["args"]);
        let help = check_container(&what, binary, &strings(&c["command"]), &args, &settings);
        roles.insert(args.join(" "));
        let grace = spec["terminationGracePeriodSeconds"]
            .as_f64()
            .unwrap_or(30.0);
        let own = match settings.get("SHUTDOWN_GRACE") {
            Some(Some(v)) => seconds(v),
            _ => help.default_secs("SHUTDOWN_GRACE"),
        };
        assert!(
            grace > own,
            "{what}: terminationGracePeriodSeconds {grace} ≤ SHUTDOWN_GRACE {own}"
        );
        if args.join(" ") == "run --role webhooks" {
            // Webhook delivery needs no storage: no identity, no storage settings.
            assert!(
                !settings.keys().any(|k| k.starts_with("AZURE_")),
                "{what}: {settings:?}"
            );
            assert!(settings.contains_key("WEBHOOK_SECRET_KEY"), "{what}");
            continue;
        }
        // Kubernetes waits long enough for the binary's own graceful shutdown (above). Workload
        // identity: the pod carries the label, its service account the client id the binary is
        // told to use, and the binary is told to use it.
        assert_eq!(
            template["metadata"]["labels"]["azure.workload.identity/use"].as_str(),
            Some("true"),
            "{what}"
        );
        let account = m.one(
            "ServiceAccount",
            spec["serviceAccountName"]
                .as_str()
                .expect("a service account"),
        );
        assert_eq!(
            account["metadata"]["annotations"]["azure.workload.identity/client-id"].as_str(),
            settings["AZURE_CLIENT_ID"].as_deref(),
            "{what}"
        );
        assert_eq!(
            settings["AZURE_STORAGE_CREDENTIAL"].as_deref(),
            Some("workload-identity")
        );
        assert!(
            !settings.contains_key("AZURE_STORAGE_CONNECTION_STRING"),
            "{what}"
        );
    }
    let expected = [
        "run --role consumer --drain",
        "run --role relay",
        "run --role sources --drain",
        "run --role webhooks",
        "serve",
    ];
    assert_eq!(roles, BTreeSet::from(expected.map(str::to_owned)));

    // The api's probes and Service point at the port it listens on.
    let api = m.one("Deployment", "sheetrelay-api");
    let c = &seq(&api["spec"]["template"]["spec"]["containers"])[0];
    let settings = m.settings(c);
    let listen = settings["LISTEN_ADDR"]
        .as_deref()
        .and_then(|a| a.rsplit_once(':'))
        .expect("LISTEN_ADDR")
        .1;
    let http = seq(&c["ports"])
        .iter()
        .find(|p| p["name"].as_str() == Some("http"))
        .expect("http port");
    assert_eq!(scalar(&http["containerPort"]), listen);
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        assert_eq!(c[probe]["httpGet"]["path"].as_str(), Some(path), "{probe}");
        assert_eq!(
            c[probe]["httpGet"]["port"].as_str(),
            Some("http"),
            "{probe}"
        );
    }
    assert_served(&["/healthz", "/readyz"]);
}

#[test]
fn the_kubernetes_scaled_job_scales_on_its_queue_with_workload_identity_and_outlives_a_parse() {
    let m = Manifests::load();
    let job = m.one("ScaledJob", "sheetrelay-consumer");
    let template = &job["spec"]["jobTargetRef"]["template"];
    let c = &seq(&template["spec"]["containers"])[0];
    let settings = m.settings(c);
    let effective = |name: &str| worker_setting(&settings, name);
    let triggers = seq(&job["spec"]["triggers"]);
    assert_eq!(triggers.len(), 1);
    let trigger = &triggers[0];
    assert_eq!(trigger["type"].as_str(), Some("azure-queue"));
    assert_eq!(
        trigger["metadata"]["queueName"].as_str(),
        Some(effective("QUEUE_NAME").as_str())
    );
    assert_eq!(
        trigger["metadata"]["accountName"].as_str(),
        Some(effective("AZURE_STORAGE_ACCOUNT").as_str())
    );
    assert!(trigger["metadata"]["queueLength"]
        .as_str()
        .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0)));
    assert!(
        trigger["metadata"].get("connectionFromEnv").is_none(),
        "no connection string"
    );
    let auth = trigger["authenticationRef"]["name"]
        .as_str()
        .expect("authenticationRef");
    let auth = m.one("TriggerAuthentication", auth);
    assert_eq!(
        auth["spec"]["podIdentity"]["provider"].as_str(),
        Some("azure-workload")
    );
    // KEDA reads the queue as its *operator's* identity unless told which one to use: the
    // trigger must name the identity that holds the queue role, the one the pods use.
    assert_eq!(
        auth["spec"]["podIdentity"]["identityId"].as_str(),
        Some(effective("AZURE_CLIENT_ID").as_str()),
        "the trigger authenticates as the pods' identity"
    );
    for key in ["pollingInterval", "maxReplicaCount"] {
        assert!(job["spec"][key].as_u64().is_some_and(|n| n > 0), "{key}");
    }

    let deadline = job["spec"]["jobTargetRef"]["activeDeadlineSeconds"]
        .as_f64()
        .expect("activeDeadlineSeconds");
    let needed = longest_consumer_run(&settings);
    assert!(
        deadline > needed,
        "activeDeadlineSeconds {deadline} ≤ the longest run, {needed} s"
    );
    assert_eq!(template["spec"]["restartPolicy"].as_str(), Some("Never"));
}

#[test]
fn the_kubernetes_sources_scale_on_the_events_queue_and_sweep_on_a_schedule() {
    let m = Manifests::load();
    let job = m.one("ScaledJob", "sheetrelay-sources");
    let template = &job["spec"]["jobTargetRef"]["template"];
    let c = &seq(&template["spec"]["containers"])[0];
    let settings = m.settings(c);
    let effective = |name: &str| worker_setting(&settings, name);
    let trigger = &seq(&job["spec"]["triggers"])[0];
    assert_eq!(trigger["type"].as_str(), Some("azure-queue"));
    assert_eq!(
        trigger["metadata"]["queueName"].as_str(),
        Some(effective("SOURCE_EVENTS_QUEUE").as_str()),
        "it scales on the queue the worker reads events from"
    );
    assert_eq!(
        trigger["metadata"]["accountName"].as_str(),
        Some(effective("AZURE_STORAGE_ACCOUNT").as_str())
    );
    assert!(
        settings.contains_key("WEBHOOK_SECRET_KEY"),
        "it opens credentials"
    );
    let sweep = m.one("CronJob", "sheetrelay-sources-sweep");
    assert!(sweep["spec"]["schedule"].as_str().is_some());
    let sweep_template = &sweep["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(
        &seq(&sweep_template["spec"]["containers"])[0],
        c,
        "the sweep runs the ScaledJob's container"
    );
    assert_eq!(
        sweep_template["spec"]["restartPolicy"].as_str(),
        Some("Never")
    );
}
