//! Compaction: what leaves a chat window is folded into one running
//! summary, placed right after the pinned prefix
//! (`spec/20-prompt-cache.md`, "Compaction"; the summary model is
//! `spec/22-variants.md`'s, shared with the pipeline).
//!
//! * [`Summarizer`] (blocking) and [`AsyncSummarizer`] turn a
//!   [`SummaryInput`] — the previous [`RunningSummary`] and the raw units
//!   evicted since it was made, as messages in the transcript's own format
//!   and as plain text — into the new summary's text.
//! * [`DigestSummarizer`] is the offline default: a deterministic,
//!   bounded extractive digest. [`CommandSummarizer`] pipes the input to an
//!   external command.
//! * [`Compaction`] holds a summariser and the size bound; pass it to
//!   [`Trim::summarize`](crate::Trim::summarize) or
//!   [`CacheSession::summarize`](crate::CacheSession::summarize).
//!
//! The guarantees: a summary is made from at most one previous summary
//! plus raw units (never a summary of summaries); it never holds more than
//! [`Compaction::max_tokens`] (an oversized text is cut at its last
//! sentence boundary that fits, or refused with
//! [`Oversize::Reject`]); a tool call without its result is never
//! summarised; and a summariser that fails, times out or returns nothing
//! leaves the previous summary in place and says so
//! ([`SummaryStatus::Failed`]).

mod command;
mod digest;
mod run;
mod window;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use cupel_core::Summary;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::message::{Message, Part, Role};
use crate::wire::{Format, message_to_value};

pub use command::{CommandSummarizer, DEFAULT_COMMAND_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES};
pub use digest::DigestSummarizer;
pub(crate) use run::{Folding, summary_message};
pub use window::trim_summarized_async;
pub(crate) use window::{placed, trim_compacted, units};

/// The first line of every summary message, so a reader (and a model)
/// knows the text is Cupel's summary, not a turn of the conversation.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation]";

/// The running summary of a conversation: the one summary in its window,
/// and where it came from.
///
/// Serialisable, so a session's state can keep it (`cupel chat --state`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunningSummary {
    /// The summary's text (without [`SUMMARY_HEADER`]) and the tokens of
    /// the message that carries it, as the trim's counter counts it.
    pub summary: Summary,
    /// The newest input position it covers: units after it are not in it.
    #[serde(default)]
    pub through: Option<usize>,
    /// The input positions folded in by the fold that made it.
    #[serde(default)]
    pub positions: Vec<usize>,
    /// How many input messages it stands for in all (its predecessors' included).
    #[serde(default)]
    pub covers: usize,
    /// Their tokens.
    #[serde(default)]
    pub original_tokens: i64,
    /// How many folds made it (1 for a first summary).
    #[serde(default)]
    pub folds: usize,
    /// The session turn that made it, when a session did.
    #[serde(default)]
    pub turn: Option<usize>,
}

impl RunningSummary {
    /// The text.
    pub fn text(&self) -> &str {
        self.summary.text()
    }

    /// The tokens of the message that carries it.
    pub fn tokens(&self) -> i64 {
        self.summary.tokens()
    }

    /// The message that carries it in a `format` window after the pinned
    /// messages `pinned` (see [`inject`](crate::inject)).
    pub fn message(&self, format: Format, pinned: &[Message]) -> Message {
        summary_message(format, pinned, self.text())
    }
}

/// One raw unit evicted from the window: the messages of one unit (a
/// message, a whole tool group, an exchange), in input order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Evicted<'a> {
    /// Input positions.
    pub positions: Vec<usize>,
    /// The messages as they were in the window (an aged tool result in
    /// its shortened form is given whole).
    pub messages: Vec<&'a Message>,
}

/// What a summariser reads.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SummaryInput<'a> {
    /// The transcript's format.
    pub format: Format,
    /// The previous running summary, on its own (never among `evicted`).
    pub previous: Option<&'a RunningSummary>,
    /// The raw units evicted since it was made, oldest first. No unit
    /// holds a tool call without its result.
    pub evicted: Vec<Evicted<'a>>,
    /// The most tokens the summary message may hold.
    pub max_tokens: i64,
}

