//! [`SessionState`]: what a cache session keeps between turns, in a form a
//! [`SessionStore`](crate::SessionStore) can hold, versioned and checked
//! against the session that resumes it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::session::SessionLedger;
use crate::cache::store::SessionStoreError;
use crate::message::{Message, Role};
use crate::transcript::Transcript;
use crate::trim::Trim;
use crate::wire::Format;

/// The state format this version of Cupel writes. Format 0 is the bare
/// window document `cupel chat --state` wrote before the state was
/// versioned; it is migrated on read. A newer format is refused.
pub const SESSION_STATE_FORMAT: u32 = 1;

/// One conversation's cache-session state: the window last sent and what it
/// was planned for.
///
/// Fields this version does not know (written by a newer minor release or
/// by an extension) are kept in [`extra`](Self::extra) and written back
/// unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionState {
    /// The state format ([`SESSION_STATE_FORMAT`] when written by this version).
    pub format: u32,
    /// The store's version of this state: 1 after the first commit, one
    /// more after each. Set by the store on commit; a commit names the
    /// version it planned from (compare-and-set).
    #[serde(default)]
    pub version: u64,
    /// The provider the window was planned for (`openai`, `anthropic`).
    pub provider: String,
    /// The model, when the caller named one.
    #[serde(default)]
    pub model: Option<String>,
    /// The counter that counted it ([`MessageCounter::describe`](crate::MessageCounter::describe):
    /// `openai o200k_base`, ...).
    pub encoding: String,
    /// The turn that made the window (1-based).
    pub turn: usize,
    /// A fingerprint of the conversation's first user message: a state
    /// resumed on another transcript is told apart from an edited one.
    #[serde(default)]
    pub opening: Option<String>,
    /// The window as sent: a transcript document in the provider's format
    /// (JSON text, kept byte for byte).
    pub window: String,
    /// What the session learnt of the transcript behind the window
    /// ([`CacheSession::ledger`](crate::CacheSession::ledger)): resumed
    /// with it, the next turn counts and plans only the recent messages.
    /// Absent in states written before it existed (the whole transcript is
    /// then planned once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<SessionLedger>,
    /// Fields this version does not read, kept as they were.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Why a stored state is not resumed and the window is planned afresh.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replan {
    /// The state was planned for another provider.
    Provider {
        /// The state's provider.
        was: String,
        /// This session's.
        now: String,
    },
    /// The state was planned for another model.
    Model {
        /// The state's model.
        was: String,
        /// This session's.
        now: String,
    },
    /// The state was counted with another encoding or counter.
    Encoding {
        /// The state's counter.
        was: String,
        /// This session's.
        now: String,
    },
    /// The state belongs to another conversation (its first user message differs).
    OtherTranscript,
}

impl fmt::Display for Replan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Replan::Provider { was, now } => write!(
                f,
                "the state was planned for {was}, this request is {now}: nothing of it is in {now}'s cache"
            ),
            Replan::Model { was, now } => write!(
                f,
                "the state was planned for model {was}, this request is for {now}: a provider caches per model"
            ),
            Replan::Encoding { was, now } => write!(
                f,
                "the state was counted with {was}, this session counts with {now}: its token counts do not apply"
            ),
            Replan::OtherTranscript => f.write_str(
                "the state belongs to another conversation (its first user message differs)",
            ),
        }
    }
}

/// FNV-1a, 64 bits: a stable fingerprint (the same on every platform and
/// release), not a security hash.
pub(crate) fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The fingerprint of `messages`' first user message, if any.
pub(crate) fn opening_of(format: Format, messages: &[Message]) -> Option<String> {
    let first = messages.iter().find(|m| m.role == Role::User)?;
    let text = crate::wire::message_to_value(first, format).to_string();
    Some(format!("fnv64:{:016x}", fnv64(text.as_bytes())))
}

/// A counter's description without its calibration (`anthropic estimate,
/// calibrated x1.040` -> `anthropic estimate`): a calibration moves with
/// each observation and does not make a state foreign.
fn counter_family(describe: &str) -> String {
    let cut = [", calibrated", " (uncalibrated)"]
        .iter()
        .filter_map(|m| describe.find(m))
        .min()
        .unwrap_or(describe.len());
    describe[..cut].to_string()
}

/// What a session is planned for: compared with a stored state's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// `openai` / `anthropic`.
    pub provider: String,
    /// The model, if named.
    pub model: Option<String>,
    /// The counter's description.
    pub encoding: String,
}

impl Planned {
    /// What `opts` plans for, with an optional model name.
    ///
    /// # Errors
    /// [`ChatError::UnknownEncoding`](crate::ChatError::UnknownEncoding)
    /// when the options name an encoding that does not exist.
    pub fn of(opts: &Trim, model: Option<&str>) -> Result<Self, crate::ChatError> {
        Ok(Planned {
            provider: opts.format().as_str().to_string(),
            model: model.map(str::to_string),
            encoding: counter_family(&opts.make_counter()?.describe()),
        })
    }
}

