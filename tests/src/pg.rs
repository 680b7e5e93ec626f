//! A private PostgreSQL cluster for a test: `initdb` and `pg_ctl` in a temporary directory,
//! listening on a Unix socket there only (no TCP) — or, from [`Cluster::start_tls`], also on
//! a free TCP port of 127.0.0.1 with TLS (a certificate authority made for it by `openssl`),
//! refusing unencrypted TCP connections. `initdb` refuses to run as root, so as root
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
    /// With TLS: the TCP port.
    port: Option<u16>,
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
        Self::start_with(false)
    }

    /// Starts a cluster that also listens on a free TCP port of 127.0.0.1 with TLS only
    /// (`hostnossl` connections rejected), its certificate for `localhost` signed by
    /// [`Cluster::ca`]; `None` as [`Cluster::start`].
    ///
    /// # Panics
    /// As [`Cluster::start`], and when `openssl` cannot make the certificates.
    pub fn start_tls() -> Option<Cluster> {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Option<Cluster> {
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
        let port = tls.then(|| {
            // A free port: the system picks one, and it is let go for the server.
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .unwrap_or_else(|e| panic!("a free port: {e}"))
        });
        let cluster = Cluster {
            dir,
            bin,
            as_postgres,
            port,
        };
        if tls {
            cluster.make_certificates();
        }
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
        if tls {
            // Overwritten in place: the file keeps its owner.
            std::fs::write(
                cluster.data().join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
            )
            .unwrap_or_else(|e| panic!("pg_hba.conf: {e}"));
        }
        cluster.start_server();
        Some(cluster)
    }

    /// The certificate authority of a TLS cluster's server certificate (PEM).
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("tls/ca.crt")
    }

    /// Another certificate authority, which signed nothing the server shows (PEM).
    pub fn other_ca(&self) -> PathBuf {
        self.dir.path().join("tls/other.crt")
    }

    /// The connection string over TCP to `localhost` (a TLS cluster's), without `sslmode`.
    ///
    /// # Panics
    /// On a cluster started without TLS.
    pub fn tcp_url(&self) -> String {
        let port = self.port.unwrap_or_else(|| panic!("a cluster without TCP"));
        format!("host=localhost port={port} user=postgres dbname=postgres")
    }

    /// Two authorities and a server certificate for `localhost` (only: 127.0.0.1 is not a
    /// name of it) signed by the first, by `openssl`.
    fn make_certificates(&self) {
        let tls = self.dir.path().join("tls");
        std::fs::create_dir(&tls).unwrap_or_else(|e| panic!("tls dir: {e}"));
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&tls)
                .output()
                .unwrap_or_else(|e| panic!("openssl: {e}"));
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        for ca in ["ca", "other"] {
            openssl(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=sessdb test {ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.crt"),
            ]);
        }
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(tls.join("san.ext"), "subjectAltName=DNS:localhost\n")
            .unwrap_or_else(|e| panic!("san.ext: {e}"));
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ]);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            tls.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap_or_else(|e| panic!("server.key: {e}"));
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
            "host={} port={} user=postgres dbname=postgres",
            self.socket_dir().display(),
            self.port.unwrap_or(5432)
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
        let listen = match self.port {
            Some(port) => {
                let tls = self.dir.path().join("tls");
                format!(
                    "-c listen_addresses=127.0.0.1 -p {port} -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                    tls.join("server.crt").display(),
                    tls.join("server.key").display()
                )
            }
            None => "-c listen_addresses=''".to_owned(),
        };
        let opts = format!(
            "{listen} -k {} -c fsync=off -c full_page_writes=off",
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
