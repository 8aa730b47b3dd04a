//! [`SessionStore`]: where cache-session states live between turns — in
//! memory, in files, or in Redis — committed with compare-and-set so that
//! two replicas serving one conversation never both commit a turn.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::cache::state::SessionState;

/// Why a session store could not load or commit a state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// Another writer committed first: the state is no longer at the
    /// version this turn was planned from. Load it again and re-plan.
    #[error(
        "session `{key}` changed while this turn was planned: expected version {}, found {}; load it again and re-plan the turn",
        version_text(*expected),
        version_text(*current)
    )]
    Conflict {
        /// The conversation.
        key: String,
        /// The version the turn was planned from (`None`: no state).
        expected: Option<u64>,
        /// The version stored now (`None`: no state).
        current: Option<u64>,
    },
    /// The stored state is empty (a write was interrupted, or the file was
    /// created empty). Never taken as a first turn.
    #[error(
        "session state `{key}` is empty; start the conversation afresh with --reset-state (or `SessionStore::remove`)"
    )]
    Empty {
        /// The conversation (a file path for the file store).
        key: String,
    },
    /// The stored state does not read as one.
    #[error(
        "session state `{key}` is unreadable: {message}; start the conversation afresh with --reset-state (or `SessionStore::remove`)"
    )]
    Corrupt {
        /// The conversation.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// Written by a newer Cupel, in a format this version cannot read.
    #[error(
        "session state `{key}` has format {format}, newer than this version reads ({supported}); upgrade Cupel, or start afresh with --reset-state"
    )]
    Newer {
        /// The conversation.
        key: String,
        /// Its format.
        format: u64,
        /// The newest this version reads.
        supported: u32,
    },
    /// A key the store cannot name (the file store takes `[A-Za-z0-9._-]`,
    /// 1 to 200 characters, not starting with a dot).
    #[error("session key `{key}` is not allowed: {reason}")]
    InvalidKey {
        /// The key.
        key: String,
        /// Why.
        reason: &'static str,
    },
    /// The store could not be reached, read or written (I/O, permissions,
    /// Redis down). Nothing was committed; retry when it is back.
    #[error("session store unavailable ({operation} `{key}`): {message}")]
    Unavailable {
        /// What was being done (`load`, `commit`, `remove`).
        operation: &'static str,
        /// The conversation.
        key: String,
        /// The underlying error.
        message: String,
    },
}

fn version_text(v: Option<u64>) -> String {
    v.map_or_else(|| "none (no state)".to_string(), |v| v.to_string())
}

/// A place where cache-session states live, shared by every process that
/// serves the conversations.
///
/// Each state carries a version: [`commit`](Self::commit) writes only if the
/// stored version is still the one the turn was planned from, and returns
/// the new one. Two replicas that plan the same turn from version 4: one
/// commits version 5, the other gets [`SessionStoreError::Conflict`] with
/// `current: Some(5)`, loads again and re-plans.
pub trait SessionStore: Send + Sync {
    /// The state of conversation `key`, or `None` when there is none.
    ///
    /// # Errors
    /// [`SessionStoreError`] (an empty or corrupt state is an error, never `None`).
    fn load(&self, key: &str) -> Result<Option<SessionState>, SessionStoreError>;

    /// Stores `state` as the next version of `key` if the stored version is
    /// `expected` (`None`: only if there is no state). Returns the new version.
    ///
    /// # Errors
    /// [`SessionStoreError::Conflict`] when another writer committed first;
    /// [`SessionStoreError::Unavailable`].
    fn commit(
        &self,
        key: &str,
        expected: Option<u64>,
        state: &SessionState,
    ) -> Result<u64, SessionStoreError>;

    /// Forgets `key`'s state (the next turn starts afresh).
    ///
    /// # Errors
    /// [`SessionStoreError::Unavailable`].
    fn remove(&self, key: &str) -> Result<(), SessionStoreError>;
}

/// The state `state` as version `version`, as stored.
pub(crate) fn versioned(state: &SessionState, version: u64) -> String {
    let mut s = state.clone();
    s.version = version;
    s.to_json()
}

/// A [`SessionStore`] in this process's memory (tests, one-process servers).
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    /// Per key: the version and the state as stored.
    states: Mutex<BTreeMap<String, (u64, String)>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SessionStore for MemorySessionStore {
    fn load(&self, key: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let text = {
            let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
            states.get(key).map(|(_, text)| text.clone())
        };
        text.map(|text| SessionState::parse(key, &text)).transpose()
    }

    fn commit(
        &self,
        key: &str,
        expected: Option<u64>,
        state: &SessionState,
    ) -> Result<u64, SessionStoreError> {
        let next = expected.unwrap_or(0).saturating_add(1);
        let text = versioned(state, next);
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let current = states.get(key).map(|(v, _)| *v);
        if current != expected {
            return Err(SessionStoreError::Conflict {
                key: key.to_string(),
                expected,
                current,
            });
        }
        states.insert(key.to_string(), (next, text));
        Ok(next)
    }

    fn remove(&self, key: &str) -> Result<(), SessionStoreError> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.remove(key);
        Ok(())
    }
}

/// Where a [`FileSessionStore`] keeps its states.
#[derive(Debug, Clone)]
enum Layout {
    /// One file per key: `<dir>/<key>.json`.
    Dir(PathBuf),
    /// One file whatever the key (`cupel chat --state FILE`).
    File(PathBuf),
}

