//! Throwaway Postgres and Azurite for the integration tests: one of each per test-process run,
//! started lazily on free loopback ports in a temp directory, a fresh database per test
//! ([`fresh_database`]), fresh queue/container names ([`unique_name`]) and a separate cluster for
//! tests that take their database down ([`DedicatedPostgres`]). Statics are never dropped and a
//! killed test run must not leave servers behind, so every server lives under a small `sh`
//! watchdog (in its own process group, out of reach of a terminal's Ctrl-C) that stops it and
//! deletes its directory once this process is gone. Postgres refuses to run as root: when we
//! are root the cluster belongs to the `postgres` system user and its tools run through
//! `runuser -u postgres --`, exactly as `tests/stack/lib.sh` does.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use shared::storage::connection_string::{DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME};
use sqlx::{Connection as _, PgConnection};
use tokio::sync::OnceCell;
use uuid::Uuid;

const START_TIMEOUT: Duration = Duration::from_secs(60);
const PG_SUPERUSER: &str = "postgres";
const INITDB_ARGS: [&str; 7] = [
    "-U",
    PG_SUPERUSER,
    "--auth=trust",
    "--no-locale",
    "-E",
    "UTF8",
    "--no-sync",
];
/// Appended to postgresql.conf: loopback only, no durability (throwaway test clusters).
const PG_CONF: &str = "
# sheetrelay test settings (tests/harness/services.rs)
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 300
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
";

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
        let mut stop = self.cluster.pg_ctl();
        stop.args(["-m", "fast", "-w", "-t", "60", "stop"]);
        run(stop, "pg_ctl stop").await;
    }

    /// Starts the cluster again on the same port (restarts it when it is running).
    pub async fn restart(&self) {
        self.cluster.pg_ctl_start("restart").await;
    }
}

impl Drop for DedicatedPostgres {
    fn drop(&mut self) {
        // Stop now so the test's next steps see it gone; the watchdog then deletes the files.
        let mut stop = self.cluster.pg_ctl();
        stop.args(["-m", "immediate", "-w", "stop"]);
        let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = fs::write(self.cluster.root.join(".release"), b"");
    }
}

// ------------------------------------------------------------------------------------------------
// Postgres

struct Cluster {
    bin: PathBuf,
    /// Temp dir owned by the cluster's user: `data/`, `server.log`, the watchdog's marker.
    root: PathBuf,
    port: u16,
    watchdog: Option<Child>,
}

