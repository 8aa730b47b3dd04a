//! Session stores (issue 54): one conformance suite run against the memory,
//! file and Redis stores; then what only real processes and a real server
//! show — replicas serving interleaved turns of many conversations, and a
//! Redis outage mid-run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[cfg(feature = "redis")]
#[allow(dead_code)]
#[path = "../../cupel-run/tests/common/redis_server.rs"]
mod redis_server;

use cupel_chat::{
    CacheProfile, ChatError, FileSessionStore, MemorySessionStore, Message, Planned, Replan,
    SessionPlan, SessionState, SessionStore, SessionStoreError, Trim, serve_loaded, serve_turn,
};

/// Conversation `conv` as its `k`-th request sees it (k >= 1): the system
/// prompt, then k user messages with the k - 1 answers between them. Each
/// user message is about 40 tokens, so a 300-token budget cuts.
fn transcript(conv: usize, k: usize) -> Vec<Message> {
    let mut m = vec![Message::system("Answer in one line.")];
    for j in 0..k {
        m.push(Message::user(format!(
            "conversation {conv} question {j}: {}",
            "please consider this carefully ".repeat(7)
        )));
        if j + 1 < k {
            m.push(Message::assistant(format!(
                "answer {j} to conversation {conv}"
            )));
        }
    }
    m
}

fn plan() -> SessionPlan {
    SessionPlan::new(Trim::openai(300), CacheProfile::openai())
}

/// What a turn produced, as one comparable line.
fn digest(t: &cupel_chat::StoredTurn<'_>) -> String {
    format!(
        "turn {} positions {:?} breakpoints {:?} read {} written {}",
        t.turn.turn, t.turn.positions, t.turn.breakpoints, t.turn.usage.read, t.turn.usage.written
    )
}

/// Turns 1..=turns of `conv` in one process with a memory store: the
/// reference every store and every interleaving must reproduce.
fn reference(conv: usize, turns: usize) -> Vec<String> {
    let store = MemorySessionStore::new();
    (1..=turns)
        .map(|k| {
            let t = transcript(conv, k);
            digest(&serve_turn(&store, "c", &plan(), &t).unwrap())
        })
        .collect()
}

fn state(turn: usize) -> SessionState {
    let planned = Planned::of(&Trim::openai(300), None).unwrap();
    let t = transcript(0, turn);
    SessionState::of_window(&planned, turn, &t, cupel_chat::Format::OpenAi, t.clone())
}

fn conflict(expected: Option<u64>, current: Option<u64>) -> SessionStoreError {
    SessionStoreError::Conflict {
        key: "k".to_string(),
        expected,
        current,
    }
}

/// The behaviour every store shares.
fn conformance(store: &dyn SessionStore) {
    store.remove("k").unwrap();
    assert_eq!(store.load("k").unwrap(), None);
    // Version 1 after the first commit, one more after each.
    assert_eq!(store.commit("k", None, &state(1)).unwrap(), 1);
    // A second "first" commit loses: the state exists at version 1.
    assert_eq!(
        store.commit("k", None, &state(1)),
        Err(conflict(None, Some(1)))
    );
    assert_eq!(store.commit("k", Some(1), &state(2)).unwrap(), 2);
    // Two replicas planned from version 1: the second to commit loses and
    // is told the current version.
    assert_eq!(
        store.commit("k", Some(1), &state(2)),
        Err(conflict(Some(1), Some(2)))
    );
    let loaded = store.load("k").unwrap().unwrap();
    assert_eq!(loaded.version, 2);
    let mut expected = state(2);
    expected.version = 2;
    assert_eq!(loaded, expected);
    // Unknown fields survive a round trip (a newer minor release's, or an
    // extension's such as a running summary).
    let mut with_extra = loaded.clone();
    with_extra
        .extra
        .insert("summary".to_string(), serde_json::json!("so far: ..."));
    assert_eq!(store.commit("k", Some(2), &with_extra).unwrap(), 3);
    assert_eq!(
        store.load("k").unwrap().unwrap().extra["summary"],
        "so far: ..."
    );
    store.remove("k").unwrap();
    assert_eq!(store.load("k").unwrap(), None);
    turns_through_the_store(store);
    a_foreign_state_is_replanned(store);
    a_duplicate_request_loses_the_race(store);
}

/// Three turns through `serve_turn` equal the one-process reference.
fn turns_through_the_store(store: &dyn SessionStore) {
    store.remove("conv-7").unwrap();
    let expected = reference(7, 3);
    for (k, want) in (1..=3).zip(&expected) {
        let t = transcript(7, k);
        let got = serve_turn(store, "conv-7", &plan(), &t).unwrap();
        assert_eq!(got.version, k as u64);
        assert_eq!(&digest(&got), want);
        assert_eq!(got.replanned, None);
    }
}