impl SummaryInput<'_> {
    /// The evicted messages as a JSON array in the transcript's own
    /// format (the wire form a model takes).
    pub fn messages_json(&self) -> Value {
        Value::Array(
            self.evicted
                .iter()
                .flat_map(|u| u.messages.iter())
                .map(|m| message_to_value(m, self.format))
                .collect(),
        )
    }

    /// The evicted messages as plain text, one line per message:
    /// `#12 [2025-06-01T10:00:00Z] user: ...`, tool calls as
    /// `assistant called NAME(ARGS)`, results as `tool result (NAME): ...`.
    /// The date is shown when the message carries one (a `timestamp`,
    /// `created_at`, `date` or `time` field).
    pub fn plain_text(&self) -> String {
        let mut names: Vec<(&str, &str)> = Vec::new();
        let mut out = String::new();
        for u in &self.evicted {
            for (&p, m) in u.positions.iter().zip(&u.messages) {
                for c in m.calls() {
                    names.push((c.id.as_str(), c.name.as_str()));
                }
                line(&mut out, p, m, &names);
            }
        }
        out
    }

    /// The document an external summariser reads on stdin: `format`,
    /// `max_tokens`, `previous_summary` (text or null), `messages` (the
    /// evicted messages in the transcript's format), `positions` and
    /// `text` ([`plain_text`](Self::plain_text)).
    pub fn to_json(&self) -> Value {
        json!({
            "format": self.format.as_str(),
            "max_tokens": self.max_tokens,
            "previous_summary": self.previous.map(RunningSummary::text),
            "positions": self.positions(),
            "messages": self.messages_json(),
            "text": self.plain_text(),
        })
    }

    /// Every evicted input position, ascending.
    pub fn positions(&self) -> Vec<usize> {
        self.evicted
            .iter()
            .flat_map(|u| u.positions.iter().copied())
            .collect()
    }
}

