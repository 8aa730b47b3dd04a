//! [`CacheSession`]: windows that keep the previous turn's prefix
//! byte-identical, append while they fit, and cut once and deep when they
//! no longer do.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::aging::AgeToolResults;
use crate::cache::profile::{CacheProfile, CacheUsage};
use crate::cache::prompt::{Block, Frame, PromptCache};
use crate::compact::{
    AsyncSummarizer, Compaction, Folding, RunningSummary, SummaryReport, is_summary_message, units,
};
use crate::count::MessageCounter;
use crate::error::ChatError;
use crate::message::Message;
use crate::trim::{Decision, Granularity, Half, MessageRow, Trim, Trimmed, trim};

mod ledger;

pub use ledger::SessionLedger;
use ledger::{Check, Digest, Kind, Ledger, RecentEnd};

/// A budget no transcript reaches: trims at it only group and validate.
const UNLIMITED: i64 = i64::MAX / 4;

/// The messages a cut of a session with compaction keeps under the
/// automatic low-water mark: LangChain `SummarizationMiddleware`'s
/// documented `keep` default, the last 20 messages
/// (reference.langchain.com, `SummarizationMiddlewareOptions.keep`, read
/// 2026-11-27), the same keep the simulation's `summarize-every` and
/// `langchain-state` use (`spec/13-clarifications.md`, CP-7).
pub(crate) const SUMMARY_KEEP_MESSAGES: usize = 20;

/// The tokens of the newest `keep` messages among `eligible` (a message
/// split in two pieces counted once, with both pieces' tokens); all of
/// them when there are fewer.
fn newest_messages_tokens(eligible: &[Slot], keep: usize) -> i64 {
    let mut messages = 0usize;
    let mut tokens = 0i64;
    let mut last_pos = None;
    for e in eligible.iter().rev() {
        if last_pos != Some(e.pos) {
            if messages == keep {
                break;
            }
            messages += 1;
            last_pos = Some(e.pos);
        }
        tokens = tokens.saturating_add(e.tokens);
    }
    tokens
}

/// Where a cut stops: the low-water mark, as the whole window's tokens
/// (pinned prompts and request overhead included).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum LowWater {
    /// Derived from the profile's cost model:
    /// pinned + overhead + [`CacheProfile::default_low_water`] of the rest.
    /// In a session with compaction ([`CacheSession::summarize`]), where the
    /// summary takes what a cut removes, the conversation part is at most
    /// the tokens of the newest 20 messages (LangChain
    /// `SummarizationMiddleware`'s default `keep`): a cut keeps at least
    /// those 20 messages, fewer only when the default mark is smaller.
    #[default]
    Auto,
    /// A fixed number of window tokens.
    Tokens(i64),
    /// A fraction (0 < f <= 1) of the budget left after the pinned prompts
    /// and the request overhead, plus those.
    Fraction(f64),
}

/// Why the window of a turn does not start with the whole previous window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixBreak {
    /// The first turn of the session: there is no previous window.
    NoPrevious,
    /// The pinned prompts differ from the previous window's.
    PinnedChanged,
    /// The previous window's first conversation message is not in the
    /// transcript (at the start of a unit).
    NotFound,
    /// The transcript differs from the previous window at this window
    /// position (a message was edited or removed).
    Diverged {
        /// Position in the previous window of the first differing message.
        at: usize,
    },
    /// The budget forced a cut (see [`CacheTurn::cut`]).
    Cut,
}

/// A deep cut: whole units removed from the front of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cut {
    /// The window tokens had nothing been removed.
    pub reached: i64,
    /// 1-based number of the first unit removed (units of the transcript,
    /// counted from its first conversation unit).
    pub first_unit: usize,
    /// 1-based number of the last unit removed.
    pub last_unit: usize,
    /// Messages removed.
    pub removed_messages: usize,
    /// Tokens removed.
    pub removed_tokens: i64,
    /// 1-based number of the oldest unit the cut kept: the one whose removal
    /// would have taken the window under the low-water mark (or the newest
    /// unit, which a cut never removes).
    pub front_unit: usize,
    /// Its tokens, as sent.
    pub front_unit_tokens: i64,
    /// Why the cut stopped at that unit.
    pub front_reason: CutFront,
    /// Old tool results the cut shortened (with
    /// [`Trim::age_tool_results`](crate::Trim::age_tool_results); 0 without).
    pub shortened: usize,
    /// The tokens that saved.
    pub shortened_saved: i64,
}

/// Why a [`Cut`] kept the unit it stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CutFront {
    /// Removing it too would take the window under the low-water mark.
    Mark,
    /// It is the newest unit, which a cut never removes.
    Newest,
    /// The provider rules removed the units before it (a conversation
    /// cannot start with them); it is the first that may start one.
    ProviderRule,
}

/// What one turn did with one input message (see [`CacheTurn::rows`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheStatus {
    /// A pinned system or developer prompt: first in every window.
    Pinned,
    /// The pinned task (see [`Trim::pin_first_user`](crate::Trim::pin_first_user)):
    /// right after the prompts in every window.
    PinnedTask,
    /// In the window and in the previous window's prefix, byte for byte:
    /// read from the provider's cache when that still holds it.
    Prefix,
    /// In the window and in the previous window, but after the point where
    /// the prefix broke (or the cut moved the front): sent again.
    Resent,
    /// In the window and not in the previous window: appended (or, on a
    /// first turn or after the previous window was lost, sent afresh).
    New,
    /// Removed by this turn's cut.
    Cut {
        /// 1-based unit number (exchange, turn or message, by the session's
        /// granularity), counted like [`Cut::first_unit`].
        unit: usize,
    },
    /// Older than the previous window's front: an earlier turn's cut
    /// removed it.
    EarlierCut,
    /// Left out by the chat rules whatever the budget (orphan tool traffic,
    /// a provider rule); `reason` is the chat trim's explanation.
    Dropped {
        /// The trim's reason (`dropped: result whose call ...`).
        reason: String,
    },
}

/// One input message's fate in a [`CacheTurn`].
#[derive(Debug, Clone, PartialEq)]
pub struct CacheRow<'a> {
    /// Input position (0-based; an Anthropic `system` is #0).
    pub position: usize,
    /// The message.
    pub message: &'a Message,
    /// Its tokens as counted.
    pub tokens: i64,
    /// What the turn did with it.
    pub status: CacheStatus,
    /// Its tokens as sent, when it went into the window shortened (an aged
    /// tool result, see [`CacheSession`]); `None` when sent whole or not sent.
    pub sent_tokens: Option<i64>,
    /// What a unit is called in the explanation (`exchange`, `turn`, `message`).
    unit_noun: &'static str,
}

impl CacheRow<'_> {
    /// Whether the message is in the turn's window.
    pub fn in_window(&self) -> bool {
        matches!(
            self.status,
            CacheStatus::Pinned
                | CacheStatus::PinnedTask
                | CacheStatus::Prefix
                | CacheStatus::Resent
                | CacheStatus::New
        )
    }
}

impl fmt::Display for CacheRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {} ", self.position, self.message.label())?;
        let t = match self.sent_tokens {
            Some(sent) if self.message.is_mixed_turn() => format!(
                "{} of {}, rewritten without its tool results, whose calls are out",
                crate::trim::group_digits(sent),
                crate::trim::group_digits(self.tokens)
            ),
            Some(sent) => format!(
                "shortened from {} to {}",
                crate::trim::group_digits(self.tokens),
                crate::trim::group_digits(sent)
            ),
            None => crate::trim::group_digits(self.tokens),
        };
        match &self.status {
            CacheStatus::Pinned => write!(f, "kept: pinned prompt ({t} tokens)"),
            CacheStatus::PinnedTask => write!(f, "kept: pinned task ({t} tokens)"),
            CacheStatus::Prefix => write!(
                f,
                "kept: unchanged prefix, same bytes as the previous window ({t} tokens)"
            ),
            CacheStatus::Resent => {
                write!(f, "kept: sent again after the prefix moved ({t} tokens)")
            }
            CacheStatus::New => write!(f, "kept: not in the previous window ({t} tokens)"),
            CacheStatus::Cut { unit } => write!(
                f,
                "removed by this turn's cut, with {} {unit} ({t} tokens)",
                self.unit_noun
            ),
            CacheStatus::EarlierCut => write!(f, "removed by an earlier turn's cut"),
            CacheStatus::Dropped { reason } => f.write_str(reason),
        }
    }
}

/// One turn's window with its cache accounting.
#[derive(Debug, Clone)]
pub struct CacheTurn<'a> {
    /// 1-based turn number within the session.
    pub turn: usize,
    /// The window's messages, in order: the pinned prompts, then the
    /// conversation. A message sent shortened is here in its original form;
    /// [`cloned_messages`](Self::cloned_messages) applies
    /// [`shortened`](Self::shortened).
    pub messages: Vec<&'a Message>,
    /// Their input positions.
    pub positions: Vec<usize>,
    /// How many pinned messages lead the window.
    pub pinned: usize,
    /// The request's input tokens (overhead included).
    pub window_tokens: i64,
    /// The budget.
    pub max_tokens: i64,
    /// The low-water mark in effect (window tokens).
    pub low_water: i64,
    /// The transcript's tokens had everything been sent (overhead, pinned
    /// and every message the provider rules allow).
    pub history_tokens: i64,
    /// How many leading messages equal the previous window's leading messages.
    pub kept_prefix: usize,
    /// Their tokens.
    pub kept_prefix_tokens: i64,
    /// Why the previous window is not all kept (`None` when it is).
    pub broke: Option<PrefixBreak>,
    /// The cut, when the budget forced one.
    pub cut: Option<Cut>,
    /// The input positions the cut removed (empty without a cut), in order.
    pub removed: Vec<usize>,
    /// Anthropic `cache_control` markers, as prefix lengths of the window
    /// as sent ([`cloned_messages`](Self::cloned_messages): the same as
    /// [`messages`](Self::messages) unless a running summary is in it; see
    /// [`sent_positions`](Self::sent_positions) and
    /// [`plan_breakpoints`](crate::plan_breakpoints)).
    pub breakpoints: Vec<usize>,
    /// Expected billing of this request, if every turn of the session was sent.
    pub usage: CacheUsage,
    /// Its price in base input tokens.
    pub cost: f64,
    /// Every input message, in input order, with what this turn did with
    /// it (see [`rows_text`](Self::rows_text) for a printable digest).
    pub rows: Vec<CacheRow<'a>>,
    /// The form sent for each window message that went in shortened (old
    /// tool results, with [`Trim::age_tool_results`](crate::Trim::age_tool_results)),
    /// by input position.
    pub shortened: BTreeMap<usize, Message>,
    /// Set when the caller said ([`CacheSession::idle`]) that this request
    /// comes after the cache's lifetime: nothing is expected from the cache.
    pub expired: Option<Expiry>,
    /// The running summary ([`CacheSession::summarize`]): what this turn
    /// did with it and the message sent right after the pinned prefix
    /// (not in [`messages`](Self::messages), which are input messages;
    /// [`cloned_messages`](Self::cloned_messages) includes it). `None`
    /// without compaction.
    pub summary: Option<SummaryReport>,
    granularity: Granularity,
}