impl SessionState {
    /// A new state for `window` (the window as sent, e.g.
    /// [`CacheTurn::cloned_messages`](crate::CacheTurn::cloned_messages)),
    /// made at `turn` for `planned`; `opening` is the conversation's
    /// fingerprint (see [`opening`](Self::opening)).
    pub fn new(planned: &Planned, turn: usize, opening: Option<String>, window: String) -> Self {
        SessionState {
            format: SESSION_STATE_FORMAT,
            version: 0,
            provider: planned.provider.clone(),
            model: planned.model.clone(),
            encoding: planned.encoding.clone(),
            turn,
            opening,
            window,
            ledger: None,
            extra: BTreeMap::new(),
        }
    }

    /// A state for `window` in `format`, the document written with
    /// [`Transcript::to_json`].
    pub fn of_window(
        planned: &Planned,
        turn: usize,
        transcript: &[Message],
        format: Format,
        window: Vec<Message>,
    ) -> Self {
        let doc = Transcript::new(format, window).to_json();
        Self::new(planned, turn, opening_of(format, transcript), doc)
    }

    /// The fingerprint [`opening`](Self::opening) would have for `messages`.
    pub fn opening_of(format: Format, messages: &[Message]) -> Option<String> {
        opening_of(format, messages)
    }

    /// Reads a stored state (`key` names it in errors). An empty text, text
    /// that is not JSON, or JSON that is neither a state nor a window
    /// document is refused; a format-0 state (a bare window document) is
    /// migrated: provider from the document, encoding and model unknown
    /// (taken as this session's), turn 1.
    ///
    /// # Errors
    /// [`SessionStoreError::Empty`], [`SessionStoreError::Corrupt`],
    /// [`SessionStoreError::Newer`].
    pub fn parse(key: &str, text: &str) -> Result<Self, SessionStoreError> {
        if text.trim().is_empty() {
            return Err(SessionStoreError::Empty {
                key: key.to_string(),
            });
        }
        let value: Value = serde_json::from_str(text).map_err(|e| SessionStoreError::Corrupt {
            key: key.to_string(),
            message: format!("not JSON ({e}); it may have been cut short"),
        })?;
        let Some(format) = value.get("format") else {
            return Self::migrate(key, value, text);
        };
        let format = format.as_u64().unwrap_or(u64::MAX);
        if format > u64::from(SESSION_STATE_FORMAT) {
            return Err(SessionStoreError::Newer {
                key: key.to_string(),
                format,
                supported: SESSION_STATE_FORMAT,
            });
        }
        serde_json::from_value(value).map_err(|e| SessionStoreError::Corrupt {
            key: key.to_string(),
            message: format!("not a session state ({e})"),
        })
    }

    /// Format 0: the window document alone.
    fn migrate(key: &str, value: Value, text: &str) -> Result<Self, SessionStoreError> {
        let corrupt = |message: String| SessionStoreError::Corrupt {
            key: key.to_string(),
            message,
        };
        if !(value.is_array() || value.get("messages").is_some()) {
            return Err(corrupt(
                "JSON, but neither a session state (no `format` field) nor a window document"
                    .to_string(),
            ));
        }
        let doc = Transcript::from_value(value, None)
            .map_err(|e| corrupt(format!("an unversioned window that does not parse: {e}")))?;
        Ok(SessionState {
            format: 0,
            version: 0,
            provider: doc.format().as_str().to_string(),
            model: None,
            encoding: String::new(),
            turn: 1,
            opening: None,
            window: text.to_string(),
            ledger: None,
            extra: BTreeMap::new(),
        })
    }

    /// The state as stored: one line of JSON and a newline.
    pub fn to_json(&self) -> String {
        // A state is plain data (strings, numbers, JSON values): it always serialises.
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Why this state cannot be resumed by a session planned for `planned`
    /// on `transcript` (`None`: it can). A migrated format-0 state has no
    /// recorded encoding or model and is not judged on them.
    pub fn replan(&self, planned: &Planned, transcript: &[Message]) -> Option<Replan> {
        if self.provider != planned.provider {
            return Some(Replan::Provider {
                was: self.provider.clone(),
                now: planned.provider.clone(),
            });
        }
        if let (Some(was), Some(now)) = (&self.model, &planned.model)
            && was != now
        {
            return Some(Replan::Model {
                was: was.clone(),
                now: now.clone(),
            });
        }
        if !self.encoding.is_empty() && self.encoding != planned.encoding {
            return Some(Replan::Encoding {
                was: self.encoding.clone(),
                now: planned.encoding.clone(),
            });
        }
        let format = if planned.provider == Format::Anthropic.as_str() {
            Format::Anthropic
        } else {
            Format::OpenAi
        };
        if let Some(was) = &self.opening
            && opening_of(format, transcript).as_ref() != Some(was)
        {
            return Some(Replan::OtherTranscript);
        }
        None
    }

    /// The window's messages, read in the state's provider format.
    ///
    /// # Errors
    /// [`SessionStoreError::Corrupt`] when the window does not parse.
    pub fn window_messages(&self, key: &str) -> Result<Vec<Message>, SessionStoreError> {
        let format = if self.provider == Format::Anthropic.as_str() {
            Format::Anthropic
        } else {
            Format::OpenAi
        };
        Transcript::parse_as(&self.window, format)
            .map(Transcript::into_messages)
            .map_err(|e| SessionStoreError::Corrupt {
                key: key.to_string(),
                message: format!("its window does not parse as {}: {e}", self.provider),
            })
    }
}