/// The date a message carries, if any.
pub(crate) fn date_of(m: &Message) -> Option<String> {
    ["timestamp", "created_at", "date", "time"]
        .iter()
        .find_map(|k| match m.extra.get(*k)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line(out: &mut String, p: usize, m: &Message, names: &[(&str, &str)]) {
    use std::fmt::Write as _;
    let _ = write!(out, "#{p} ");
    if let Some(d) = date_of(m) {
        let _ = write!(out, "[{d}] ");
    }
    let name_of = |id: &str| {
        names
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map_or("?", |(_, n)| *n)
            .to_string()
    };
    if m.is_tool_result() {
        let ids: Vec<String> = m.answered_ids().map(name_of).collect();
        let _ = writeln!(
            out,
            "tool result ({}): {}",
            ids.join(", "),
            one_line(&m.text())
        );
        return;
    }
    let text = one_line(&m.content.texts().join(" "));
    let _ = write!(out, "{}:", m.role);
    if !text.is_empty() {
        let _ = write!(out, " {text}");
    }
    for c in m.calls() {
        let _ = write!(
            out,
            " [called {}({})]",
            c.name,
            one_line(&c.arguments_text())
        );
    }
    for part in m.content.parts() {
        if let Part::ToolResult(r) = part {
            let _ = write!(
                out,
                " [tool result ({}): {}]",
                name_of(&r.call_id),
                one_line(&r.content.texts().join(" "))
            );
        }
    }
    out.push('\n');
}

/// Why a summariser gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The summariser failed, with its own words.
    #[error("the summariser failed: {0}")]
    Failed(String),
    /// An external command could not be started.
    #[error("cannot run summariser command `{command}`: {message}")]
    Spawn {
        /// The command.
        command: String,
        /// The system's words.
        message: String,
    },
    /// An external command exited unsuccessfully.
    #[error("summariser command `{command}` exited with {status}{}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    Exit {
        /// The command.
        command: String,
        /// `exit status 1`, `signal 9`, ...
        status: String,
        /// The start of its stderr (at most 1,000 bytes).
        stderr: String,
    },
    /// The summariser did not answer in time.
    #[error("summariser command `{command}` did not finish within {} s (killed)", timeout.as_secs_f64())]
    TimedOut {
        /// The command.
        command: String,
        /// The time it had.
        timeout: Duration,
    },
    /// The summariser wrote more than the output cap.
    #[error("summariser command `{command}` wrote more than {limit} bytes (killed)")]
    TooLarge {
        /// The command.
        command: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// The summariser's output is not UTF-8.
    #[error("summariser command `{command}` wrote invalid UTF-8 at byte {at}")]
    InvalidUtf8 {
        /// The command.
        command: String,
        /// Offset of the first invalid byte.
        at: usize,
    },
}

/// A summariser that blocks until it has the new summary.
///
/// One required method. Implementations receive the previous summary on
/// its own and the raw evicted units; they return the new summary's text
/// (Cupel adds [`SUMMARY_HEADER`], counts it and enforces the bound).
/// Returning an error or an empty text keeps the previous summary.
pub trait Summarizer: Send + Sync {
    /// The new summary's text.
    ///
    /// # Errors
    /// Any [`SummarizeError`]; the window keeps the previous summary.
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError>;

    /// A short name for reports (`digest`, `command ...`).
    fn describe(&self) -> String {
        "summarizer".to_string()
    }
}

impl<T: Summarizer + ?Sized> Summarizer for &T {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        (**self).summarize(input)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

impl<T: Summarizer + ?Sized> Summarizer for Box<T> {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        (**self).summarize(input)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

impl<T: Summarizer + ?Sized> Summarizer for Arc<T> {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        (**self).summarize(input)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// The future an [`AsyncSummarizer`] returns.
pub type SummaryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<String, SummarizeError>> + Send + 'a>>;

/// A summariser for async callers (a model call on tokio or any other
/// runtime: the trait needs no runtime). Used by
/// [`trim_summarized_async`](crate::trim_summarized_async) and
/// [`CacheSession::next_async`](crate::CacheSession::next_async).
pub trait AsyncSummarizer: Send + Sync {
    /// The new summary's text.
    fn summarize<'a>(&'a self, input: &'a SummaryInput<'a>) -> SummaryFuture<'a>;
}

impl<T: AsyncSummarizer + ?Sized> AsyncSummarizer for &T {
    fn summarize<'a>(&'a self, input: &'a SummaryInput<'a>) -> SummaryFuture<'a> {
        (**self).summarize(input)
    }
}

impl<T: AsyncSummarizer + ?Sized> AsyncSummarizer for Arc<T> {
    fn summarize<'a>(&'a self, input: &'a SummaryInput<'a>) -> SummaryFuture<'a> {
        (**self).summarize(input)
    }
}

/// What to do with a summary over [`Compaction::max_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Oversize {
    /// Cut it after its last sentence (a `.`, `!` or `?` followed by
    /// whitespace, or a line end) whose prefix fits; refused when no
    /// sentence fits.
    #[default]
    CutAtSentence,
    /// Refuse it: the previous summary stays.
    Reject,
}

/// Compaction options: the summariser and the summary's size bound.
///
/// ```
/// use cupel_chat::{Compaction, DigestSummarizer, Message, Trim, trim};
/// let mut messages = vec![Message::system("Be brief.")];
/// for k in 0..6 {
///     messages.push(Message::user(format!("Question {k}: {}", "why? ".repeat(40))));
///     messages.push(Message::assistant(format!("Answer {k}.")));
/// }
/// messages.push(Message::user("And now?"));
/// let opts = Trim::openai(300).summarize(Compaction::new(DigestSummarizer::new()).max_tokens(120)?);
/// let out = trim(&messages, &opts)?;
/// let s = out.summary.as_ref().expect("a compaction reports");
/// assert!(s.is_made());
/// let sent = out.cloned_messages();
/// assert!(sent[1].text().starts_with("[Summary of the earlier conversation]"));
/// assert!(out.tokens.window <= 300); // the summary is counted in the budget
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Compaction {
    pub(crate) summarizer: Option<Arc<dyn Summarizer>>,
    pub(crate) max_tokens: i64,
    pub(crate) oversize: Oversize,
    pub(crate) previous: Option<RunningSummary>,
}