/// A [`SessionStore`] in files: what `cupel chat --state FILE` uses.
///
/// * **Atomic.** A commit writes a temporary file in the same directory,
///   syncs it, renames it over the state and syncs the directory: a reader
///   sees the old state or the new one, never a torn or empty file, and a
///   crash leaves one of the two.
/// * **Compare-and-set.** A commit holds an exclusive advisory lock on
///   `<state>.lock` (left in place; removing it would race) while it
///   reads the stored version, compares it and renames: processes on one
///   machine (or on a file system with working `flock`) never lose a turn.
///   Loading takes no lock.
#[derive(Debug, Clone)]
pub struct FileSessionStore {
    layout: Layout,
}

/// `[A-Za-z0-9._-]`, 1 to 200 characters, not starting with a dot.
fn check_key(key: &str) -> Result<(), SessionStoreError> {
    let reason = if key.is_empty() || key.len() > 200 {
        Some("it must be 1 to 200 characters long")
    } else if key.starts_with('.') {
        Some("it must not start with a dot")
    } else if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Some("only letters, digits, `.`, `_` and `-` name a file")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(SessionStoreError::InvalidKey {
            key: key.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

impl FileSessionStore {
    /// One file per conversation, `<dir>/<key>.json` (the directory must exist).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        FileSessionStore {
            layout: Layout::Dir(dir.into()),
        }
    }

    /// One file for every key: a single conversation's state, as
    /// `cupel chat --state FILE` keeps it.
    pub fn single(path: impl Into<PathBuf>) -> Self {
        FileSessionStore {
            layout: Layout::File(path.into()),
        }
    }

    /// The file that holds `key`'s state.
    ///
    /// # Errors
    /// [`SessionStoreError::InvalidKey`] (directory layout only).
    pub fn path(&self, key: &str) -> Result<PathBuf, SessionStoreError> {
        match &self.layout {
            Layout::Dir(dir) => {
                check_key(key)?;
                Ok(dir.join(format!("{key}.json")))
            }
            Layout::File(path) => Ok(path.clone()),
        }
    }

    fn name(&self, key: &str) -> String {
        match &self.layout {
            Layout::Dir(_) => key.to_string(),
            Layout::File(path) => path.display().to_string(),
        }
    }

    /// Reads the state at `path` (`None`: no file).
    fn read(&self, key: &str, path: &Path) -> Result<Option<SessionState>, SessionStoreError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let name = self.name(key);
                let text = String::from_utf8(bytes).map_err(|_| SessionStoreError::Corrupt {
                    key: name.clone(),
                    message: "not UTF-8 text".to_string(),
                })?;
                SessionState::parse(&name, &text).map(Some)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.unavailable("load", key, &e)),
        }
    }

    fn unavailable(
        &self,
        operation: &'static str,
        key: &str,
        e: &std::io::Error,
    ) -> SessionStoreError {
        let hint = match e.kind() {
            ErrorKind::PermissionDenied => {
                "; make the file and its directory writable, or choose another state path"
            }
            ErrorKind::NotFound => "; the state's directory must exist",
            _ => "",
        };
        SessionStoreError::Unavailable {
            operation,
            key: self.name(key),
            message: format!("{e}{hint}"),
        }
    }

    /// Locks `<path>.lock` exclusively (blocking); unlocked when dropped.
    fn lock(&self, key: &str, path: &Path) -> Result<File, SessionStoreError> {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(lock_path))
            .map_err(|e| self.unavailable("commit", key, &e))?;
        fs4::fs_std::FileExt::lock_exclusive(&file)
            .map_err(|e| self.unavailable("commit", key, &e))?;
        Ok(file)
    }

    /// Writes `text` to `path` atomically: temporary file, sync, rename,
    /// directory sync.
    fn replace(&self, key: &str, path: &Path, text: &str) -> Result<(), SessionStoreError> {
        let fail = |e: std::io::Error| self.unavailable("commit", key, &e);
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".cupel-state-")
            .tempfile_in(&dir)
            .map_err(fail)?;
        tmp.write_all(text.as_bytes()).map_err(fail)?;
        tmp.as_file().sync_all().map_err(fail)?;
        tmp.persist(path).map_err(|e| fail(e.error))?;
        // The rename itself is durable once the directory is synced (a
        // directory that cannot be opened for it, on some platforms, is
        // not an error: the rename has happened).
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl SessionStore for FileSessionStore {
    fn load(&self, key: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let path = self.path(key)?;
        self.read(key, &path)
    }

    fn commit(
        &self,
        key: &str,
        expected: Option<u64>,
        state: &SessionState,
    ) -> Result<u64, SessionStoreError> {
        let path = self.path(key)?;
        let _lock = self.lock(key, &path)?;
        let current = self.read(key, &path)?.map(|s| s.version);
        if current != expected {
            return Err(SessionStoreError::Conflict {
                key: self.name(key),
                expected,
                current,
            });
        }
        let next = current.unwrap_or(0).saturating_add(1);
        self.replace(key, &path, &versioned(state, next))?;
        Ok(next)
    }

    fn remove(&self, key: &str) -> Result<(), SessionStoreError> {
        let path = self.path(key)?;
        let _lock = self.lock(key, &path)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.unavailable("remove", key, &e)),
        }
    }
}
