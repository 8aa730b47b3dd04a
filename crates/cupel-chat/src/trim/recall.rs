//! The recall window's options and results ([`Trim::recall`](super::Trim::recall)):
//! the newest turns up to a share of the budget, and the older turns most
//! relevant to a query in one context message after the pinned prefix.

use std::fmt;

use crate::message::{Message, Part};

/// The options of a recall window: the query, the share of the budget the
/// newest turns keep, and how far a hit lifts its neighbours.
///
/// ```
/// use cupel_chat::{Message, RecallOptions, Trim, trim};
/// let opts = Trim::openai(4_000).recall(
///     RecallOptions::new().query("When did we book the Tokyo flights?").newest_share(0.6),
/// );
/// assert_eq!(opts.recall_options().map(|r| r.newest_share), Some(0.6));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecallOptions {
    /// The query older turns are ranked by; `None`: the text of the newest
    /// user message (its text half, for an Anthropic turn that also
    /// carries tool results).
    pub query: Option<String>,
    /// The share of the conversation budget (the budget minus the pinned
    /// messages and the request overhead) the newest turns may fill, in
    /// `(0, 1]` (default 0.5). The newest unit is kept even when it alone
    /// is larger, as long as it fits the whole budget.
    pub newest_share: f64,
    /// The BM25 neighbour lift, in `[0, 1]` (default 0.5): an older unit
    /// scores at least this share of the unit just before or after it (of
    /// the same date, when the messages carry dates), so the answer to a
    /// matching question comes along.
    pub neighbours: f64,
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            query: None,
            newest_share: 0.5,
            neighbours: 0.5,
        }
    }
}

impl RecallOptions {
    /// The defaults: the newest user message as the query, newest share
    /// 0.5, neighbour lift 0.5.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ranks older turns by `query` instead of the newest user message.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// The share of the conversation budget the newest turns may fill.
    pub fn newest_share(mut self, share: f64) -> Self {
        self.newest_share = share;
        self
    }

    /// The neighbour lift (0 turns it off).
    pub fn neighbours(mut self, share: f64) -> Self {
        self.neighbours = share;
        self
    }
}

/// How relevant an older unit is to the query: its BM25 score (the best
/// older unit 1.0) and the query words it holds.
#[derive(Debug, Clone)]
pub struct Relevance {
    /// The normalised BM25 score with the neighbour lift, in `[0, 1]`.
    pub score: f64,
    /// The query's words (folded, in query order) found in the unit; empty
    /// for a unit scored only through a neighbour.
    pub terms: Vec<String>,
}

// Scores are finite (BM25 normalised to [0, 1]): bitwise equality is a
// true equivalence on them, so `Decision` stays `Eq`.
impl PartialEq for Relevance {
    fn eq(&self, other: &Self) -> bool {
        self.score.to_bits() == other.score.to_bits() && self.terms == other.terms
    }
}

impl Eq for Relevance {}

impl fmt::Display for Relevance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "relevance {:.2}", self.score)?;
        if self.terms.is_empty() {
            if self.score > 0.0 {
                write!(f, ", through a neighbour")?;
            }
            Ok(())
        } else {
            write!(f, ": matched {}", self.terms.join(", "))
        }
    }
}

/// Why a recall window recalled nothing and is the newest-turns window of
/// the whole budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecallSkip {
    /// The newest-turns window already holds every unit the budget could
    /// drop: nothing older to recall.
    NothingOlder,
    /// The query has no words to match (empty, stop words or emoji only).
    NoQueryTerms,
    /// No older unit holds a word of the query.
    NothingRelevant,
    /// Relevant older units exist, but none fits the room left.
    NoRoom,
    /// The window's conversation starts with tool results (a kept
    /// orphan), before which no message may go.
    NoPlace,
    /// Not even the newest-turns window of the whole budget holds a
    /// conversation message (the trim then fails as without recall).
    NoNewestTurns,
}

impl fmt::Display for RecallSkip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecallSkip::NothingOlder => "the newest turns that fit leave nothing older out",
            RecallSkip::NoQueryTerms => "the query has no words to match",
            RecallSkip::NothingRelevant => "no older message holds a word of the query",
            RecallSkip::NoRoom => "no relevant older unit fits the room left",
            RecallSkip::NoNewestTurns => "no newest turn can be sent",
            RecallSkip::NoPlace => {
                "the conversation starts with tool results, before which no message may go"
            }
        })
    }
}

/// What a recall window recalled: the context message, where it goes,
/// and what it holds ([`Trimmed::recall`](super::Trimmed::recall)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recall {
    /// The query the older units were ranked by (cut to
    /// [`MAX_QUERY_BYTES`](cupel_scorers::MAX_QUERY_BYTES)).
    pub query: String,
    /// The tokens the newest turns could fill (the share of the
    /// conversation budget).
    pub newest_budget: i64,
    /// The synthesized context message, `None` when nothing was recalled
    /// (then see [`skipped`](Self::skipped)).
    pub message: Option<Message>,
    /// Its index in the window ([`Trimmed::cloned_messages`](super::Trimmed::cloned_messages)):
    /// right after the leading pinned messages.
    pub at: usize,
    /// Its tokens as counted.
    pub tokens: i64,
    /// The input positions whose content it holds, ascending.
    pub positions: Vec<usize>,
    /// How many older units were ranked.
    pub candidates: usize,
    /// Why nothing was recalled (`None` when something was).
    pub skipped: Option<RecallSkip>,
}

/// The first line of the context message.
pub(crate) const RECALL_HEADER: &str = "Earlier in this conversation (recalled for relevance):";

/// A message's date as written, when it carries one: the string (or
/// number) of its first field among `timestamp`, `created_at`, `date`.
pub(crate) fn date_of(m: &Message) -> Option<String> {
    ["timestamp", "created_at", "date"]
        .iter()
        .find_map(|k| match m.extra.get(*k)? {
            serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

/// One message (or half a mixed turn) as a line of the context message:
/// `[date] speaker: text`, the speaker its `name` or else its role; tool
/// calls as `name(arguments)`, tool results as `result of call: text`.
pub(crate) fn line_of(m: &Message, results_only: Option<bool>) -> String {
    let speaker = m.name.clone().unwrap_or_else(|| m.role.to_string());
    let mut body: Vec<String> = Vec::new();
    let want = |is_result: bool| results_only.is_none_or(|r| r == is_result);
    if let Some(id) = &m.tool_call_id {
        body.push(format!("[result of {id}]"));
    }
    if want(false) {
        body.extend(m.content.texts().iter().map(|t| t.to_string()));
        for c in m.calls() {
            body.push(format!("[called {}({})]", c.name, c.arguments_text()));
        }
        if let Some((name, args)) = m.legacy_call() {
            body.push(format!("[called {name}({args})]"));
        }
    }
    if want(true) {
        for p in m.content.parts() {
            if let Part::ToolResult(r) = p {
                body.push(format!(
                    "[result of {}] {}",
                    r.call_id,
                    r.content.texts().join("\n")
                ));
            }
        }
    }
    let text = body.join(" ");
    match date_of(m) {
        Some(d) => format!("[{d}] {speaker}: {text}"),
        None => format!("{speaker}: {text}"),
    }
}