/// A request that came after the provider's cache lifetime (see
/// [`CacheSession::idle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// How long it had been since the previous request.
    pub idle: Duration,
    /// How long the profile says a cached prefix lives unused.
    pub lifetime: Duration,
}

/// `90s` -> "1m 30s", `300s` -> "5m", `3600s` -> "1h", `45s` -> "45s".
fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3_600, secs / 60 % 60, secs % 60);
    let parts: Vec<String> = [(h, "h"), (m, "m"), (s, "s")]
        .into_iter()
        .filter(|(v, _)| *v > 0)
        .map(|(v, unit)| format!("{v}{unit}"))
        .collect();
    if parts.is_empty() {
        "0s".into()
    } else {
        parts.join(" ")
    }
}

/// The value of one of [`CacheTurn::attributes`] (core's shared type, so an
/// exporter records it without this crate).
pub use cupel_core::AttributeValue;

impl CacheTurn<'_> {
    /// Owned copies of the window's messages as sent: shortened ones in
    /// their shortened form. This is what the next turn must find as the
    /// previous window (what `cupel chat --state` writes).
    /// The running summary, if any, is in it right after the pinned prefix.
    pub fn cloned_messages(&self) -> Vec<Message> {
        let mut out = crate::trim::as_sent(&self.messages, &self.positions, &self.shortened);
        if let Some(r) = &self.summary
            && let Some(m) = &r.message
        {
            out.insert(r.at.min(out.len()), m.clone());
        }
        out
    }

    /// The input position of each message of the window as sent
    /// ([`cloned_messages`](Self::cloned_messages)); `None` for the
    /// running summary's message, which is in no input.
    pub fn sent_positions(&self) -> Vec<Option<usize>> {
        let mut out: Vec<Option<usize>> = self.positions.iter().copied().map(Some).collect();
        if let Some(r) = &self.summary
            && r.message.is_some()
        {
            out.insert(r.at.min(out.len()), None);
        }
        out
    }

    /// One line: what was kept, appended or removed and why, and the
    /// expected cache use ("turn 37: window reached 8,300 of 8,000; removed
    /// exchanges 1–12 (2,600 tokens) to 5,700 tokens (low-water mark 5,600);
    /// exchange 13 (400 tokens) stays: without it the window would fall
    /// under the mark; 5,700 of 8,000 tokens: ...").
    pub fn explain(&self) -> String {
        self.to_string()
    }

    /// [`rows`](Self::rows) one line each, except that consecutive
    /// messages removed by earlier cuts share one line
    /// (`#1–#80: 80 messages removed by earlier turns' cuts`).
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
    /// let mut s = CacheSession::new(Trim::openai(100), CacheProfile::openai());
    /// let t = vec![Message::system("Be terse."), Message::user("Hi")];
    /// let text = s.next(&t)?.rows_text();
    /// assert!(text.starts_with("#0 system kept: pinned prompt"));
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn rows_text(&self) -> String {
        let mut out = String::new();
        if let Some(r) = &self.summary {
            out.push_str(&r.to_string());
            out.push('\n');
        }
        let mut i = 0;
        while i < self.rows.len() {
            if self.rows[i].status == CacheStatus::EarlierCut {
                let mut j = i;
                while j + 1 < self.rows.len() && self.rows[j + 1].status == CacheStatus::EarlierCut
                {
                    j += 1;
                }
                let n = j - i + 1;
                if n == 1 {
                    out.push_str(&self.rows[i].to_string());
                } else {
                    out.push_str(&format!(
                        "#{}–#{}: {n} messages removed by earlier turns' cuts",
                        self.rows[i].position, self.rows[j].position
                    ));
                }
                out.push('\n');
                i = j + 1;
                continue;
            }
            out.push_str(&self.rows[i].to_string());
            out.push('\n');
            i += 1;
        }
        out
    }

    /// The turn as span attributes (for OpenTelemetry or any tracer), in a
    /// fixed order: `cupel.cache.turn`, `.window_tokens`, `.max_tokens`,
    /// `.low_water_tokens`, `.kept_prefix_messages`, `.kept_prefix_tokens`,
    /// `.read_tokens`, `.written_tokens`, `.uncached_tokens`,
    /// `.removed_messages` (0 without a cut), `.breakpoints`, and
    /// `cupel.cache.explanation` (the [`explain`](Self::explain) line), then
    /// `cupel.cache.expired_idle_seconds` when the turn came after the
    /// cache's lifetime ([`CacheSession::idle`]).
    ///
    /// ```
    /// use cupel_chat::{AttributeValue, CacheProfile, CacheSession, Message, Trim};
    /// let mut s = CacheSession::new(Trim::openai(100), CacheProfile::openai());
    /// let t = vec![Message::user("hi")];
    /// let attrs = s.next(&t)?.attributes();
    /// assert_eq!(attrs[0], ("cupel.cache.turn", AttributeValue::Int(1)));
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn attributes(&self) -> Vec<(&'static str, AttributeValue)> {
        use AttributeValue::{Int, Str};
        let n = |v: usize| Int(i64::try_from(v).unwrap_or(i64::MAX));
        let mut attrs = vec![
            ("cupel.cache.turn", n(self.turn)),
            ("cupel.cache.window_tokens", Int(self.window_tokens)),
            ("cupel.cache.max_tokens", Int(self.max_tokens)),
            ("cupel.cache.low_water_tokens", Int(self.low_water)),
            ("cupel.cache.kept_prefix_messages", n(self.kept_prefix)),
            (
                "cupel.cache.kept_prefix_tokens",
                Int(self.kept_prefix_tokens),
            ),
            ("cupel.cache.read_tokens", Int(self.usage.read)),
            ("cupel.cache.written_tokens", Int(self.usage.written)),
            ("cupel.cache.uncached_tokens", Int(self.usage.uncached)),
            (
                "cupel.cache.removed_messages",
                n(self.cut.map_or(0, |c| c.removed_messages)),
            ),
            ("cupel.cache.breakpoints", n(self.breakpoints.len())),
            ("cupel.cache.explanation", Str(self.explain())),
        ];
        if let Some(e) = self.expired {
            let secs = i64::try_from(e.idle.as_secs()).unwrap_or(i64::MAX);
            attrs.push(("cupel.cache.expired_idle_seconds", Int(secs)));
        }
        attrs
    }
}

impl fmt::Display for CacheTurn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "turn {}: ", self.turn)?;
        if let Some(e) = self.expired {
            write!(
                f,
                "the cache had expired ({} since the previous request; a prefix lives {} unused); ",
                short_duration(e.idle),
                short_duration(e.lifetime)
            )?;
        }
        let units = match self.granularity {
            Granularity::Exchange => "exchanges",
            Granularity::Turn => "turns",
            _ => "messages",
        };
        if let Some(c) = &self.cut {
            let range = if c.first_unit == c.last_unit {
                format!("{} {}", &units[..units.len() - 1], c.first_unit)
            } else {
                format!("{units} {}–{}", c.first_unit, c.last_unit)
            };
            let g = crate::trim::group_digits;
            write!(
                f,
                "window reached {} of {}; removed {range} ({} tokens)",
                g(c.reached),
                g(self.max_tokens),
                g(c.removed_tokens)
            )?;
            if c.shortened > 0 {
                write!(
                    f,
                    " and shortened {} old tool result{} by {} tokens",
                    c.shortened,
                    if c.shortened == 1 { "" } else { "s" },
                    g(c.shortened_saved)
                )?;
            }
            write!(
                f,
                " to {} tokens (low-water mark {}); ",
                g(self.window_tokens),
                g(self.low_water)
            )?;
            let unit = &units[..units.len() - 1];
            let (n, t) = (c.front_unit, g(c.front_unit_tokens));
            match c.front_reason {
                CutFront::Newest => write!(f, "{unit} {n} ({t} tokens) stays: it is the newest")?,
                CutFront::Mark => write!(
                    f,
                    "{unit} {n} ({t} tokens) stays: without it the window would fall under the mark"
                )?,
                CutFront::ProviderRule => write!(
                    f,
                    "{unit} {n} ({t} tokens) stays: the first the provider rules let a conversation start with"
                )?,
            }
        } else {
            match &self.broke {
                None => write!(
                    f,
                    "kept the previous window ({} messages), appended {}",
                    self.kept_prefix,
                    self.messages.len().saturating_sub(self.kept_prefix)
                )?,
                Some(PrefixBreak::NoPrevious) => write!(f, "first window")?,
                Some(PrefixBreak::PinnedChanged) => write!(f, "the pinned prompts changed")?,
                Some(PrefixBreak::NotFound) => {
                    write!(f, "the previous window is not in the transcript")?
                }
                Some(PrefixBreak::Diverged { at }) => write!(
                    f,
                    "the transcript differs from the previous window at its message #{at}"
                )?,
                Some(PrefixBreak::Cut) => write!(f, "cut")?,
            }
        }
        write!(
            f,
            "; {} of {} tokens: {} from cache, {} written, {} uncached",
            crate::trim::group_digits(self.window_tokens),
            crate::trim::group_digits(self.max_tokens),
            crate::trim::group_digits(self.usage.read),
            crate::trim::group_digits(self.usage.written),
            crate::trim::group_digits(self.usage.uncached)
        )
    }
}