impl fmt::Debug for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compaction")
            .field(
                "summarizer",
                &self.summarizer.as_ref().map(|s| s.describe()),
            )
            .field("max_tokens", &self.max_tokens)
            .field("oversize", &self.oversize)
            .field("previous", &self.previous)
            .finish_non_exhaustive()
    }
}

/// The default bound of a summary message, in tokens.
pub const DEFAULT_SUMMARY_TOKENS: i64 = 512;

impl Compaction {
    /// Compaction with `summarizer`, a bound of [`DEFAULT_SUMMARY_TOKENS`]
    /// and [`Oversize::CutAtSentence`].
    pub fn new(summarizer: impl Summarizer + 'static) -> Self {
        Compaction {
            summarizer: Some(Arc::new(summarizer)),
            max_tokens: DEFAULT_SUMMARY_TOKENS,
            oversize: Oversize::CutAtSentence,
            previous: None,
        }
    }

    /// Compaction whose summariser is async (passed to
    /// [`trim_summarized_async`](crate::trim_summarized_async) or
    /// [`CacheSession::next_async`](crate::CacheSession::next_async)); a
    /// blocking run with it keeps the previous summary and says no
    /// summariser was given.
    pub fn for_async() -> Self {
        Compaction {
            summarizer: None,
            ..Self::new(DigestSummarizer::new())
        }
    }

    /// The most tokens the summary message may hold (its framing and
    /// [`SUMMARY_HEADER`] included). The trim and the session hold these
    /// tokens back from the budget whenever compaction is on.
    ///
    /// # Errors
    /// [`ChatError::Core`](crate::ChatError::Core) holding
    /// [`cupel_core::CupelError::InvalidArgument`] for a bound below 1.
    pub fn max_tokens(mut self, tokens: i64) -> Result<Self, crate::ChatError> {
        if tokens < 1 {
            return Err(cupel_core::CupelError::InvalidArgument(format!(
                "a summary bound must be at least 1 token; got {tokens}"
            ))
            .into());
        }
        self.max_tokens = tokens;
        Ok(self)
    }

    /// What to do with an oversized summary (default [`Oversize::CutAtSentence`]).
    pub fn oversize(mut self, policy: Oversize) -> Self {
        self.oversize = policy;
        self
    }

    /// The running summary so far (a stateless [`trim`](crate::trim)
    /// folds into it; a session keeps its own and takes this one as its
    /// starting point).
    pub fn previous(mut self, summary: Option<RunningSummary>) -> Self {
        self.previous = summary;
        self
    }

    /// The bound.
    pub fn bound(&self) -> i64 {
        self.max_tokens
    }
}

/// Why a fold made no new summary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SummaryFailure {
    /// No blocking summariser was given (see [`Compaction::for_async`]).
    NoSummarizer,
    /// The summariser failed or timed out.
    Summarizer(SummarizeError),
    /// It returned an empty (or all-whitespace) text.
    Empty,
    /// Its text was over the bound and no sentence of it fits (or
    /// [`Oversize::Reject`]).
    Oversized {
        /// The summary message's tokens.
        tokens: i64,
        /// The bound.
        max_tokens: i64,
    },
}

impl fmt::Display for SummaryFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryFailure::NoSummarizer => f.write_str("no blocking summariser was given"),
            SummaryFailure::Summarizer(e) => write!(f, "{e}"),
            SummaryFailure::Empty => f.write_str("the summariser returned an empty summary"),
            SummaryFailure::Oversized { tokens, max_tokens } => write!(
                f,
                "the summary holds {} tokens, over its bound of {} (no sentence of it fits)",
                crate::trim::group_digits(*tokens),
                crate::trim::group_digits(*max_tokens)
            ),
        }
    }
}

