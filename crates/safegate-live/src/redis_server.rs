//! A private `redis-server` on a free loopback port, for `safegate live` without `--redis`
//! and for the tests: started with no persistence (or with an append-only file synced on
//! every write, for the restart test), stopped when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::LiveError;

/// How long a fresh `redis-server` may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A `redis-server` child process on 127.0.0.1.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    persistent: bool,
    password: Option<String>,
    binary: PathBuf,
}

/// Where `redis-server` is: `$SAFEGATE_REDIS_SERVER`, else the first on `PATH`.
pub fn find_redis_server() -> Result<PathBuf, LiveError> {
    if let Some(p) = std::env::var_os("SAFEGATE_REDIS_SERVER") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(LiveError::RedisMissing) };
    }
    let path = std::env::var_os("PATH").ok_or(LiveError::RedisMissing)?;
    std::env::split_paths(&path).map(|d| d.join("redis-server")).find(|p| p.is_file()).ok_or(LiveError::RedisMissing)
}

/// A free TCP port on 127.0.0.1 (bound and released; a race with another process is
/// possible but harmless: the start then fails with a clear message).
pub fn free_port() -> Result<u16, LiveError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|source| LiveError::Io { what: "finding a free loopback port".into(), error: source })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|source| LiveError::Io { what: "finding a free loopback port".into(), error: source })
}

impl RedisServer {
    /// Start a server on a free port. `persistent`: an append-only file fsynced on every
    /// write (`appendfsync always`), so a restart loses nothing that was acknowledged.
    pub fn start(persistent: bool) -> Result<Self, LiveError> {
        Self::start_with(persistent, None)
    }

    /// [`RedisServer::start`], requiring `password` (`requirepass`) when given.
    pub fn start_with(persistent: bool, password: Option<&str>) -> Result<Self, LiveError> {
        let binary = find_redis_server()?;
        let dir = std::env::temp_dir().join(format!("safegate-redis-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir)
            .map_err(|source| LiveError::Io { what: format!("creating {}", dir.display()), error: source })?;
        let password = password.map(str::to_string);
        let mut s = Self { child: None, port: free_port()?, dir, persistent, password, binary };
        s.spawn()?;
        Ok(s)
    }

    fn spawn(&mut self) -> Result<(), LiveError> {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--protected-mode", "yes"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log"]);
        if let Some(p) = &self.password {
            cmd.arg("--requirepass").arg(p);
        }
        if self.persistent {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let child = cmd.spawn().map_err(|source| LiveError::Io {
            what: format!("starting {} on port {}", self.binary.display(), self.port),
            error: source,
        })?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), LiveError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(LiveError::Io {
                        what: format!(
                            "redis-server on port {} exited at start ({status}); its log: {}",
                            self.port,
                            self.dir.join("redis.log").display()
                        ),
                        error: std::io::Error::other("exited"),
                    });
                }
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(LiveError::Io {
                    what: format!("redis-server on port {} did not accept connections within 10 s", self.port),
                    error: std::io::Error::from(std::io::ErrorKind::TimedOut),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (its log and append-only file).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stop the server: SIGTERM (a clean shutdown that flushes the append-only file),
    /// then SIGKILL if it has not exited within 5 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Start a stopped server again on the same port and directory (after
    /// [`RedisServer::stop`]: an outage of any length). A running one is left alone.
    pub fn start_again(&mut self) -> Result<(), LiveError> {
        if self.child.is_some() {
            return Ok(());
        }
        self.spawn()
    }

    /// Whether the server process is running (started and not stopped).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stop the server and start it again on the same port and directory (with
    /// persistence, the data survives).
    pub fn restart(&mut self) -> Result<(), LiveError> {
        self.stop();
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t ^ (N.fetch_add(1, Ordering::Relaxed) << 48)
}