/// A conversation's windows across turns, kept cache-friendly.
///
/// Each [`next`](Self::next) takes the whole transcript so far and returns a
/// window that:
///
/// 1. starts with the pinned prompts (system / developer), which never move;
/// 2. keeps the previous window's conversation byte-identical, in the same
///    order, and appends every newer message after it, while that fits the
///    budget;
/// 3. when it no longer fits, cuts once and deep: removes whole units
///    ([`Granularity::Exchange`] by default; tool groups are never split)
///    from the front of the conversation while the window exceeds the
///    budget or stays at or above the low-water mark without the unit; the
///    following turns append after the new front again;
/// 4. with [`Trim::age_tool_results`], shortens old tool results only when
///    it cuts: everything after the pinned prompts is sent afresh then, so
///    a cut first removes whole units as above, then shortens the old
///    results it keeps, oldest first, each to the shortest form that keeps
///    the window at or above the low-water mark (a cut that stopped far
///    above the mark, because the next unit is large, lands near it). A
///    shortened result stays in that form, byte for byte, until a later cut
///    removes it or shortens it further; between cuts nothing is shortened.
///    A resumed session recognises a shortened result in the previous
///    window as the transcript's result in that form;
/// 5. satisfies the chat crate's provider rules: it is built from the units
///    [`trim`] forms, and every cut is checked by [`trim`] itself (a window
///    starting with a non-user message loses its leading units).
///
/// **The low-water mark** ([`LowWater`]): once the history is above it, a
/// window holds at least the mark, except when the budget forces less (the
/// last unit removed would not fit back) or, with
/// [`Granularity::Message`], when the provider rules remove the units that
/// cannot start a conversation after the cut.
///
/// **When new content displaces the prefix:** never while the window fits.
/// A newly arrived message never takes the place of an older one; only when
/// appending it would exceed the budget does the cut remove the oldest units,
/// and then the removal is decided by position alone, not by score.
///
/// ```
/// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
/// let mut s = CacheSession::new(Trim::openai(60), CacheProfile::openai());
/// let mut transcript = vec![Message::system("Be terse."), Message::user("Hi")];
/// let t1 = s.next(&transcript)?;
/// assert_eq!(t1.positions, vec![0, 1]);
/// transcript.push(Message::assistant("Hello."));
/// transcript.push(Message::user("How are you?"));
/// let t2 = s.next(&transcript)?;
/// assert_eq!(t2.kept_prefix, 2); // the first window, byte for byte
/// assert_eq!(t2.positions, vec![0, 1, 2, 3]);
/// println!("{t2}");
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CacheSession {
    opts: Trim,
    profile: CacheProfile,
    low_water: LowWater,
    granularity: Granularity,
    previous: Option<Vec<Message>>,
    prev_breakpoints: Vec<usize>,
    seed_pending: bool,
    turn: usize,
    /// The number the next turn takes, when the caller set one.
    next_turn: Option<usize>,
    /// Set by [`idle`](Self::idle) when the cache expired before the next turn.
    expired: Option<Expiry>,
    cache: PromptCache,
    memo: Memo,
    compaction: Option<Compaction>,
    summary: Option<RunningSummary>,
    /// Set while a replay hands the session a request's recent end
    /// (`suffix`) rather than the whole request: the conversation units
    /// before it (the session numbers its units as the whole request
    /// would) and whether the whole request pins its task (the recent end
    /// holds fewer user messages, so the default rule cannot decide).
    pub(crate) recent_end: Option<(usize, bool)>,
    /// The previous window's blocks as sent (empty when unknown: a resumed
    /// window is hashed afresh): the kept prefix reuses their hashes.
    prev_blocks: Vec<Block>,
    /// What the turns so far learnt of the transcript ([`next`](Self::next)
    /// plans a grown transcript from its recent end with it).
    ledger: Option<Ledger>,
    /// Set while a turn runs on the ledger's roll: where it starts.
    rolled: Option<RecentEnd>,
    /// The digest of the last plan sent, when [`next`](Self::next) asked.
    digest: Option<Digest>,
}

impl CacheSession {
    /// A session trimming with `opts` (budget, provider, counter, rules)
    /// and accounting with `profile`. Units are exchanges unless
    /// [`granularity`](Self::granularity) says otherwise.
    pub fn new(opts: Trim, profile: CacheProfile) -> Self {
        CacheSession {
            opts,
            cache: PromptCache::new(profile.clone()),
            profile,
            low_water: LowWater::Auto,
            granularity: Granularity::Exchange,
            previous: None,
            prev_breakpoints: Vec::new(),
            seed_pending: false,
            turn: 0,
            next_turn: None,
            expired: None,
            memo: Memo::new(),
            compaction: None,
            summary: None,
            recent_end: None,
            prev_blocks: Vec::new(),
            ledger: None,
            rolled: None,
            digest: None,
        }
    }