/// A state planned for OpenAI, resumed by an Anthropic session: planned
/// afresh (nothing expected from the cache), and said why.
fn a_foreign_state_is_replanned(store: &dyn SessionStore) {
    store.remove("foreign").unwrap();
    let t = transcript(1, 2);
    serve_turn(store, "foreign", &plan(), &t).unwrap();
    let anthropic = SessionPlan::new(Trim::anthropic(300), CacheProfile::anthropic());
    let got = serve_turn(store, "foreign", &anthropic, &t).unwrap();
    assert_eq!(
        got.replanned,
        Some(Replan::Provider {
            was: "openai".to_string(),
            now: "anthropic".to_string()
        })
    );
    assert_eq!((got.turn.kept_prefix, got.turn.usage.read), (0, 0));
    assert_eq!(
        store.load("foreign").unwrap().unwrap().provider,
        "anthropic"
    );
}

/// Two replicas load version 1 and serve the same request; the second
/// commit is refused with the current version, so the turn is committed once.
fn a_duplicate_request_loses_the_race(store: &dyn SessionStore) {
    store.remove("dup").unwrap();
    let t1 = transcript(2, 1);
    serve_turn(store, "dup", &plan(), &t1).unwrap();
    let t2 = transcript(2, 2);
    let (a, b) = (store.load("dup").unwrap(), store.load("dup").unwrap());
    serve_loaded(store, "dup", &plan(), a, &t2).unwrap();
    let lost = serve_loaded(store, "dup", &plan(), b, &t2).unwrap_err();
    assert_eq!(
        lost,
        ChatError::Store(SessionStoreError::Conflict {
            key: "dup".to_string(),
            expected: Some(1),
            current: Some(2)
        })
    );
}