impl Cluster {
    async fn start(label: &str) -> Self {
        let bin = pg_bin_dir();
        let root = temp_dir(label);
        if is_root() {
            ensure_postgres_user();
            let mut chown = Command::new("chown");
            chown.arg("postgres:postgres").arg(&root);
            run(chown, "chown postgres").await;
        }
        let data = root.join("data");
        // Before anything can be left behind: the watchdog runs `pg_ctl stop -m immediate` and
        // deletes `root` once we are gone (also if this future is dropped half-way).
        let mut stop = as_cluster_owner(&bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"]);
        let watchdog = spawn_watchdog(&root, WatchdogMode::Stop, &stop, None);

        let mut initdb = as_cluster_owner(&bin.join("initdb"));
        initdb.arg("-D").arg(&data).args(INITDB_ARGS);
        run(initdb, "initdb").await;
        OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .and_then(|mut conf| conf.write_all(PG_CONF.as_bytes()))
            .expect("append to postgresql.conf");

        let mut cluster = Cluster {
            bin,
            root,
            port: 0,
            watchdog: Some(watchdog),
        };
        // A free port can be taken between our probe and the server's bind: try a few.
        for attempt in 1..=3 {
            cluster.port = free_ports::<1>()[0];
            match cluster.try_pg_ctl_start("start").await {
                Ok(()) => break,
                Err(log) if attempt < 3 => eprintln!("postgres did not start, retrying: {log}"),
                Err(log) => panic!("postgres did not start:\n{log}"),
            }
        }
        wait_for_postgres(&pg_url(cluster.port, "postgres")).await;
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

    fn pg_ctl(&self) -> Command {
        let mut cmd = as_cluster_owner(&self.bin.join("pg_ctl"));
        cmd.arg("-D").arg(self.data());
        cmd
    }

    async fn pg_ctl_start(&self, verb: &str) {
        if let Err(log) = self.try_pg_ctl_start(verb).await {
            panic!("pg_ctl {verb} failed:\n{log}");
        }
    }

    async fn try_pg_ctl_start(&self, verb: &str) -> Result<(), String> {
        let mut start = self.pg_ctl();
        start
            .arg("-l")
            .arg(self.root.join("server.log"))
            .args(["-o", &format!("-p {}", self.port)])
            .args(["-m", "fast", "-w", "-t", "60", verb])
            // Keep the postmaster out of our process group: a Ctrl-C goes to the watchdog path.
            .process_group(0);
        let output = output(start).await;
        if output.status.success() {
            return Ok(());
        }
        let server_log = fs::read_to_string(self.root.join("server.log")).unwrap_or_default();
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

async fn wait_for_postgres(url: &str) {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match PgConnection::connect(url).await {
            Ok(conn) => {
                let _ = conn.close().await;
                return;
            }
            Err(e) if Instant::now() > deadline => panic!("postgres at {url} not ready: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` (Debian), else the directory of `initdb` on
/// `PATH`.
fn pg_bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .expect(
            "no Postgres server binaries (/usr/lib/postgresql/*/bin/initdb): run \
             tests/stack/test.sh, which installs Debian's postgresql package",
        )
}

fn is_root() -> bool {
    // /proc/self belongs to the effective user of this process.
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

fn ensure_postgres_user() {
    let exists = || {
        Command::new("id")
            .args(["-u", "postgres"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !exists() {
        // Another test binary may be creating it at the same time: only a missing user is fatal.
        let _ = Command::new("useradd")
            .args(["--system", "--user-group", "--no-create-home", "postgres"])
            .status();
        assert!(exists(), "could not create the postgres system user");
    }
}

/// `program` run as the cluster's owner: `postgres` when we are root, ourselves otherwise.
fn as_cluster_owner(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

// ------------------------------------------------------------------------------------------------
// Azurite

struct Azurite {
    blob_port: u16,
    queue_port: u16,
}

impl Azurite {
    async fn start() -> Self {
        // The version pinned in package.json, unless SHEETRELAY_AZURITE names another binary.
        let azurite = std::env::var_os("SHEETRELAY_AZURITE")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("node_modules/.bin/azurite"));
        assert!(
            azurite.is_file(),
            "{} is missing: run tests/stack/test.sh (or `npm ci` at the repo root)",
            azurite.display()
        );
        let mut last_log = String::new();
        for _attempt in 1..=3 {
            let root = temp_dir("azurite");
            let [blob, queue, table] = free_ports::<3>();
            let mut cmd = Command::new(&azurite);
            cmd.args([
                "--silent",
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--loose",
                // Throwaway data, like the cluster's `fsync = off`: Azurite's disk persistence
                // (LokiJS autosave, extent files) only costs CPU on the one core it runs on.
                // (It excludes `--location`; `root` keeps only the log.)
                "--inMemoryPersistence",
            ])
            .args(["--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1"])
            .args(["--tableHost", "127.0.0.1"])
            .args(["--blobPort", &blob.to_string()])
            .args(["--queuePort", &queue.to_string()])
            .args(["--tablePort", &table.to_string()]);
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

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

// ------------------------------------------------------------------------------------------------
// Processes, ports, directories

#[derive(Clone, Copy)]
enum WatchdogMode {
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

fn spawn_watchdog(dir: &Path, mode: WatchdogMode, command: &Command, log: Option<&Path>) -> Child {
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
fn free_ports<const N: usize>() -> [u16; N] {
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

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sheetrelay-{label}-{}-{}",
        std::process::id(),
        Uuid::new_v4().simple()
    ));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

async fn output(cmd: Command) -> Output {
    let program = cmd.get_program().to_string_lossy().into_owned();
    tokio::process::Command::from(cmd)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {program}: {e}"))
}

async fn run(cmd: Command, what: &str) {
    let output = output(cmd).await;
    assert!(
        output.status.success(),
        "{what} failed: {}",
        describe(&output)
    );
}

fn describe(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