    /// Folds what the session's cuts remove into one running summary
    /// (`spec/20-prompt-cache.md`, "Compaction"). The summary changes
    /// **only when the session cuts**: between cuts the pinned prefix, the
    /// summary message and the kept turns stay byte-identical, so the
    /// cached prefix holds. At a cut, the summariser folds the previous
    /// summary and the units removed since it was made (raw units only,
    /// each tool group whole); the compaction's bound is held back from the
    /// budget on every turn, so the window with its summary stays within
    /// the budget. A summariser that fails keeps the previous summary
    /// (the turn's [`summary`](CacheTurn::summary) says so) and the units
    /// it did not take are folded at the next cut. The compaction's
    /// [`previous`](Compaction::previous) summary is the session's starting
    /// point (a resumed session's, from its state).
    ///
    /// Under the automatic low-water mark ([`LowWater::Auto`]) a cut of a
    /// session with compaction goes deeper than without: it keeps the
    /// newest units holding the newest 20 messages (the keep of LangChain's
    /// `SummarizationMiddleware`), or the default mark when that is
    /// smaller, since the summary now carries what is cut. A mark the
    /// caller sets ([`low_water`](Self::low_water)) is kept as given.
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, CacheSession, Compaction, DigestSummarizer, Message, Trim};
    /// let c = Compaction::new(DigestSummarizer::new()).max_tokens(80)?;
    /// let mut s = CacheSession::new(Trim::openai(400), CacheProfile::openai()).summarize(c);
    /// let mut t = vec![Message::system("Be brief.")];
    /// let mut made = 0;
    /// for k in 0..12 {
    ///     t.push(Message::user(format!("Question {k}: {}", "why ".repeat(20))));
    ///     let turn = s.next(&t)?;
    ///     assert!(turn.window_tokens <= 400);
    ///     made += turn.summary.as_ref().is_some_and(|r| r.is_made()) as usize;
    ///     t.push(Message::assistant(format!("Answer {k}.")));
    /// }
    /// assert!(made >= 1);
    /// assert!(s.summary().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn summarize(mut self, compaction: Compaction) -> Self {
        self.summary = compaction.previous.clone();
        self.compaction = Some(compaction);
        self
    }

    /// The running summary the last window carried (or the one resumed from).
    pub fn summary(&self) -> Option<&RunningSummary> {
        self.summary.as_ref()
    }

    /// Sets the low-water mark (default [`LowWater::Auto`]).
    pub fn low_water(mut self, mark: LowWater) -> Self {
        self.low_water = mark;
        self
    }

    /// What a cut removes as one piece (default [`Granularity::Exchange`]).
    pub fn granularity(mut self, g: Granularity) -> Self {
        self.granularity = g;
        self
    }

    /// Continues from a window sent earlier (e.g. read back from a state
    /// file): the next window keeps as much of it as it can, and the expected
    /// usage assumes it is in the provider's cache. Turns are numbered from
    /// the resumed window (turn 1), so the next is turn 2.
    pub fn resume(mut self, previous_window: Vec<Message>) -> Self {
        self.previous = Some(previous_window);
        self.prev_blocks = Vec::new();
        self.ledger = None;
        self.seed_pending = true;
        // The resumed window counts as a turn: the next one is turn 2.
        self.turn = self.turn.max(1);
        self
    }

    /// Numbers the next turn `turn` (1-based; 0 counts as 1); the turns
    /// after it count on from there. By default a new session's first turn
    /// is 1 and a resumed session's is 2.
    ///
    /// A caller that keeps no counter between processes (a state file holds
    /// only the window) can number each request as [`simulate`](crate::simulate)
    /// does: by the requests the transcript already holds,
    /// `request_ends(&transcript).len() + 1` — what `cupel chat --state`
    /// does, so its turn numbers match `cupel cache-sim`'s for the same
    /// transcript.
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, CacheSession, Message, Trim, request_ends};
    /// let transcript = vec![
    ///     Message::system("Be brief."),
    ///     Message::user("Hi"),
    ///     Message::assistant("Hello."),
    ///     Message::user("How are you?"),
    /// ];
    /// // One request was answered already: this is the second.
    /// let turn = request_ends(&transcript).len() + 1;
    /// let mut s = CacheSession::new(Trim::openai(1_000), CacheProfile::openai())
    ///     .turn_number(turn);
    /// assert_eq!(s.next(&transcript)?.turn, 2);
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn turn_number(mut self, turn: usize) -> Self {
        self.next_turn = Some(turn.max(1));
        self
    }

    /// [`turn_number`](Self::turn_number) in place.
    pub(crate) fn set_turn_number(&mut self, turn: usize) {
        self.next_turn = Some(turn.max(1));
    }

    /// Tells the session how long it has been since the previous request
    /// was sent. Longer than the profile's
    /// [`lifetime`](CacheProfile::lifetime), and the provider has dropped
    /// the cached prefix: the next turn expects nothing from the cache
    /// (everything it sends is written again, or uncached) and its line says
    /// so. The window itself is made as always — it keeps the previous one,
    /// which the provider then caches afresh for the turns after it.
    /// Returns whether the cache expired; a profile without a lifetime never
    /// expires, and a session with no previous window has nothing cached to
    /// lose (its first turn is never called expired). `cupel chat --state`
    /// takes the idle time from the state file's modification time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
    /// let mut t = vec![Message::system("Be brief. ".repeat(800)), Message::user("Hi")];
    /// let mut s = CacheSession::new(Trim::anthropic(10_000), CacheProfile::anthropic());
    /// s.next(&t)?;
    /// t.push(Message::assistant("Hello."));
    /// t.push(Message::user("Still there?"));
    /// assert!(s.idle(Duration::from_secs(7 * 60))); // Anthropic's entries live 5 minutes
    /// let turn = s.next(&t)?;
    /// assert_eq!(turn.usage.read, 0);
    /// assert!(turn.to_string().starts_with(
    ///     "turn 2: the cache had expired (7m since the previous request; a prefix lives 5m unused)"));
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn idle(&mut self, since_previous: Duration) -> bool {
        self.expired = self
            .profile
            .lifetime
            .filter(|lifetime| self.previous.is_some() && since_previous > *lifetime)
            .map(|lifetime| Expiry {
                idle: since_previous,
                lifetime,
            });
        self.expired.is_some()
    }

    /// The last window made (or resumed from).
    pub fn window(&self) -> Option<&[Message]> {
        self.previous.as_deref()
    }

    /// The profile.
    pub fn profile(&self) -> &CacheProfile {
        &self.profile
    }

    fn blocks(&self, messages: &[&Message], rows_tokens: &[i64]) -> Vec<Block> {
        messages
            .iter()
            .zip(rows_tokens)
            .map(|(m, &t)| Block::of(m, t, self.opts.format()))
            .collect()
    }

    /// Seeds the modelled cache with a resumed window, as if it was sent.
    fn seed(&mut self, opts: &Trim) -> Result<(), ChatError> {
        self.seed_pending = false;
        let Some(prev) = self.previous.clone() else {
            return Ok(());
        };
        let out = trim(&prev, &opts.clone().with_max_tokens(UNLIMITED))?;
        let refs: Vec<&Message> = prev.iter().collect();
        let tokens: Vec<i64> = out.rows.iter().map(|r| r.tokens).collect();
        let blocks = self.blocks(&refs, &tokens);
        let pinned = out
            .rows
            .iter()
            .take_while(|r| r.decision.is_pinned())
            .count();
        let frame = Frame::new(opts.tools.as_ref(), &out.tokens);
        let (bps, _) = frame.send(&mut self.cache, &blocks, pinned, None);
        self.prev_breakpoints = bps;
        self.prev_blocks = blocks;
        Ok(())
    }

    /// The units a turn forms (see [`granularity`](Self::granularity)).
    pub(crate) fn unit_granularity(&self) -> Granularity {
        self.granularity
    }

    /// The options of this turn's trims; refuses a budget that is not positive.
    fn turn_options(&self) -> Result<Trim, ChatError> {
        let max = self.opts.max_tokens();
        if max <= 0 {
            return Err(ChatError::InvalidBudget { max_tokens: max });
        }
        let opts = self
            .opts
            .clone()
            .without_recall()
            .granularity(self.granularity)
            .report(false);
        Ok(match self.recent_end {
            Some((_, task_pinned)) => opts.pin_first_user(task_pinned),
            None => opts,
        })
    }

    /// The window for `messages`, the whole transcript so far.
    ///
    /// The turn runs in phases over a private plan: `plan` (units and budget),
    /// `locate` (the previous window in the transcript), `cut` (only when
    /// the window would exceed the budget), `window` (the messages as
    /// sent), then the cache accounting and the rows.
    ///
    /// # Errors
    /// As [`trim`] (invalid budget, unknown encoding,
    /// pinned prompts over the budget, not even the newest unit fits);
    /// [`ChatError::InvalidLowWater`] / [`ChatError::InvalidLowWaterFraction`].
    /// A turn that fails sends nothing: the session keeps its previous
    /// window and turn number for the next call.
    pub fn next<'a>(&mut self, messages: &'a [Message]) -> Result<CacheTurn<'a>, ChatError> {
        self.next_checked(messages, Check::All)
    }

    /// [`next`](Self::next) from the recent end when the ledger allows,
    /// else on the whole transcript (the ledger rebuilt from it).
    fn next_checked<'a>(
        &mut self,
        messages: &'a [Message],
        check: Check,
    ) -> Result<CacheTurn<'a>, ChatError> {
        if let Some(turn) = self.next_recent(messages, check) {
            return Ok(turn);
        }
        let keep = self.compaction.is_none();
        self.ledger = None;
        self.rolled = None;
        self.recent_end = None;
        self.keep_digest(keep);
        let turn = self.next_whole(messages);
        if let (Ok(t), Some(d)) = (&turn, self.digest.take()) {
            let front = t.positions.get(t.pinned).copied();
            self.ledger = Some(Ledger::whole(messages, &self.opts, d, front));
        }
        self.keep_digest(false);
        turn
    }

    /// [`next`](Self::next) for a transcript that only grew at its end
    /// since the previous call (the agent loop that pushes to one `Vec`):
    /// the same window, but the messages before the previous window's
    /// recent end are not compared with what the session saw — only the
    /// pinned messages, the messages from the recent end on and the one
    /// before it are. A turn then costs the new messages and the window,
    /// whatever the history's length (`spec/20-prompt-cache.md`, "Turn
    /// cost"). An edit further back goes unseen: the rows and the history
    /// tokens of those messages stay as first counted, and the window is
    /// the one the unedited history gives. When in doubt use `next`, which
    /// compares every message's fingerprint (still without counting them
    /// again).
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
    /// let mut s = CacheSession::new(Trim::openai(120), CacheProfile::openai());
    /// let mut transcript = vec![Message::system("Be brief.")];
    /// for k in 0..40 {
    ///     transcript.push(Message::user(format!("Question {k}: how and why?")));
    ///     let turn = s.next_appended(&transcript)?;
    ///     assert!(turn.window_tokens <= 120);
    ///     assert_eq!(turn.rows.len(), transcript.len());
    ///     transcript.push(Message::assistant(format!("Answer {k}.")));
    /// }
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    ///
    /// # Errors
    /// As [`next`](Self::next).
    pub fn next_appended<'a>(
        &mut self,
        messages: &'a [Message],
    ) -> Result<CacheTurn<'a>, ChatError> {
        self.next_checked(messages, Check::Appended)
    }

    /// What the session learnt of the transcript behind its last turn (per
    /// message a fingerprint, the tokens, what the chat rules make of it;
    /// the units; the window's front), to keep with the window in a
    /// [`SessionState`](crate::SessionState): a session resumed from it
    /// with [`resume_ledger`](Self::resume_ledger) counts and plans only
    /// the messages from the recent end on. `None` before the first turn,
    /// after a failed one, and for a session with compaction.
    pub fn ledger(&self) -> Option<SessionLedger> {
        let plan = self.plan_key().ok()?;
        self.ledger.as_ref().map(|l| l.stored(plan))
    }

    /// Continues with a [`ledger`](Self::ledger) read back from a session
    /// state, after [`resume`](Self::resume) with the window of the same
    /// turn. The next turn checks it (every fingerprint against the
    /// transcript, the options against this session's) and plans the whole
    /// transcript when anything differs, so a stale or foreign ledger costs
    /// time, never a wrong window.
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
    /// let opts = Trim::openai(60);
    /// let mut t = vec![Message::system("Be brief.")];
    /// let mut live = CacheSession::new(opts.clone(), CacheProfile::openai());
    /// for k in 0..12 {
    ///     t.push(Message::user(format!("Question {k}, in some words.")));
    ///     live.next(&t)?;
    ///     t.push(Message::assistant(format!("Answer {k}.")));
    /// }
    /// t.push(Message::user("One more."));
    /// // Another process: the window and the ledger from the state.
    /// let window = live.window().map(<[Message]>::to_vec).unwrap_or_default();
    /// let ledger = live.ledger().expect("a turn was made");
    /// let mut resumed = CacheSession::new(opts, CacheProfile::openai())
    ///     .resume(window)
    ///     .resume_ledger(ledger);
    /// assert_eq!(resumed.next(&t)?.positions, live.next(&t)?.positions);
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn resume_ledger(mut self, ledger: SessionLedger) -> Self {
        self.ledger = self
            .plan_key()
            .ok()
            .and_then(|plan| Ledger::restore(ledger, &plan));
        self
    }

    /// The options a ledger depends on, fingerprinted (any change plans
    /// the whole transcript again).
    fn plan_key(&self) -> Result<String, ChatError> {
        let opts = self.turn_options()?;
        let text = format!("{opts:?} {:?}", self.granularity);
        Ok(format!(
            "fnv64:{:016x}",
            crate::cache::state::fnv64(text.as_bytes())
        ))
    }

    /// Asks [`send`](Self::send) for the plan's digest (or not).
    fn keep_digest(&mut self, keep: bool) {
        self.digest = keep.then(Digest::default);
    }

    /// [`next`](Self::next) on the ledger's roll: the pinned messages and
    /// the messages from the boundary at or before the previous window's
    /// front on (`spec/20-prompt-cache.md`, "Turn cost"). `None` when the
    /// ledger does not hold `messages`' older part, no boundary qualifies,
    /// or the session does not find its previous window there; the session
    /// is then unchanged and the caller plans the whole transcript.
    fn next_recent<'a>(&mut self, messages: &'a [Message], check: Check) -> Option<CacheTurn<'a>> {
        let mut ledger = self.ledger.take()?;
        if self.compaction.is_some() {
            return None;
        }
        let at = ledger.recent_end(messages, &self.opts, check)?;
        if self.seed_pending {
            // A resumed window (with a ledger from the state): seeded once.
            let opts = self.turn_options().ok()?;
            if self.seed(&opts).is_err() {
                self.seed_pending = true;
                return None;
            }
        }
        let roll = ledger.take_roll();
        self.recent_end = Some((at.unit_base, at.task_pinned));
        self.rolled = Some(at.clone());
        self.keep_digest(true);
        let found = self.next_found(&roll);
        self.recent_end = None;
        self.rolled = None;
        let digest = self.digest.take();
        let turn = found.ok().flatten()?;
        #[cfg(test)]
        crate::cache::sim::RECENT_TURNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let out = lift(turn, messages, &ledger, &at);
        let front = out.positions.get(out.pinned).copied();
        ledger.settle(messages, &at, (digest.unwrap_or_default(), roll, front));
        self.ledger = Some(ledger);
        Some(out)
    }

    /// The turn of the whole transcript `messages` (no ledger).
    pub(crate) fn next_whole<'a>(
        &mut self,
        messages: &'a [Message],
    ) -> Result<CacheTurn<'a>, ChatError> {
        let (plan, previous, opts) = self.prepare(messages)?;
        let compaction = self.compaction.clone();
        let report = match &compaction {
            Some(c) => Some(self.folding(&plan, c, &opts)?.run()),
            None => None,
        };
        self.complete(plan, previous, &opts, report)
    }

    /// [`next`](Self::next) when the session finds its previous window in
    /// `messages` under the same pins; `Ok(None)`, the session unchanged,
    /// when it does not (a first window, changed pins, a window not found).
    /// A replay that hands the session a request's recent end (`suffix`)
    /// needs the previous window there.
    pub(crate) fn next_found<'a>(
        &mut self,
        messages: &'a [Message],
    ) -> Result<Option<CacheTurn<'a>>, ChatError> {
        if self.seed_pending || self.compaction.is_some() {
            return Ok(None);
        }
        let (mut plan, previous, opts) = self.prepare(messages)?;
        if matches!(
            plan.broke,
            Some(PrefixBreak::NoPrevious | PrefixBreak::NotFound | PrefixBreak::PinnedChanged)
        ) {
            self.previous = previous;
            self.memo = std::mem::take(&mut plan.forms.memo);
            return Ok(None);
        }
        self.complete(plan, previous, &opts, None).map(Some)
    }

    /// [`next`](Self::next) with an async summariser: the same window,
    /// the fold made by `summarizer` (the bound and the starting summary
    /// from [`summarize`](Self::summarize)'s [`Compaction`], e.g.
    /// [`Compaction::for_async`]). Without compaction it is `next`.
    ///
    /// # Errors
    /// As [`next`](Self::next).
    pub async fn next_async<'a>(
        &mut self,
        messages: &'a [Message],
        summarizer: &dyn AsyncSummarizer,
    ) -> Result<CacheTurn<'a>, ChatError> {
        self.ledger = None;
        let (plan, previous, opts) = self.prepare(messages)?;
        let compaction = self.compaction.clone();
        let report = match &compaction {
            Some(c) => Some(self.folding(&plan, c, &opts)?.run_async(summarizer).await),
            None => None,
        };
        self.complete(plan, previous, &opts, report)
    }

    /// Phases `plan`, `locate` and `cut`; the previous window is taken for
    /// the turn and put back if the turn fails.
    #[allow(clippy::type_complexity)]
    fn prepare<'a>(
        &mut self,
        messages: &'a [Message],
    ) -> Result<(Plan<'a>, Option<Vec<Message>>, Trim), ChatError> {
        let opts = self.turn_options()?;
        if self.seed_pending {
            self.seed(&opts)?;
        }
        if self.expired.is_some() {
            // The provider dropped every entry: nothing is read this turn.
            self.cache = PromptCache::new(self.profile.clone());
        }
        let memo = std::mem::take(&mut self.memo);
        let previous = self.previous.take();
        // The previous window without its summary message: the transcript
        // does not hold it.
        let conversation = previous.as_ref().map(|p| {
            let mut p = p.clone();
            if let Some(s) = &self.summary
                && let Some(i) = p
                    .iter()
                    .position(|m| is_summary_message(m, opts.format(), s))
            {
                p.remove(i);
            }
            p
        });
        let planned = Plan::new(self, messages, &opts, memo).and_then(|mut plan| {
            plan.locate(conversation.as_deref());
            if plan.conversation_tokens() > plan.available {
                plan.cut(&opts)?;
            }
            Ok(plan)
        });
        match planned {
            Ok(plan) => Ok((plan, previous, opts)),
            Err(e) => {
                self.previous = previous;
                Err(e)
            }
        }
    }

    /// The fold of this turn: the units removed since the running summary
    /// was made, when the turn cut (none otherwise: the summary stays).
    fn folding<'c>(
        &self,
        plan: &Plan<'c>,
        c: &'c Compaction,
        opts: &Trim,
    ) -> Result<Folding<'c>, ChatError> {
        let pinned: Vec<Message> = plan
            .pinned
            .iter()
            .map(|&p| plan.messages[p].clone())
            .collect();
        let after = self.summary.as_ref().and_then(|s| s.through);
        let mut positions: Vec<usize> = Vec::new();
        if plan.cut.is_some() {
            let front_pos = plan.eligible.get(plan.front).map(|e| e.pos);
            for e in &plan.eligible[..plan.front] {
                if Some(e.pos) != front_pos
                    && after.is_none_or(|t| e.pos > t)
                    && positions.last() != Some(&e.pos)
                {
                    positions.push(e.pos);
                }
            }
        }
        let unit_of = |p: usize| plan.eligible.iter().find(|e| e.pos == p).map(|e| e.unit);
        let evicted = units(plan.messages, &positions, unit_of);
        let evicted_tokens = evicted
            .iter()
            .flat_map(|e| e.positions.iter())
            .map(|&p| plan.full.rows[p].tokens)
            .fold(0i64, i64::saturating_add);
        Ok(Folding {
            format: opts.format(),
            counter: opts.make_counter()?,
            at: pinned.len(),
            pinned,
            compaction: c,
            previous: self.summary.clone(),
            evicted,
            evicted_tokens,
            turn: Some(self.next_turn.unwrap_or(self.turn + 1)),
        })
    }

    /// Phase `window` with the summary in place, then [`send`](Self::send).
    fn complete<'a>(
        &mut self,
        mut plan: Plan<'a>,
        previous: Option<Vec<Message>>,
        opts: &Trim,
        report: Option<SummaryReport>,
    ) -> Result<CacheTurn<'a>, ChatError> {
        let mut w = plan.window();
        if let Some(r) = &report {
            if let Some(m) = &r.message {
                let at = r.at.min(w.as_sent.len());
                w.as_sent.insert(at, m.clone());
                w.tokens.insert(at, r.tokens());
            }
            self.summary = r.summary.clone();
        }
        self.send(plan, w, previous, opts, report)
    }

    /// Bills the window, remembers it, and makes the turn.
    fn send<'a>(
        &mut self,
        mut plan: Plan<'a>,
        w: Window<'a>,
        previous: Option<Vec<Message>>,
        opts: &Trim,
        summary: Option<SummaryReport>,
    ) -> Result<CacheTurn<'a>, ChatError> {
        let kept_prefix = match &previous {
            Some(prev) => prev
                .iter()
                .zip(&w.as_sent)
                .take_while(|(a, b)| a == b)
                .count(),
            None => 0,
        };
        let kept_prefix_tokens = w.tokens[..kept_prefix]
            .iter()
            .copied()
            .fold(0, i64::saturating_add);
        // The kept prefix is the previous window's, byte for byte: its
        // hashes are known; only the rest is serialised and hashed.
        let known = kept_prefix.min(self.prev_blocks.len());
        let blocks: Vec<Block> = self.prev_blocks[..known]
            .iter()
            .zip(&w.tokens)
            .map(|(b, &t)| Block {
                tokens: t.max(0),
                ..*b
            })
            .chain(
                w.as_sent[known..]
                    .iter()
                    .zip(&w.tokens[known..])
                    .map(|(m, &t)| Block::of(m, t, self.opts.format())),
            )
            .collect();
        let reuse_at = self
            .prev_breakpoints
            .iter()
            .copied()
            .filter(|&b| b <= kept_prefix)
            .max();
        let frame = Frame::new(opts.tools.as_ref(), &plan.full.tokens);
        let (breakpoints, usage) =
            frame.send(&mut self.cache, &blocks, plan.pinned.len(), reuse_at);
        let conv_tokens: i64 = w.tokens.iter().copied().fold(0, i64::saturating_add);
        // A one-task agent loop (a pinned task and no user message after
        // it) is all the task's tail, where every unit is one message or
        // one tool group whatever the granularity: it is told so.
        let granularity = if plan.task_tail_only() {
            Granularity::Message
        } else {
            self.granularity
        };
        let rows = plan.rows(kept_prefix, granularity);
        if self.digest.is_some() {
            self.digest = Some(plan.digest());
        }
        self.memo = std::mem::take(&mut plan.forms.memo);
        self.turn = self.next_turn.take().unwrap_or(self.turn + 1);
        let expired = self.expired.take();
        self.previous = Some(w.as_sent);
        self.prev_blocks = blocks;
        self.prev_breakpoints = breakpoints.clone();
        let Plan {
            full,
            pinned,
            fixed,
            low_conv,
            broke,
            cut,
            removed,
            sent,
            ..
        } = plan;
        Ok(CacheTurn {
            turn: self.turn,
            messages: w.messages,
            positions: w.positions,
            pinned: pinned.len(),
            window_tokens: full.tokens.overhead.saturating_add(conv_tokens),
            max_tokens: opts.max_tokens(),
            low_water: fixed.saturating_add(low_conv),
            history_tokens: w.history,
            kept_prefix,
            kept_prefix_tokens,
            broke,
            cut,
            removed,
            breakpoints,
            cost: self.profile.cost(&usage),
            usage,
            rows,
            shortened: sent.into_iter().map(|(p, f)| (p, f.0)).collect(),
            expired,
            summary,
            granularity,
        })
    }
}

