//! A real `redis-server` on a free loopback port, started by the test that
//! needs it and stopped when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub(crate) struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    persistent: bool,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

fn spawn(port: u16, dir: &Path, persistent: bool) -> Child {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(dir)
        .args(["--save", ""]);
    if persistent {
        cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
    } else {
        cmd.args(["--appendonly", "no"]);
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    match cmd.spawn() {
        Ok(child) => child,
        Err(e) => panic!(
            "cannot start `redis-server` ({e}): the shared run-budget tests need a real Redis \
             server on PATH. Install it (Debian/Ubuntu: `apt-get install redis-server`; \
             `.ci/run` does this) and run the tests again."
        ),
    }
}

/// Waits until the server on `port` answers, and checks that it is the one
/// started in `dir` (not another test's that happened to take the port).
fn wait_ready(port: u16, dir: &Path) {
    let url = format!("redis://127.0.0.1:{port}/");
    let start = Instant::now();
    loop {
        let answer = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| {
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("dir")
                    .query::<Vec<String>>(&mut c)
            });
        if let Ok(reply) = answer {
            let ours = std::fs::canonicalize(dir).ok();
            let theirs = reply.get(1).and_then(|d| std::fs::canonicalize(d).ok());
            assert_eq!(theirs, ours, "port {port} is taken by another redis-server");
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "redis-server on port {port} did not answer PING within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl RedisServer {
    /// A server without persistence.
    pub(crate) fn start() -> Self {
        Self::start_with(false)
    }

    /// A server with an append-only file synced on every write.
    pub(crate) fn start_persistent() -> Self {
        Self::start_with(true)
    }

    fn start_with(persistent: bool) -> Self {
        // One start at a time in this process: a port found free is taken
        // by its server before the next test looks for one.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("cupel-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let child = spawn(port, &dir, persistent);
        wait_ready(port, &dir);
        Self {
            child: Some(child),
            port,
            dir,
            persistent,
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server the way an operator would (`SHUTDOWN`, which
    /// flushes the append-only file), then starts it again on the same port
    /// and directory.
    pub(crate) fn restart(&mut self) {
        if let Ok(mut c) = redis::Client::open(self.url().as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
        {
            let _ = redis::cmd("SHUTDOWN").exec(&mut c);
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        self.child = Some(spawn(self.port, &self.dir, self.persistent));
        wait_ready(self.port, &self.dir);
    }
}

// Used by cupel-chat's session-store tests, which include this file too.
#[allow(dead_code)]
impl RedisServer {
    /// Stops the server at once (as a crash or an outage would), keeping
    /// its port and directory for [`start_again`](Self::start_again).
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server stopped by [`stop`](Self::stop) on the same port.
    pub(crate) fn start_again(&mut self) {
        self.stop();
        self.child = Some(spawn(self.port, &self.dir, self.persistent));
        wait_ready(self.port, &self.dir);
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