/// What a trim or a turn did with the running summary.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SummaryStatus {
    /// Nothing new was evicted: the previous summary (if any) is sent as it was.
    Unchanged,
    /// A new summary was made from the previous one and the evicted units.
    Made {
        /// It was cut at a sentence boundary to fit the bound: its tokens before.
        cut_from: Option<i64>,
    },
    /// No new summary: the previous one (if any) stays, and the evicted
    /// units are in no summary yet (the next fold takes them again).
    Failed(SummaryFailure),
}

/// The running summary's part of a trim or a turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SummaryReport {
    /// What happened.
    pub status: SummaryStatus,
    /// The summary in the window (the new one, or the previous kept).
    pub summary: Option<RunningSummary>,
    /// The summary message as sent (None without a summary).
    pub message: Option<Message>,
    /// Its index in the window as sent (right after the pinned prefix).
    pub at: usize,
    /// The input positions evicted by this trim or turn that the fold
    /// took (empty when unchanged).
    pub evicted: Vec<usize>,
    /// Tokens held back for the summary.
    pub reserve: i64,
}

impl SummaryReport {
    /// Whether a new summary was made.
    pub fn is_made(&self) -> bool {
        matches!(self.status, SummaryStatus::Made { .. })
    }

    /// The summary message's tokens (0 without one).
    pub fn tokens(&self) -> i64 {
        self.summary.as_ref().map_or(0, RunningSummary::tokens)
    }
}

impl fmt::Display for SummaryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span = |p: &[usize]| match (p.first(), p.last()) {
            (Some(a), Some(b)) if a == b => format!("#{a}"),
            (Some(a), Some(b)) => format!("#{a}-#{b}"),
            _ => "nothing".to_string(),
        };
        match (&self.status, &self.summary) {
            (SummaryStatus::Made { cut_from }, Some(s)) => {
                write!(
                    f,
                    "summary: made{} from {}{} ({} messages folded, {} in all; {} tokens",
                    s.turn.map(|t| format!(" at turn {t}")).unwrap_or_default(),
                    if s.folds > 1 {
                        "the previous summary and "
                    } else {
                        ""
                    },
                    span(&self.evicted),
                    self.evicted.len(),
                    s.covers,
                    crate::trim::group_digits(s.tokens()),
                )?;
                if let Some(from) = cut_from {
                    write!(
                        f,
                        ", cut at a sentence from {}",
                        crate::trim::group_digits(*from)
                    )?;
                }
                write!(
                    f,
                    " of {} reserved)",
                    crate::trim::group_digits(self.reserve)
                )
            }
            (SummaryStatus::Failed(why), prev) => write!(
                f,
                "summary: not updated ({why}); {} evicted messages ({}) are in no summary yet; {}",
                self.evicted.len(),
                span(&self.evicted),
                match prev {
                    Some(p) => format!(
                        "the previous summary ({} tokens{}) stays",
                        crate::trim::group_digits(p.tokens()),
                        p.turn
                            .map(|t| format!(", made at turn {t}"))
                            .unwrap_or_default()
                    ),
                    None => "the window has no summary".to_string(),
                }
            ),
            (_, Some(s)) => write!(
                f,
                "summary: unchanged ({} tokens, covering {} messages through #{}{})",
                crate::trim::group_digits(s.tokens()),
                s.covers,
                s.through.map_or("?".into(), |t| t.to_string()),
                s.turn
                    .map(|t| format!(", made at turn {t}"))
                    .unwrap_or_default()
            ),
            (_, None) => write!(f, "summary: none (nothing evicted)"),
        }
    }
}

/// Whether `m` is the summary message `summary` would be in `format`
/// (the role and text of [`RunningSummary::message`]).
pub(crate) fn is_summary_message(m: &Message, format: Format, summary: &RunningSummary) -> bool {
    let ok_role = match format {
        Format::Anthropic => m.role == Role::User,
        Format::OpenAi | Format::Responses => m.role.is_prompt(),
        Format::Gemini => m.role == Role::System,
    };
    ok_role && m.text() == run::with_header(summary.text())
}