/// One eligible piece of the conversation: a message, or one half of a
/// mixed Anthropic turn (see [`Message::is_mixed_turn`]).
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Input position of its message.
    pos: usize,
    /// Its unit (in the full trim).
    unit: usize,
    /// Its tokens, whole.
    tokens: i64,
    half: Half,
}

/// The window a turn sends.
struct Window<'a> {
    messages: Vec<&'a Message>,
    positions: Vec<usize>,
    /// The window as sent (forms applied), owned: the next turn's previous window.
    as_sent: Vec<Message>,
    tokens: Vec<i64>,
    history: i64,
}

/// One turn's state, phase by phase.
struct Plan<'a> {
    messages: &'a [Message],
    full: Trimmed<'a>,
    /// Pinned positions (prompts, and the task when pinned).
    pinned: Vec<usize>,
    eligible: Vec<Slot>,
    /// Pinned tokens and the request overhead.
    fixed: i64,
    available: i64,
    low_conv: i64,
    forms: Forms<'a>,
    /// The text half of each mixed turn as sent alone, by position.
    text_halves: BTreeMap<usize, Message>,
    /// Where the previous window starts among `eligible`, and how many
    /// pieces of it follow there.
    start: usize,
    matched: usize,
    front: usize,
    broke: Option<PrefixBreak>,
    cut: Option<Cut>,
    removed: Vec<usize>,
    /// The form each window message is sent in when not as read: an aged
    /// result, or a mixed turn's text half at the front.
    sent: BTreeMap<usize, (Message, i64)>,
    /// Each eligible piece's unit number (1-based).
    unit_rank: Vec<usize>,
    /// Where the messages sit in the transcript, when they are a ledger's
    /// roll (reasons name input positions).
    origin: Option<RecentEnd>,
}

