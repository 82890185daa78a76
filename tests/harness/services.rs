//! Throwaway Postgres and Azurite for the integration tests: one of each per test-process run,
//! started lazily on free loopback ports in a temp directory, a fresh database per test
//! ([`fresh_database`]), fresh queue/container names ([`unique_name`]) and a separate cluster for
//! tests that take their database down ([`DedicatedPostgres`]). The servers are set up by
//! `tests/stack/services.sh`, that is by `tests/stack/lib.sh`, exactly as the stack scripts set up
//! theirs; each lives under a watchdog ([`crate::processes`]) that stops it when this process is
//! gone.

use std::fs;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shared::storage::connection_string::{DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME};
use sqlx::{Connection as _, PgConnection};
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::processes::{
    describe, free_ports, output, repo_root, spawn_watchdog, temp_dir, WatchdogMode,
};

const START_TIMEOUT: Duration = Duration::from_secs(60);
const PG_SUPERUSER: &str = "postgres";

/// The shared servers of this test run.
pub struct Services {
    /// Superuser URL to the `postgres` database (trust auth, no password).
    pub pg_admin_url: String,
    pub pg_port: u16,
    /// Explicit-endpoint connection string for Azurite's development account.
    pub storage_connection_string: String,
    /// `http://127.0.0.1:<port>/devstoreaccount1` (no trailing slash).
    pub blob_endpoint: String,
    pub queue_endpoint: String,
}

impl Services {
    /// URL of database `db` on the shared cluster, as the superuser.
    pub fn database_url(&self, db: &str) -> String {
        pg_url(self.pg_port, db)
    }
}

static SERVICES: OnceCell<Services> = OnceCell::const_new();

/// The shared Postgres and Azurite, started on first use.
pub async fn services() -> &'static Services {
    SERVICES
        .get_or_init(|| async {
            let (cluster, azurite) = tokio::join!(Cluster::start("pg"), Azurite::start());
            let cluster = cluster.keep();
            Services {
                pg_admin_url: pg_url(cluster.port, "postgres"),
                pg_port: cluster.port,
                storage_connection_string: azurite.connection_string(),
                blob_endpoint: azurite.blob_endpoint(),
                queue_endpoint: azurite.queue_endpoint(),
            }
        })
        .await
}

/// Creates an empty database `t_<uuid>` on the shared cluster and returns its URL.
pub async fn fresh_database() -> String {
    let services = services().await;
    let name = format!("t_{}", Uuid::new_v4().simple());
    create_database(&services.pg_admin_url, &name).await;
    services.database_url(&name)
}

/// A name valid for an Azure queue or blob container (3–63 chars of `a-z0-9-`, starting with a
/// letter or digit, no double dashes), derived from `prefix` and unique per call.
pub fn unique_name(prefix: &str) -> String {
    let mut base = String::new();
    for c in prefix.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            base.push(c);
        } else if !base.is_empty() && !base.ends_with('-') {
            base.push('-');
        }
    }
    base.truncate(30);
    while base.ends_with('-') {
        base.pop();
    }
    if base.is_empty() {
        base.push('t');
    }
    format!("{base}-{}", Uuid::new_v4().simple())
}

/// A Postgres cluster of its own, for tests that stop and restart the database (outages).
/// Stopped and deleted on drop.
pub struct DedicatedPostgres {
    cluster: Cluster,
}

impl DedicatedPostgres {
    pub async fn start() -> Self {
        Self {
            cluster: Cluster::start("pg-dedicated").await,
        }
    }

    pub fn port(&self) -> u16 {
        self.cluster.port
    }

    /// Superuser URL to database `db` (`postgres` always exists).
    pub fn url(&self, db: &str) -> String {
        pg_url(self.cluster.port, db)
    }

    /// Creates database `name` and returns its URL.
    pub async fn create_database(&self, name: &str) -> String {
        create_database(&self.url("postgres"), name).await;
        self.url(name)
    }

    /// Fast shutdown: open connections are closed, new ones are refused.
    pub async fn stop(&self) {
        if let Err(log) = self.cluster.run(self.cluster.stop_command("fast")).await {
            panic!("stopping postgres failed:\n{log}");
        }
    }

    /// Starts the cluster again on the same port (restarts it when it is running).
    pub async fn restart(&self) {
        if let Err(log) = self
            .cluster
            .run(self.cluster.up_command("postgres-restart"))
            .await
        {
            panic!("restarting postgres failed:\n{log}");
        }
    }
}

impl Drop for DedicatedPostgres {
    fn drop(&mut self) {
        // Stop now so the test's next steps see it gone; the watchdog then deletes the files.
        let _ = self
            .cluster
            .stop_command("immediate")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = fs::write(self.cluster.root.join(".release"), b"");
    }
}

// ------------------------------------------------------------------------------------------------
// Postgres

/// `tests/stack/services.sh` with `args`.
fn services_sh<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(args: I) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("tests/stack/services.sh"))
        .args(args);
    cmd
}

