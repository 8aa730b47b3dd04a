//! Turns per second through each session store, at 1 and 8 workers.
//!
//! ```text
//! cargo run --release -p cupel-rs-chat --features redis --example session_throughput
//! ```
//!
//! Each worker is a thread with its own store handle (its own Redis
//! connection) serving its own conversations: 6 turns each of 20-message
//! conversations, every turn a full `serve_turn` (load, resume, plan the
//! window, commit with compare-and-set). The Redis server is started by the
//! example on a free loopback port (`redis-server` must be on PATH; without
//! it the Redis row is skipped). Pass `--turns N` to change the turns per
//! worker (default 600).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cupel_chat::{
    CacheProfile, FileSessionStore, MemorySessionStore, Message, RedisSessionStore, SessionPlan,
    SessionStore, Trim, serve_turn,
};

const TURNS_PER_CONVERSATION: usize = 6;

/// Conversation `conv` at its `k`-th request: a system prompt and k
/// exchanges of about 60 tokens each, cut by a 1,500-token budget.
fn transcript(conv: usize, k: usize) -> Vec<Message> {
    let mut m = vec![Message::system("You are a careful assistant.")];
    for j in 0..k * 3 {
        m.push(Message::user(format!(
            "conversation {conv}, question {j}: {}",
            "what would you advise here ".repeat(8)
        )));
        if j + 1 < k * 3 {
            m.push(Message::assistant(format!("answer {j}: it depends.")));
        }
    }
    m
}

/// Runs `workers` threads of `turns` turns each; turns per second.
fn measure(store: &Arc<dyn SessionStore>, workers: usize, turns: usize, tag: &str) -> f64 {
    let plan = SessionPlan::new(Trim::openai(1_500), CacheProfile::openai());
    // The counter's encoding loads once per process; load it before timing.
    let _ = serve_turn(store.as_ref(), "warm-up", &plan, &transcript(0, 1));
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let store = Arc::clone(store);
            let plan = plan.clone();
            let tag = tag.to_string();
            std::thread::spawn(move || {
                let conversations = turns.div_ceil(TURNS_PER_CONVERSATION);
                let mut done = 0;
                for c in 0..conversations {
                    let key = format!("{tag}-w{w}-c{c}");
                    for k in 1..=TURNS_PER_CONVERSATION {
                        if done == turns {
                            break;
                        }
                        let t = transcript(c, k);
                        if let Err(e) = serve_turn(store.as_ref(), &key, &plan, &t) {
                            eprintln!("turn failed: {e}");
                            return;
                        }
                        done += 1;
                    }
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    let secs = start.elapsed().as_secs_f64();
    (workers * turns) as f64 / secs
}

/// A `redis-server` on a free loopback port, killed on drop.
struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis() -> Option<Server> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server(child, port);
    let url = format!("redis://127.0.0.1:{port}/");
    for _ in 0..500 {
        let ping = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        if ping.is_ok() {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let turns = args
        .iter()
        .position(|a| a == "--turns")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(600);
    let dir = std::env::temp_dir().join(format!("cupel-throughput-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return;
    }
    let redis = start_redis();
    println!("store   workers  turns/s  ({turns} turns per worker)");
    for workers in [1, 8] {
        let memory: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
        let file: Arc<dyn SessionStore> = Arc::new(FileSessionStore::in_dir(&dir));
        let mut rows = vec![("memory", memory), ("file", file)];
        if let Some(server) = &redis {
            // Each worker thread opens its own connection.
            rows.push(("redis", Arc::new(PerThreadRedis(server.1))));
        }
        for (name, store) in rows {
            let rate = measure(&store, workers, turns, &format!("{name}{workers}"));
            println!("{name:<7} {workers:>7} {rate:>8.0}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Redis store with one connection per thread.
struct PerThreadRedis(u16);

thread_local! {
    static CONN: std::cell::RefCell<Option<RedisSessionStore>> = const { std::cell::RefCell::new(None) };
}

impl PerThreadRedis {
    fn with<T>(
        &self,
        f: impl FnOnce(&RedisSessionStore) -> Result<T, cupel_chat::SessionStoreError>,
    ) -> Result<T, cupel_chat::SessionStoreError> {
        CONN.with(|c| {
            let mut c = c.borrow_mut();
            let store = match c.take() {
                Some(store) => store,
                None => RedisSessionStore::open(&format!("redis://127.0.0.1:{}/", self.0))?,
            };
            let out = f(&store);
            *c = Some(store);
            out
        })
    }
}

impl SessionStore for PerThreadRedis {
    fn load(
        &self,
        key: &str,
    ) -> Result<Option<cupel_chat::SessionState>, cupel_chat::SessionStoreError> {
        self.with(|s| s.load(key))
    }
    fn commit(
        &self,
        key: &str,
        expected: Option<u64>,
        state: &cupel_chat::SessionState,
    ) -> Result<u64, cupel_chat::SessionStoreError> {
        self.with(|s| s.commit(key, expected, state))
    }
    fn remove(&self, key: &str) -> Result<(), cupel_chat::SessionStoreError> {
        self.with(|s| s.remove(key))
    }
}