impl<'a> Plan<'a> {
    /// Whether the conversation is all its pinned task's tail: a task is
    /// pinned and no user message follows it, so every unit is one message
    /// or one tool group (the trim's `group` phase).
    fn task_tail_only(&self) -> bool {
        self.pinned_task().is_some_and(|task| {
            !self.messages[task + 1..]
                .iter()
                .any(crate::cache::suffix::counts_as_user)
        })
    }

    /// The position of the task the full trim pinned, if any (rows are one
    /// per message, in order).
    fn pinned_task(&self) -> Option<usize> {
        self.full
            .rows
            .iter()
            .position(|r| matches!(r.decision, Decision::PinnedTask { .. }))
    }

    /// Phase `plan`: the full trim's units, the pinned prefix, the budget
    /// left and the low-water mark.
    fn new(
        session: &CacheSession,
        messages: &'a [Message],
        opts: &Trim,
        memo: Memo,
    ) -> Result<Self, ChatError> {
        let max = opts.max_tokens();
        let full = trim(messages, &opts.clone().with_max_tokens(UNLIMITED))?;
        let overhead = full.tokens.overhead;
        let pinned: Vec<usize> = full
            .rows
            .iter()
            .filter(|r| r.decision.is_pinned())
            .map(|r| r.position)
            .collect();
        let eligible: Vec<Slot> = full
            .pieces
            .iter()
            .filter(|p| p.kept && !full.rows[p.msg].decision.is_pinned())
            .map(|p| Slot {
                pos: p.msg,
                unit: p.unit.unwrap_or(usize::MAX - p.msg),
                tokens: p.tokens,
                half: p.half,
            })
            .collect();
        let fixed = overhead.saturating_add(full.tokens.pinned);
        if fixed > max {
            return Err(ChatError::PinnedOverBudget {
                pinned_tokens: full.tokens.pinned,
                overhead_tokens: overhead,
                total: fixed,
                max_tokens: max,
            });
        }
        // A session with compaction holds the summary's bound back.
        let reserve = session.compaction.as_ref().map_or(0, |c| c.max_tokens);
        if reserve > 0 && fixed.saturating_add(reserve) >= max {
            return Err(ChatError::SummaryReserve {
                reserve,
                max_tokens: max,
            });
        }
        let available = max - fixed - reserve;
        let low_conv = match session.low_water {
            LowWater::Auto if session.compaction.is_some() => session
                .profile
                .default_low_water(available)
                .min(newest_messages_tokens(&eligible, SUMMARY_KEEP_MESSAGES)),
            LowWater::Auto => session.profile.default_low_water(available),
            LowWater::Tokens(t) => {
                if !(0..=max).contains(&t) {
                    return Err(ChatError::InvalidLowWater {
                        low_water: t,
                        max_tokens: max,
                    });
                }
                (t - fixed).clamp(0, available)
            }
            LowWater::Fraction(f) => {
                if !(f > 0.0 && f <= 1.0) {
                    return Err(ChatError::InvalidLowWaterFraction { fraction: f });
                }
                ((available as f64 * f).floor() as i64).clamp(0, available)
            }
        };
        let mut forms = Forms::new(&session.opts, messages);
        forms.memo = memo;
        let mut unit_rank = Vec::with_capacity(eligible.len());
        let mut rank = session.recent_end.map_or(0, |(base, _)| base);
        for i in 0..eligible.len() {
            if i == 0 || eligible[i - 1].unit != eligible[i].unit {
                rank += 1;
            }
            unit_rank.push(rank);
        }
        Ok(Plan {
            messages,
            full,
            pinned,
            eligible,
            fixed,
            available,
            low_conv,
            forms,
            text_halves: BTreeMap::new(),
            start: 0,
            matched: 0,
            front: 0,
            broke: None,
            cut: None,
            removed: Vec::new(),
            sent: BTreeMap::new(),
            unit_rank,
            origin: session.rolled.clone(),
        })
    }

    fn unit_start(&self, i: usize) -> bool {
        i == 0 || self.eligible[i - 1].unit != self.eligible[i].unit
    }

    /// The text half of the mixed turn at `pos`, as sent alone.
    fn text_half(&mut self, pos: usize) -> Message {
        let messages = self.messages;
        self.text_halves
            .entry(pos)
            .or_insert_with(|| messages[pos].half(false))
            .clone()
    }

    /// The message a window holds when it has the pieces from `j` on: the
    /// message at `j`, whole or (a mixed turn's text half alone) rewritten,
    /// and the first piece after it.
    fn slot(&self, j: usize) -> (usize, usize) {
        let e = self.eligible[j];
        let pair = e.half == Half::Results
            && self
                .eligible
                .get(j + 1)
                .is_some_and(|n| n.pos == e.pos && n.half == Half::Text);
        (e.pos, if pair { j + 2 } else { j + 1 })
    }

    /// Whether `was` (a message of the previous window) is what the
    /// window holds at piece `j`.
    fn same(&mut self, j: usize, was: &Message) -> Option<Option<(Message, i64)>> {
        let e = self.eligible[j];
        match e.half {
            Half::Text => {
                let half = self.text_half(e.pos);
                (&half == was).then_some(Some((half, e.tokens)))
            }
            _ if &self.messages[e.pos] == was => Some(None),
            _ => self.forms.matching(e.pos, e.tokens, was).map(Some),
        }
    }

    /// Phase `locate`: where the previous window's conversation starts
    /// among the eligible pieces, how much of it follows there, and why
    /// the prefix is not all kept. Sets the forms the kept prefix was sent in.
    fn locate(&mut self, previous: Option<&[Message]>) {
        let (start, matched, broke, forms) = self.find(previous);
        self.start = start;
        self.matched = matched;
        self.front = start;
        self.broke = broke;
        self.sent = forms;
    }

    #[allow(clippy::type_complexity)]
    fn find(
        &mut self,
        previous: Option<&[Message]>,
    ) -> (
        usize,
        usize,
        Option<PrefixBreak>,
        BTreeMap<usize, (Message, i64)>,
    ) {
        let none = BTreeMap::new;
        let Some(prev) = previous else {
            return (0, 0, Some(PrefixBreak::NoPrevious), none());
        };
        let p = self.pinned.len();
        if prev.len() < p
            || self
                .pinned
                .iter()
                .zip(prev)
                .any(|(&i, m)| &self.messages[i] != m)
        {
            return (0, 0, Some(PrefixBreak::PinnedChanged), none());
        }
        let prev_conv = &prev[p..];
        let Some(first) = prev_conv.first() else {
            // The previous window was the pinned messages alone (or became
            // them: a task pinned since): all of it is kept.
            return (0, 0, None, none());
        };
        // (messages matched, start piece, pieces matched, forms)
        let mut best: Option<(usize, usize, usize, BTreeMap<usize, (Message, i64)>)> = None;
        for j in 0..self.eligible.len() {
            if !self.unit_start(j) || self.same(j, first).is_none() {
                continue;
            }
            let (mut k, mut m) = (j, 0usize);
            let mut forms = BTreeMap::new();
            while m < prev_conv.len() && k < self.eligible.len() {
                let Some(form) = self.same(k, &prev_conv[m]) else {
                    break;
                };
                let (pos, next) = self.slot(k);
                if let Some(f) = form {
                    forms.insert(pos, f);
                }
                m += 1;
                k = next;
            }
            if best.as_ref().is_none_or(|b| m >= b.0) {
                best = Some((m, j, k - j, forms));
            }
        }
        match best {
            // The previous window's first message no longer starts a unit
            // (a late tool result joined its unit to an older one): the
            // window began inside that unit, so the session starts there;
            // what precedes the unit was cut by earlier turns (a session
            // planned from its recent end sees the same).
            None => {
                let start = (0..self.eligible.len())
                    .find(|&j| self.same(j, first).is_some())
                    .and_then(|j| (0..=j).rev().find(|&i| self.unit_start(i)))
                    .unwrap_or(0);
                (start, 0, Some(PrefixBreak::NotFound), none())
            }
            Some((m, j, k, forms)) if m < prev_conv.len() => {
                (j, k, Some(PrefixBreak::Diverged { at: p + m }), forms)
            }
            Some((_, j, k, forms)) => (j, k, None, forms),
        }
    }