struct Cluster {
    /// Temp dir: `data/` (the cluster, its `server.log` inside) and the watchdog's marker.
    root: PathBuf,
    port: u16,
    watchdog: Option<Child>,
}

impl Cluster {
    async fn start(label: &str) -> Self {
        let mut cluster = Cluster {
            root: temp_dir(label),
            port: 0,
            watchdog: None,
        };
        // Before anything can be left behind: the watchdog stops the cluster and deletes `root`
        // once we are gone (also if this future is dropped half-way).
        cluster.watchdog = Some(spawn_watchdog(
            &cluster.root,
            WatchdogMode::Stop,
            &cluster.stop_command("immediate"),
            None,
        ));
        // A free port can be taken between our probe and the server's bind: try a few.
        for attempt in 1..=3 {
            cluster.port = free_ports::<1>()[0];
            match cluster.run(cluster.up_command("postgres-start")).await {
                Ok(()) => break,
                Err(log) if attempt < 3 => eprintln!("postgres did not start, retrying: {log}"),
                Err(log) => panic!("postgres did not start:\n{log}"),
            }
        }
        cluster
    }

    /// For the shared cluster: nothing will drop it, the watchdog outlives it.
    fn keep(mut self) -> Self {
        self.watchdog.take();
        self
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `postgres-start` or `postgres-restart` on this cluster's port.
    fn up_command(&self, verb: &str) -> Command {
        let mut cmd = services_sh([
            verb.as_ref(),
            self.data().as_os_str(),
            self.port.to_string().as_ref(),
        ]);
        // Keep the postmaster out of our process group: a Ctrl-C goes to the watchdog path.
        cmd.process_group(0);
        cmd
    }

    /// `postgres-stop` in `mode` (fast or immediate).
    fn stop_command(&self, mode: &str) -> Command {
        services_sh([
            "postgres-stop".as_ref(),
            self.data().as_os_str(),
            std::ffi::OsStr::new(mode),
        ])
    }

    /// Runs `cmd`; on failure, what it said and the end of the server's log.
    async fn run(&self, cmd: Command) -> Result<(), String> {
        let output = output(cmd).await;
        if output.status.success() {
            return Ok(());
        }
        let server_log = fs::read_to_string(self.data().join("server.log")).unwrap_or_default();
        Err(format!(
            "{}\n--- server.log ---\n{server_log}",
            describe(&output)
        ))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            // Reap it once it has finished (DedicatedPostgres's drop has released it).
            std::thread::spawn(move || watchdog.wait());
        }
    }
}

fn pg_url(port: u16, db: &str) -> String {
    format!("postgres://{PG_SUPERUSER}@127.0.0.1:{port}/{db}")
}

async fn create_database(admin_url: &str, name: &str) {
    let mut conn = PgConnection::connect(admin_url)
        .await
        .unwrap_or_else(|e| panic!("connect to {admin_url}: {e}"));
    sqlx::query(&format!(r#"CREATE DATABASE "{name}""#))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("create database {name}: {e}"));
    let _ = conn.close().await;
}

// ------------------------------------------------------------------------------------------------
// Azurite

struct Azurite {
    blob_port: u16,
    queue_port: u16,
}

impl Azurite {
    async fn start() -> Self {
        let mut last_log = String::new();
        for _attempt in 1..=3 {
            let root = temp_dir("azurite");
            let [blob, queue, table] = free_ports::<3>();
            let cmd = services_sh([
                "azurite".to_owned(),
                blob.to_string(),
                queue.to_string(),
                table.to_string(),
            ]);
            let log = root.join("azurite.log");
            let mut watchdog = spawn_watchdog(&root, WatchdogMode::Serve, &cmd, Some(&log));
            if wait_for_ports(&[blob, queue, table], &mut watchdog).await {
                // Reap the watchdog whenever it ends; it outlives every test.
                std::thread::spawn(move || watchdog.wait());
                return Azurite {
                    blob_port: blob,
                    queue_port: queue,
                };
            }
            let _ = watchdog.kill();
            let _ = watchdog.wait();
            last_log = fs::read_to_string(&log).unwrap_or_default();
            let _ = fs::remove_dir_all(&root);
            eprintln!("azurite did not start, retrying:\n{last_log}");
        }
        panic!("azurite did not start:\n{last_log}");
    }

    fn blob_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{DEV_ACCOUNT_NAME}", self.blob_port)
    }

    fn queue_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{DEV_ACCOUNT_NAME}", self.queue_port)
    }

    fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT_NAME};AccountKey={DEV_ACCOUNT_KEY};\
             BlobEndpoint={};QueueEndpoint={}",
            self.blob_endpoint(),
            self.queue_endpoint()
        )
    }
}

/// True once every port accepts connections; false if the server exited or time ran out.
async fn wait_for_ports(ports: &[u16], watchdog: &mut Child) -> bool {
    let deadline = Instant::now() + START_TIMEOUT;
    for &port in ports {
        while tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .is_err()
        {
            if Instant::now() > deadline || !matches!(watchdog.try_wait(), Ok(None)) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    true
}
