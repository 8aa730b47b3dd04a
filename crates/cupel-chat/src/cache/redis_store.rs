//! [`RedisSessionStore`]: cache-session states in Redis or Valkey (feature
//! `redis`), committed by a server-side compare-and-set script.

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::Value;

use crate::cache::state::SessionState;
use crate::cache::store::{SessionStore, SessionStoreError, versioned};

/// Compare-and-set on one state hash (fields `v`: version, `s`: the state).
///
/// KEYS[1] the hash; ARGV[1] the expected version (`""`: no state),
/// ARGV[2] the new version, ARGV[3] the state, ARGV[4] a lifetime in ms
/// (`""`: none). Returns `{"ok"}` or `{"conflict", current or ""}`.
const COMMIT: &str = r"
local cur = redis.call('HGET', KEYS[1], 'v')
if (cur or '') ~= ARGV[1] then
  return {'conflict', cur or ''}
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
if ARGV[4] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return {'ok'}
";

/// A [`SessionStore`] in Redis or Valkey, reached by every replica.
///
/// * A conversation's state is one hash, `<prefix><key>` (default prefix
///   `cupel:session:`), with its version and the state's JSON.
/// * A commit is one server-side script: the version is compared and the
///   state written atomically, so of two replicas committing the same turn
///   exactly one succeeds.
/// * States expire after [`with_ttl`](Self::with_ttl) without a commit (by
///   default they never do).
/// * A connection or server failure is [`SessionStoreError::Unavailable`]
///   (fail closed: nothing is committed, the window is not to be sent as a
///   committed turn); the connection is dropped and the next call
///   reconnects. Connect and I/O timeouts default to 2 seconds.
///
/// One store holds one connection behind a lock; give each process its own.
pub struct RedisSessionStore {
    client: redis::Client,
    conn: Mutex<Option<redis::Connection>>,
    script: redis::Script,
    prefix: String,
    ttl: Option<Duration>,
    timeout: Duration,
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field(
                "server",
                &self.client.get_connection_info().addr().to_string(),
            )
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisSessionStore {
    /// A store on the server at `url` (`redis://host:port/db`). Nothing is
    /// sent until the first operation.
    ///
    /// # Errors
    /// [`SessionStoreError::Unavailable`] when `url` is not a Redis URL.
    pub fn open(url: &str) -> Result<Self, SessionStoreError> {
        let client = redis::Client::open(url).map_err(|e| SessionStoreError::Unavailable {
            operation: "open",
            key: String::new(),
            message: e.to_string(),
        })?;
        Ok(Self {
            client,
            conn: Mutex::new(None),
            script: redis::Script::new(COMMIT),
            prefix: "cupel:session:".to_string(),
            ttl: None,
            timeout: Duration::from_secs(2),
        })
    }

    /// The same store with another key prefix.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The same store with states that expire `ttl` after their last commit.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The same store with another connect and I/O timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn connection(
        &self,
        operation: &'static str,
        key: &str,
    ) -> Result<MutexGuard<'_, Option<redis::Connection>>, SessionStoreError> {
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            let fail = |e: redis::RedisError| unavailable(operation, key, &e);
            let conn = self
                .client
                .get_connection_with_timeout(self.timeout)
                .map_err(fail)?;
            conn.set_read_timeout(Some(self.timeout)).map_err(fail)?;
            conn.set_write_timeout(Some(self.timeout)).map_err(fail)?;
            *guard = Some(conn);
        }
        Ok(guard)
    }

    /// Runs `f` on the connection; a failure drops it (the next call reconnects).
    fn with_conn<T>(
        &self,
        operation: &'static str,
        key: &str,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, SessionStoreError> {
        let mut guard = self.connection(operation, key)?;
        let Some(conn) = guard.as_mut() else {
            return Err(SessionStoreError::Unavailable {
                operation,
                key: key.to_string(),
                message: "no connection".to_string(),
            });
        };
        f(conn).map_err(|e| {
            *guard = None;
            unavailable(operation, key, &e)
        })
    }
}

fn unavailable(operation: &'static str, key: &str, e: &redis::RedisError) -> SessionStoreError {
    SessionStoreError::Unavailable {
        operation,
        key: key.to_string(),
        message: e.to_string(),
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

impl SessionStore for RedisSessionStore {
    fn load(&self, key: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let k = self.key(key);
        let stored: Option<String> = self.with_conn("load", key, |c| {
            redis::cmd("HGET").arg(&k).arg("s").query(c)
        })?;
        stored
            .map(|text| SessionState::parse(key, &text))
            .transpose()
    }

    fn commit(
        &self,
        key: &str,
        expected: Option<u64>,
        state: &SessionState,
    ) -> Result<u64, SessionStoreError> {
        let next = expected.unwrap_or(0).saturating_add(1);
        let json = versioned(state, next);
        let k = self.key(key);
        let ttl = self
            .ttl
            .map(|t| t.as_millis().max(1).to_string())
            .unwrap_or_default();
        let expected_arg = expected.map(|v| v.to_string()).unwrap_or_default();
        let reply: Vec<Value> = self.with_conn("commit", key, |c| {
            self.script
                .key(&k)
                .arg(&expected_arg)
                .arg(next)
                .arg(&json)
                .arg(&ttl)
                .invoke(c)
        })?;
        match reply.first().and_then(text).as_deref() {
            Some("ok") => Ok(next),
            Some("conflict") => {
                let current = reply.get(1).and_then(text).unwrap_or_default();
                Err(SessionStoreError::Conflict {
                    key: key.to_string(),
                    expected,
                    current: current.parse().ok(),
                })
            }
            _ => Err(SessionStoreError::Unavailable {
                operation: "commit",
                key: key.to_string(),
                message: format!("unexpected reply {reply:?}"),
            }),
        }
    }

    fn remove(&self, key: &str) -> Result<(), SessionStoreError> {
        let k = self.key(key);
        self.with_conn("remove", key, |c| redis::cmd("DEL").arg(&k).exec(c))
    }
}