    /// Piece `i`'s tokens as sent.
    fn tok(&self, i: usize) -> i64 {
        let e = self.eligible[i];
        match (e.half, self.sent.get(&e.pos)) {
            (Half::Whole, Some(f)) => f.1,
            _ => e.tokens,
        }
    }

    fn tokens_of(&self, range: std::ops::Range<usize>) -> i64 {
        range.map(|i| self.tok(i)).fold(0, i64::saturating_add)
    }

    /// The conversation's tokens from the previous window's start on.
    fn conversation_tokens(&self) -> i64 {
        self.tokens_of(self.start..self.eligible.len())
    }

    /// Phase `cut`: once and deep, whole units from the front while the
    /// window is over the budget or stays at or above the low-water mark
    /// without them; then the provider rules; then (ageing) old results
    /// shortened at the cut.
    fn cut(&mut self, opts: &Trim) -> Result<(), ChatError> {
        let (start, available, low_conv) = (self.start, self.available, self.low_conv);
        let n = self.eligible.len();
        let conv = self.conversation_tokens();
        let mut remaining = conv;
        let mut idx = start;
        let mut reason = CutFront::Newest;
        while idx < n {
            let mut end = idx + 1;
            while end < n && !self.unit_start(end) {
                end += 1;
            }
            if end == n {
                break;
            }
            let u_tok = self.tokens_of(idx..end);
            let must = remaining > available;
            let may = remaining - u_tok >= low_conv;
            if !(must || may) {
                reason = CutFront::Mark;
                break;
            }
            remaining -= u_tok;
            idx = end;
        }
        let new_front = self.provider_front(idx, remaining, opts)?;
        if new_front > idx {
            reason = CutFront::ProviderRule;
        }
        if self.eligible[new_front].half == Half::Text {
            // The window starts at a mixed turn's text: it is sent without
            // the results whose calls the cut removed.
            let pos = self.eligible[new_front].pos;
            let form = self.text_half(pos);
            self.sent
                .insert(pos, (form, self.eligible[new_front].tokens));
        }
        let mut remaining = self.tokens_of(new_front..n);
        let (shortened, shortened_saved) = self.age_at_least(new_front, &mut remaining);
        if remaining > available {
            return Err(self.nothing_fits(new_front, remaining));
        }
        let front_unit = self.unit_rank.get(new_front).copied().unwrap_or(0);
        let front_unit_tokens = (new_front..n)
            .take_while(|&i| self.unit_rank[i] == front_unit)
            .map(|i| self.tok(i))
            .fold(0, i64::saturating_add);
        // Messages removed: those wholly before the front.
        let mut removed: Vec<usize> = self.eligible[start..new_front]
            .iter()
            .map(|e| e.pos)
            .collect();
        removed.dedup();
        removed.retain(|&p| self.eligible[new_front].pos != p);
        self.cut = Some(Cut {
            reached: self.fixed.saturating_add(conv),
            first_unit: self.unit_rank.get(start).copied().unwrap_or(0),
            last_unit: self
                .unit_rank
                .get(new_front.saturating_sub(1).max(start))
                .copied()
                .unwrap_or(0),
            removed_messages: removed.len(),
            removed_tokens: self.tokens_of(start..new_front),
            front_unit,
            front_unit_tokens,
            front_reason: reason,
            shortened,
            shortened_saved,
        });
        self.removed = removed;
        self.front = new_front;
        self.broke = Some(PrefixBreak::Cut);
        Ok(())
    }

    /// The first piece from `idx` on that may start a conversation, as the
    /// chat crate's own trim decides it (the provider rules).
    fn provider_front(
        &mut self,
        idx: usize,
        remaining: i64,
        opts: &Trim,
    ) -> Result<usize, ChatError> {
        let mut subset: Vec<Message> = self
            .pinned
            .iter()
            .map(|&p| self.messages[p].clone())
            .collect();
        let mut starts = Vec::new();
        let mut k = idx;
        while k < self.eligible.len() {
            let (pos, next) = self.slot(k);
            subset.push(match self.eligible[k].half {
                Half::Text => self.text_half(pos),
                _ => self.messages[pos].clone(),
            });
            starts.push(k);
            k = next;
        }
        let task = self.pinned_task().is_some();
        let check = opts.clone().with_max_tokens(UNLIMITED).pin_first_user(task);
        // No conversation left after the rules (`NoConversation`, which
        // would count the subset's messages) is this cut's `NothingFits`.
        let first_kept = match trim(&subset, &check) {
            Ok(c) => c
                .positions
                .iter()
                .copied()
                .find(|&p| p >= self.pinned.len()),
            Err(ChatError::NoConversation { .. }) => None,
            Err(e) => return Err(e),
        };
        match first_kept.and_then(|f| starts.get(f - self.pinned.len())) {
            Some(&front) => Ok(front),
            None => Err(self.nothing_fits(idx, remaining)),
        }
    }

    /// Nothing fits from `eligible[at]` on: `tokens` over `available`,
    /// named by the transcript's own positions.
    fn nothing_fits(&self, at: usize, tokens: i64) -> ChatError {
        let first = self.eligible.get(at).map_or(0, |e| e.pos);
        let last = self.eligible.last().map_or(first, |e| e.pos);
        ChatError::NothingFits {
            position: first,
            label: self
                .messages
                .get(first)
                .map(Message::label)
                .unwrap_or_default(),
            last_position: last,
            unit_messages: last.saturating_sub(first) + 1,
            whole_conversation: at == 0,
            unit_tokens: tokens,
            available_tokens: self.available,
        }
    }

    /// Ageing at the cut: everything after the pinned prompts is sent
    /// afresh anyway, so old tool results shrink here at no cache cost,
    /// oldest first, each to the shortest form that keeps the window at or
    /// above the mark (any form while over the budget).
    /// [`age`](Self::age), undone when it frees less than the ageing's
    /// `clear_at_least` and the window fits without it.
    fn age_at_least(&mut self, front: usize, remaining: &mut i64) -> (usize, i64) {
        let min = self
            .forms
            .aging
            .as_ref()
            .map_or(0, AgeToolResults::min_clear);
        let (before_sent, before) = (self.sent.clone(), *remaining);
        let (n, saved) = self.age(front, remaining);
        if n > 0 && saved < min && before <= self.available {
            self.sent = before_sent;
            *remaining = before;
            return (0, 0);
        }
        (n, saved)
    }

    fn age(&mut self, front: usize, remaining: &mut i64) -> (usize, i64) {
        let (mut shortened, mut saved) = (0usize, 0i64);
        let Some(aged) = self.forms.aged() else {
            return (0, 0);
        };
        let (available, low_conv) = (self.available, self.low_conv);
        for i in front..self.eligible.len() {
            let e = self.eligible[i];
            if *remaining <= low_conv && *remaining <= available {
                break;
            }
            if !aged[e.pos] || e.half != Half::Whole {
                continue;
            }
            let cur = self.tok(i);
            let over = *remaining > available;
            let after = |t: i64| *remaining - (cur - t);
            let smaller: Vec<(Message, i64)> = self
                .forms
                .forms_at(e.pos, e.tokens)
                .iter()
                .filter(|(_, t)| *t < cur)
                .cloned()
                .collect();
            // The shortest form that keeps the mark; over the budget, the
            // first that brings the window within it, or the shortest.
            let pick = smaller
                .iter()
                .rev()
                .find(|(_, t)| after(*t) >= low_conv)
                .or_else(|| {
                    over.then(|| {
                        smaller
                            .iter()
                            .find(|(_, t)| after(*t) <= available)
                            .or(smaller.last())
                    })
                    .flatten()
                })
                .cloned();
            if let Some((m, t)) = pick {
                self.sent.insert(e.pos, (m, t));
                *remaining -= cur - t;
                shortened += 1;
                saved = saved.saturating_add(cur - t);
            }
        }
        (shortened, saved)
    }

    /// Phase `window`: the pinned prompts, then every piece from the front.
    fn window(&mut self) -> Window<'a> {
        // Keep the forms of the window's messages only.
        let front_pos = self.eligible.get(self.front).map_or(usize::MAX, |e| e.pos);
        self.sent.retain(|&p, _| p >= front_pos);
        let mut positions: Vec<usize> = self.pinned.clone();
        let mut k = self.front;
        while k < self.eligible.len() {
            let (pos, next) = self.slot(k);
            positions.push(pos);
            k = next;
        }
        let messages = self.messages;
        let originals: Vec<&'a Message> = positions.iter().map(|p| &messages[*p]).collect();
        let as_sent: Vec<Message> = positions
            .iter()
            .map(|p| self.sent.get(p).map_or(&messages[*p], |f| &f.0).clone())
            .collect();
        let tokens: Vec<i64> = positions
            .iter()
            .map(|p| self.sent.get(p).map_or(self.full.rows[*p].tokens, |f| f.1))
            .collect();
        let history = self
            .eligible
            .iter()
            .map(|e| e.tokens)
            .fold(self.fixed, i64::saturating_add);
        Window {
            messages: originals,
            positions,
            as_sent,
            tokens,
            history,
        }
    }

    /// One row per input message.
    fn rows(&self, kept_prefix: usize, granularity: Granularity) -> Vec<CacheRow<'a>> {
        let unit_noun = match granularity {
            Granularity::Exchange => "exchange",
            Granularity::Turn => "turn",
            _ => "message",
        };
        // Eligible index of each input position's last piece (None: pinned
        // or dropped).
        let mut at = vec![None; self.messages.len()];
        for (i, e) in self.eligible.iter().enumerate() {
            at[e.pos] = Some(i);
        }
        // Window positions in the unchanged prefix.
        let prefix_end = kept_prefix.saturating_sub(self.pinned.len());
        let mut in_window = 0usize;
        self.full
            .rows
            .iter()
            .map(|r| {
                let status = match (&r.decision, at[r.position]) {
                    (Decision::Pinned, _) => CacheStatus::Pinned,
                    (Decision::PinnedTask { .. }, _) => CacheStatus::PinnedTask,
                    (_, None) => CacheStatus::Dropped {
                        reason: self.reason(r),
                    },
                    (_, Some(i)) if i < self.start => CacheStatus::EarlierCut,
                    (_, Some(i)) if i < self.front => CacheStatus::Cut {
                        unit: self.unit_rank[i],
                    },
                    (_, Some(i)) => {
                        in_window += 1;
                        if in_window <= prefix_end {
                            CacheStatus::Prefix
                        } else if i < self.start + self.matched {
                            CacheStatus::Resent
                        } else {
                            CacheStatus::New
                        }
                    }
                };
                CacheRow {
                    position: r.position,
                    message: r.message,
                    tokens: r.tokens,
                    sent_tokens: self.sent.get(&r.position).map(|f| f.1),
                    status,
                    unit_noun,
                }
            })
            .collect()
    }
}

