//! A private PostgreSQL cluster for a test: `initdb` and `pg_ctl` in a temporary directory,
//! listening on a Unix socket there only (no TCP). `initdb` refuses to run as root, so as root
//! the cluster is made and run as the `postgres` user. On a machine without the server's
//! binaries [`Cluster::start`] says so on stderr and gives `None`: the caller skips, and the
//! skip is visible, never a silent pass (with `SESSDB_REQUIRE_POSTGRES` set, as CI sets it, a
//! missing server fails instead).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running cluster; stopped (immediately) when dropped.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
}

/// The directory holding `initdb` and `pg_ctl`: on `PATH`, or Debian's versioned one.
fn server_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|d| d.join("initdb").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

impl Cluster {
    /// Starts a cluster, or `None` (said on stderr) without PostgreSQL's server binaries.
    ///
    /// # Panics
    /// When the binaries are there but the cluster does not start.
    pub fn start() -> Option<Cluster> {
        let Some(bin) = server_bin() else {
            // CI installs the server and sets this: there a missing server fails the test.
            assert!(
                std::env::var_os("SESSDB_REQUIRE_POSTGRES").is_none(),
                "SESSDB_REQUIRE_POSTGRES is set and no PostgreSQL server binaries were found"
            );
            eprintln!("SKIPPED: no PostgreSQL server binaries (initdb, pg_ctl) on this machine");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("sessdb-pg")
            .tempdir()
            .unwrap_or_else(|e| panic!("temp dir: {e}"));
        let as_postgres = is_root();
        let cluster = Cluster {
            dir,
            bin,
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(cluster.dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown of the cluster directory to postgres failed");
        }
        let data = cluster.data().display().to_string();
        cluster.run(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        cluster.start_server();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The connection string.
    pub fn url(&self) -> String {
        format!(
            "host={} port=5432 user=postgres dbname=postgres",
            self.socket_dir().display()
        )
    }

    /// `tool` of the server's binaries, as the `postgres` user when this process is root.
    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let exe = self.bin.join(tool);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.args(args);
        c
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self
            .command(tool, args)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start_server(&self) {
        let data = self.data().display().to_string();
        let log = self.dir.path().join("server.log").display().to_string();
        let opts = format!(
            "-c listen_addresses='' -k {} -c fsync=off -c full_page_writes=off",
            self.socket_dir().display()
        );
        self.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-o", &opts, "-w", "start"],
        );
    }

    /// Stops the server and starts it again (a restart mid-stream).
    pub fn restart(&self) {
        self.stop();
        self.start_server();
    }

    /// Stops the server at once (`-m immediate`: every connection is cut).
    pub fn stop(&self) {
        let data = self.data().display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }

    /// Starts a stopped server again.
    pub fn start_again(&self) {
        self.start_server();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        // Best effort: the directory goes with the TempDir either way.
        let _ = self
            .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}