#[test]
fn memory_store_conforms() {
    conformance(&MemorySessionStore::new());
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn file_store_conforms() {
    conformance(&FileSessionStore::in_dir(temp_dir("file-store")));
}

#[test]
fn file_store_refuses_keys_that_are_not_file_names() {
    let store = FileSessionStore::in_dir(temp_dir("file-keys"));
    for key in ["", "../x", ".hidden", "a/b"] {
        assert!(
            matches!(store.load(key), Err(SessionStoreError::InvalidKey { .. })),
            "{key}"
        );
    }
}

#[test]
fn threads_racing_on_one_file_store_commit_every_turn_once() {
    // 8 threads each commit 25 increments of one state with
    // compare-and-set, retrying a lost race: 8 x 25 = 200 commits, so the
    // final version is exactly 200 and the turn field too.
    let store = std::sync::Arc::new(FileSessionStore::in_dir(temp_dir("file-race")));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let store = std::sync::Arc::clone(&store);
            std::thread::spawn(move || {
                let mut done = 0;
                while done < 25 {
                    let cur = store.load("race").unwrap();
                    let (version, turn) = cur
                        .as_ref()
                        .map_or((None, 0), |s| (Some(s.version), s.turn));
                    let mut next = state(1);
                    next.turn = turn + 1;
                    match store.commit("race", version, &next) {
                        Ok(_) => done += 1,
                        Err(SessionStoreError::Conflict { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let last = store.load("race").unwrap().unwrap();
    assert_eq!((last.version, last.turn), (200, 200));
}

#[cfg(feature = "redis")]
mod redis_store {
    use std::collections::BTreeMap;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use super::redis_server::RedisServer;
    use super::*;
    use cupel_chat::RedisSessionStore;

    #[test]
    fn redis_store_conforms() {
        let server = RedisServer::start();
        conformance(&RedisSessionStore::open(&server.url()).unwrap());
    }

    const WORKER_ENV: &str = "CUPEL_SESSION_WORKER";
    const CONVERSATIONS: usize = 16;
    const TURNS: usize = 6;

    fn worker(url: &str, name: usize) -> Command {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "redis_store::worker_entry",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(WORKER_ENV, format!("{url} {name}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        cmd
    }

    /// The worker side, run only in a child process started by
    /// `replicas_serve_interleaved_turns_once`: takes requests
    /// (`conv:turn`) off the shared queue `jobs` until every turn of every
    /// conversation is committed. A request whose turn the state already
    /// holds is a duplicate (each even turn is queued twice, as a load
    /// balancer's retry would deliver it) and is skipped; a duplicate that
    /// races its original loses the compare-and-set. Each committed turn is
    /// logged to `log:<conv>`, and the next turn of the conversation queued.
    #[test]
    #[ignore = "a worker process: started by the multi-replica test, not on its own"]
    fn worker_entry() {
        let spec = std::env::var(WORKER_ENV).expect("run by the multi-replica test");
        let (url, name) = spec.split_once(' ').unwrap();
        let store = RedisSessionStore::open(url).unwrap();
        let mut queue = redis::Client::open(url).unwrap().get_connection().unwrap();
        let (mut served, mut duplicates, mut conflicts) = (0, 0, 0);
        loop {
            let job: Option<String> = redis::cmd("LPOP").arg("jobs").query(&mut queue).unwrap();
            let Some(job) = job else {
                let done: usize = redis::cmd("GET")
                    .arg("done")
                    .query::<Option<usize>>(&mut queue)
                    .unwrap()
                    .unwrap_or(0);
                if done == CONVERSATIONS * TURNS {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            let (conv, k) = job.split_once(':').unwrap();
            let (conv, k): (usize, usize) = (conv.parse().unwrap(), k.parse().unwrap());
            let key = format!("conv-{conv}");
            let stored = store.load(&key).unwrap();
            if stored.as_ref().is_some_and(|s| s.turn >= k) {
                duplicates += 1;
                continue;
            }
            let t = transcript(conv, k);
            match serve_loaded(&store, &key, &plan(), stored, &t) {
                Ok(turn) => {
                    served += 1;
                    let line = format!("{} v{} by {name}", digest(&turn), turn.version);
                    let mut pipe = redis::pipe();
                    pipe.cmd("RPUSH").arg(format!("log:{conv}")).arg(line);
                    if k < TURNS {
                        for _ in 0..if (k + 1) % 2 == 0 { 2 } else { 1 } {
                            pipe.cmd("RPUSH")
                                .arg("jobs")
                                .arg(format!("{conv}:{}", k + 1));
                        }
                    }
                    pipe.cmd("INCR").arg("done");
                    pipe.exec(&mut queue).unwrap();
                }
                Err(ChatError::Store(SessionStoreError::Conflict { .. })) => conflicts += 1,
                Err(e) => panic!("worker {name}: {e}"),
            }
        }
        println!("WORKER {name} served {served} duplicates {duplicates} conflicts {conflicts}");
    }

    /// 4 worker processes serve 16 conversations x 6 turns through one
    /// Redis, every even turn delivered twice: every turn is committed
    /// exactly once (versions 1..=6 in order), and every window equals the
    /// one a single process makes for the same turn sequence.
    #[test]
    fn replicas_serve_interleaved_turns_once() {
        let server = RedisServer::start();
        let url = server.url();
        let mut c = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        for conv in 0..CONVERSATIONS {
            redis::cmd("RPUSH")
                .arg("jobs")
                .arg(format!("{conv}:1"))
                .exec(&mut c)
                .unwrap();
        }
        let children: Vec<_> = (0..4).map(|i| worker(&url, i).spawn().unwrap()).collect();
        let mut served = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let line = text.lines().find(|l| l.contains("WORKER")).unwrap();
            let line = &line[line.find("WORKER").unwrap()..];
            println!("{line}");
            served += line.split(' ').nth(3).unwrap().parse::<usize>().unwrap();
        }
        // 16 x 6 = 96 turns served, not one more.
        assert_eq!(served, CONVERSATIONS * TURNS);
        let store = RedisSessionStore::open(&url).unwrap();
        let mut by_worker = BTreeMap::new();
        for conv in 0..CONVERSATIONS {
            let log: Vec<String> = redis::cmd("LRANGE")
                .arg(format!("log:{conv}"))
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap();
            let want = reference(conv, TURNS);
            assert_eq!(log.len(), TURNS, "conversation {conv}: {log:?}");
            for (k, (got, want)) in log.iter().zip(&want).enumerate() {
                let (digest, who) = got.split_once(" v").unwrap();
                assert_eq!(digest, want, "conversation {conv} turn {}", k + 1);
                let (version, worker) = who.split_once(" by ").unwrap();
                assert_eq!(version, (k + 1).to_string());
                *by_worker.entry(worker.to_string()).or_insert(0) += 1;
            }
            let last = store.load(&format!("conv-{conv}")).unwrap().unwrap();
            assert_eq!((last.version, last.turn), (TURNS as u64, TURNS));
        }
        // The turns were spread over the replicas (each served some).
        assert!(by_worker.len() > 1, "{by_worker:?}");
    }

    /// A Redis outage mid-conversation: the turn fails closed with a typed
    /// error (nothing committed), and the same request succeeds once the
    /// server is back, with the window a single uninterrupted process makes.
    #[test]
    fn a_redis_outage_fails_closed_and_a_retry_succeeds_after() {
        let mut server = RedisServer::start_persistent();
        let store = RedisSessionStore::open(&server.url())
            .unwrap()
            .with_timeout(Duration::from_millis(500));
        let want = reference(3, 3);
        for k in 1..=2 {
            let t = transcript(3, k);
            assert_eq!(
                digest(&serve_turn(&store, "c3", &plan(), &t).unwrap()),
                want[k - 1]
            );
        }
        server.stop();
        let t = transcript(3, 3);
        let err = serve_turn(&store, "c3", &plan(), &t).unwrap_err();
        assert!(
            matches!(
                err,
                ChatError::Store(SessionStoreError::Unavailable {
                    operation: "load",
                    ..
                })
            ),
            "{err:?}"
        );
        server.start_again();
        let got = serve_turn(&store, "c3", &plan(), &t).unwrap();
        assert_eq!((got.version, digest(&got)), (3, want[2].clone()));
    }
}