impl Plan<'_> {
    /// The trim's reason for row `r`, naming input positions.
    fn reason(&self, r: &MessageRow<'_>) -> String {
        match &self.origin {
            Some(at) => {
                let mut r = r.clone();
                r.decision = at_input(&r.decision, at);
                r.reason()
            }
            None => r.reason(),
        }
    }

    /// What the ledger keeps of this plan.
    fn digest(&self) -> Digest {
        let n = self.messages.len();
        let mut eligible = vec![0i64; n];
        for e in &self.eligible {
            eligible[e.pos] = eligible[e.pos].saturating_add(e.tokens);
        }
        let mut kept = vec![false; n];
        for e in &self.eligible {
            kept[e.pos] = true;
        }
        let entries = self
            .full
            .rows
            .iter()
            .map(|r| {
                let kind = match (&r.decision, kept[r.position]) {
                    (Decision::Pinned, _) => Kind::Pinned,
                    (Decision::PinnedTask { .. }, _) => Kind::PinnedTask,
                    (_, true) => Kind::Eligible,
                    (_, false) => Kind::Dropped(self.reason(r)),
                };
                (r.tokens, eligible[r.position], kind)
            })
            .collect();
        // Units with a piece before each position (as `unit_rank` numbers them).
        let mut units_before = vec![0usize; n + 1];
        let mut rank = self.unit_rank.first().map_or(0, |&r| r.saturating_sub(1));
        if self.eligible.is_empty() {
            rank = self.origin.as_ref().map_or(0, |at| at.unit_base);
        }
        let mut next = 0usize;
        for (e, &r) in self.eligible.iter().zip(&self.unit_rank) {
            while next <= e.pos {
                units_before[next] = rank;
                next += 1;
            }
            rank = r;
        }
        for u in &mut units_before[next..] {
            *u = rank;
        }
        Digest {
            entries,
            units_before,
            task_pinned: self.pinned_task().is_some(),
        }
    }
}

/// `d` with the roll positions it names as input positions.
fn at_input(d: &Decision, at: &RecentEnd) -> Decision {
    match d {
        Decision::WithOrphan { position } => Decision::WithOrphan {
            position: at.position(*position),
        },
        Decision::OlderThanCut { cut_position } => Decision::OlderThanCut {
            cut_position: at.position(*cut_position),
        },
        Decision::Partial {
            kept,
            tokens,
            call_ids,
            dropped,
        } => Decision::Partial {
            kept: *kept,
            tokens: *tokens,
            call_ids: call_ids.clone(),
            dropped: Box::new(at_input(dropped, at)),
        },
        other => other.clone(),
    }
}

/// A turn made on the ledger's roll, told in the transcript's positions:
/// the rows of the messages before the boundary come from the ledger
/// (older than the previous window: cut by an earlier turn, or left out by
/// the rules), the rest from the turn.
fn lift<'a>(
    turn: CacheTurn<'_>,
    messages: &'a [Message],
    ledger: &Ledger,
    at: &RecentEnd,
) -> CacheTurn<'a> {
    let pos = |i: usize| at.position(i);
    let n = at.pins.len();
    let unit_noun = turn.rows.first().map_or("exchange", |r| r.unit_noun);
    let lifted = |r: &CacheRow<'_>| CacheRow {
        position: pos(r.position),
        message: &messages[pos(r.position)],
        tokens: r.tokens,
        status: r.status.clone(),
        sent_tokens: r.sent_tokens,
        unit_noun: r.unit_noun,
    };
    let mut rows = Vec::with_capacity(at.start + turn.rows.len() - n);
    let mut pin = 0usize;
    for (p, m) in messages[..at.start].iter().enumerate() {
        if at.pins.get(pin) == Some(&p) {
            rows.push(lifted(&turn.rows[pin]));
            pin += 1;
            continue;
        }
        let e = ledger.entry(p);
        rows.push(CacheRow {
            position: p,
            message: m,
            tokens: e.tokens,
            status: match &e.kind {
                Kind::Dropped(reason) => CacheStatus::Dropped {
                    reason: reason.clone(),
                },
                Kind::Pinned => CacheStatus::Pinned,
                Kind::PinnedTask => CacheStatus::PinnedTask,
                Kind::Eligible => CacheStatus::EarlierCut,
            },
            sent_tokens: None,
            unit_noun,
        });
    }
    rows.extend(turn.rows[n..].iter().map(lifted));
    let positions: Vec<usize> = turn.positions.iter().map(|&i| pos(i)).collect();
    CacheTurn {
        messages: positions.iter().map(|&p| &messages[p]).collect(),
        positions,
        history_tokens: turn
            .history_tokens
            .saturating_add(ledger.eligible_before(at.start)),
        removed: turn.removed.iter().map(|&i| pos(i)).collect(),
        shortened: turn
            .shortened
            .into_iter()
            .map(|(i, m)| (pos(i), m))
            .collect(),
        rows,
        turn: turn.turn,
        pinned: turn.pinned,
        window_tokens: turn.window_tokens,
        max_tokens: turn.max_tokens,
        low_water: turn.low_water,
        kept_prefix: turn.kept_prefix,
        kept_prefix_tokens: turn.kept_prefix_tokens,
        broke: turn.broke,
        cut: turn.cut,
        breakpoints: turn.breakpoints,
        usage: turn.usage,
        cost: turn.cost,
        expired: turn.expired,
        summary: turn.summary,
        granularity: turn.granularity,
    }
}

/// The shorter forms of a transcript's old tool results for one turn of a
/// session with [`Trim::age_tool_results`], computed on demand and kept
/// across turns (by input position, with the original they were made from).
struct Forms<'m> {
    opts: Trim,
    messages: &'m [Message],
    aging: Option<AgeToolResults>,
    counter: Option<std::sync::Arc<dyn MessageCounter>>,
    names: Option<BTreeMap<&'m str, &'m str>>,
    aged: Option<Vec<bool>>,
    memo: Memo,
}

/// Input position -> (the original message, its shorter forms and tokens).
type Memo = BTreeMap<usize, (Message, Vec<(Message, i64)>)>;

impl<'m> Forms<'m> {
    fn new(opts: &Trim, messages: &'m [Message]) -> Self {
        Forms {
            opts: opts.clone(),
            messages,
            aging: opts.aging.clone(),
            counter: None,
            names: None,
            aged: None,
            memo: Memo::new(),
        }
    }

    /// Which messages are old enough to shorten (`None` without ageing).
    fn aged(&mut self) -> Option<Vec<bool>> {
        let aging = self.aging.as_ref()?;
        if self.aged.is_none() {
            self.aged = Some(aging.aged(self.messages));
        }
        self.aged.clone()
    }

    /// The forms of the message at `pos` (`whole` tokens); empty without
    /// ageing or when its counter cannot be made.
    fn forms_at(&mut self, pos: usize, whole: i64) -> &[(Message, i64)] {
        let Some(aging) = &self.aging else {
            return &[];
        };
        let m = &self.messages[pos];
        let fresh = self.memo.get(&pos).is_none_or(|(orig, _)| orig != m);
        if fresh {
            if self.counter.is_none() {
                self.counter = self.opts.make_counter().ok();
            }
            let names = self.names.get_or_insert_with(|| {
                self.messages
                    .iter()
                    .flat_map(Message::calls)
                    .map(|c| (c.id.as_str(), c.name.as_str()))
                    .collect()
            });
            let forms = match &self.counter {
                Some(c) => aging.forms_of(m, whole, &**c, &|id: &str| {
                    names.get(id).map(|n| (*n).to_owned())
                }),
                None => Vec::new(),
            };
            self.memo.insert(pos, (m.clone(), forms));
        }
        self.memo.get(&pos).map_or(&[], |(_, f)| f.as_slice())
    }

    /// The form of the message at `pos` equal to `was` (a message of the
    /// previous window), if `was` is one of its shorter forms.
    fn matching(&mut self, pos: usize, whole: i64, was: &Message) -> Option<(Message, i64)> {
        let m = &self.messages[pos];
        if self.aging.is_none()
            || m.role != was.role
            || !m.is_tool_result()
            || !was.is_tool_result()
        {
            return None;
        }
        self.forms_at(pos, whole)
            .iter()
            .find(|(f, _)| f == was)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::short_duration;

    #[test]
    fn durations_read_as_hours_minutes_seconds_without_zero_parts() {
        let d = Duration::from_secs;
        assert_eq!(short_duration(d(0)), "0s");
        assert_eq!(short_duration(d(45)), "45s");
        assert_eq!(short_duration(d(90)), "1m 30s");
        assert_eq!(short_duration(d(300)), "5m");
        assert_eq!(short_duration(d(3_600)), "1h");
        // 3,725 s = 1 h + 2 min + 5 s; sub-second parts are dropped.
        assert_eq!(short_duration(Duration::from_millis(3_725_900)), "1h 2m 5s");
    }
}
