//! A PostgreSQL server of the test's own: `initdb` into a temporary directory, `pg_ctl
//! start` on a free loopback port, stopped and removed when the test ends. PostgreSQL
//! refuses to run as root, so as root its commands run as the `postgres` user (Debian's
//! package creates it). With `SAFEGATE_PG_URL` set, that database is used instead and
//! nothing is started. scripts/test installs PostgreSQL when it is missing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running server (or a given URL); stopped on drop.
pub(crate) struct PgServer {
    url: String,
    dir: Option<PathBuf>,
    bin: PathBuf,
    as_postgres: bool,
}

impl PgServer {
    /// The database's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Start one (panics, saying what to install, when PostgreSQL is missing).
    pub(crate) fn start() -> PgServer {
        if let Some(url) = std::env::var("SAFEGATE_PG_URL").ok().filter(|u| !u.is_empty()) {
            return PgServer { url, dir: None, bin: PathBuf::new(), as_postgres: false };
        }
        let bin = bin_dir().unwrap_or_else(|| {
            panic!(
                "PostgreSQL's initdb and pg_ctl are not installed: apt-get install -y postgresql (scripts/test does)"
            )
        });
        let as_postgres = is_root();
        let dir = std::env::temp_dir().join(format!("safegate-pg-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        if as_postgres {
            ok(Command::new("chown").args(["postgres:postgres"]).arg(&dir).output(), "chown to postgres");
        }
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let server = PgServer {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            dir: Some(dir.clone()),
            bin,
            as_postgres,
        };
        let data = dir.join("data");
        ok(
            server.run("initdb", &["-D", &s(&data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]),
            "initdb",
        );
        let opts =
            format!("-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200", s(&dir));
        ok(
            server
                .run("pg_ctl", &["-D", &s(&data), "-l", &s(&dir.join("log")), "-o", &opts, "-w", "-t", "60", "start"]),
            "pg_ctl start",
        );
        server
    }

    fn run(&self, tool: &str, args: &[&str]) -> std::io::Result<Output> {
        let exe = self.bin.join(tool);
        if self.as_postgres {
            Command::new("runuser").args(["-u", "postgres", "--"]).arg(exe).args(args).output()
        } else {
            Command::new(exe).args(args).output()
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = self.run("pg_ctl", &["-D", &s(&dir.join("data")), "-m", "immediate", "-w", "stop"]);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn ok(out: std::io::Result<Output>, what: &str) {
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("{what} could not run: {e}"),
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// The directory of `initdb` and `pg_ctl`: on PATH, or Debian's versioned directory.
fn bin_dir() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("initdb").is_file() && d.join("pg_ctl").is_file() {
                return Some(d);
            }
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}
