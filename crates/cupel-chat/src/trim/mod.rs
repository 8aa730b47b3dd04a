//! [`trim`]: the newest-turns window of a transcript, valid for the provider,
//! with every message explained. The options, decisions and results live
//! here; the engine's phases in `run`, the report in `report`.

mod recall;
mod report;
pub(crate) mod run;

pub(crate) use run::Failed;

pub use recall::{Recall, RecallOptions, RecallSkip, Relevance};
pub use report::TrimReport;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::aging::AgeToolResults;
use crate::compact::{Compaction, SummaryReport};
use crate::count::{
    AnthropicEstimate, GeminiEstimate, MessageCounter, OpenAiCounter, ResponsesCounter,
};
use crate::error::ChatError;
use crate::message::{Message, Role};
use crate::transcript::Transcript;
use crate::wire::Format;

/// What moves in and out of the window as one piece. Tool calls and their
/// results are always one piece, whatever the granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Granularity {
    /// One message, or one tool group (an assistant message with tool calls
    /// and every result answering them, parallel calls included).
    #[default]
    Message,
    /// A user message with everything up to the next user message: the
    /// assistant's answer and any tool traffic in between.
    Exchange,
    /// A run of messages from one side: the user's messages, or the
    /// assistant's messages with their tool traffic.
    Turn,
}

impl Granularity {
    /// `message`, `exchange` or `turn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Message => "message",
            Granularity::Exchange => "exchange",
            Granularity::Turn => "turn",
        }
    }

    /// Reads `message` / `exchange` / `turn` (ASCII case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "message" => Some(Granularity::Message),
            "exchange" => Some(Granularity::Exchange),
            "turn" => Some(Granularity::Turn),
            _ => None,
        }
    }
}

/// How the window is filled. One strategy today; the enum leaves room for a
/// cache-aware session that keeps the previous window's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// Newest units first by input position, contiguous: once a unit does not
    /// fit, nothing older enters. Pinned prompts always; no deduplication.
    #[default]
    NewestTurns,
}

/// The options of a [`trim`]: budget, provider, counter, granularity and the
/// provider rules.
///
/// ```
/// use cupel_chat::{Granularity, Role, Trim};
/// let opts = Trim::openai(2_000)
///     .encoding("cl100k_base")
///     .granularity(Granularity::Exchange)
///     .end_on([Role::User]);
/// assert_eq!(opts.max_tokens(), 2_000);
/// ```
#[derive(Clone)]
pub struct Trim {
    max_tokens: i64,
    format: Format,
    encoding: String,
    counter: Option<Arc<dyn MessageCounter>>,
    granularity: Granularity,
    strategy: Strategy,
    pin_system: bool,
    pin_first_user: Option<bool>,
    start_on: Option<Role>,
    end_on: Option<Vec<Role>>,
    keep_orphans: bool,
    pub(crate) tools: Option<Value>,
    report: bool,
    pub(crate) aging: Option<AgeToolResults>,
    pub(crate) recall: Option<RecallOptions>,
    pub(crate) compaction: Option<Compaction>,
}

impl fmt::Debug for Trim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trim")
            .field("max_tokens", &self.max_tokens)
            .field("format", &self.format)
            .field("encoding", &self.encoding)
            .field("counter", &self.counter.as_ref().map(|c| c.describe()))
            .field("granularity", &self.granularity)
            .field("strategy", &self.strategy)
            .field("pin_system", &self.pin_system)
            .field("pin_first_user", &self.pin_first_user)
            .field("start_on", &self.start_on)
            .field("end_on", &self.end_on)
            .field("keep_orphans", &self.keep_orphans)
            .field("aging", &self.aging)
            .field("recall", &self.recall)
            .field("compaction", &self.compaction)
            .finish_non_exhaustive()
    }
}

impl Trim {
    /// Options for an OpenAI request of at most `max_tokens` input tokens,
    /// counted with `o200k_base` (GPT-4o and newer).
    pub fn openai(max_tokens: i64) -> Self {
        Self::new(Format::OpenAi, max_tokens)
    }

    /// Options for an Anthropic request of at most `max_tokens` input
    /// tokens, counted with the [`AnthropicEstimate`] (calibrate it and pass
    /// it with [`counter`](Self::counter) for better numbers).
    pub fn anthropic(max_tokens: i64) -> Self {
        Self::new(Format::Anthropic, max_tokens)
    }

    /// Options for `format`.
    pub fn new(format: Format, max_tokens: i64) -> Self {
        Trim {
            max_tokens,
            format,
            encoding: "o200k_base".into(),
            counter: None,
            granularity: Granularity::Message,
            strategy: Strategy::NewestTurns,
            pin_system: true,
            pin_first_user: None,
            start_on: Some(Role::User),
            end_on: None,
            keep_orphans: false,
            tools: None,
            report: true,
            aging: None,
            recall: None,
            compaction: None,
        }
    }

    /// A recall window (an extension: `spec/23-relevance.md`, "Chat
    /// recall"): the newest units, contiguous, up to
    /// [`newest_share`](RecallOptions::newest_share) of the conversation
    /// budget, and the older units most relevant to the query (BM25 over
    /// the older units, [`cupel_scorers::Bm25Scorer`]) written as text into
    /// **one context message** right after the leading pinned messages
    /// ([`Trimmed::recall`]). Tool groups move whole into it; the pinned
    /// prefix stays byte-identical, so a provider's cached prefix is kept.
    /// When the newest turns already fit with nothing older left out, or
    /// nothing older is relevant, the window is the newest-turns window of
    /// the whole budget ([`Recall::skipped`] says why).
    ///
    /// ```
    /// use cupel_chat::{Decision, Message, RecallOptions, Trim, trim};
    /// let mut messages = vec![
    ///     Message::system("You are a travel assistant."),
    ///     Message::user("Book me a flight to Tokyo in May."),
    ///     Message::assistant("Booked: NH 204 to Tokyo on 3 May."),
    /// ];
    /// for k in 0..12 {
    ///     messages.push(Message::user(format!("Question {k} about hotels and weather in general.")));
    ///     messages.push(Message::assistant(format!("Answer {k} about hotels and weather in general.")));
    /// }
    /// messages.push(Message::user("Which flight did you book to Tokyo?"));
    /// let out = trim(&messages, &Trim::openai(200).recall(RecallOptions::new()))?;
    /// let recall = out.recall.as_ref().unwrap();
    /// // The booking exchange (#1, #2: "flight", "book", "tokyo") is
    /// // recalled into one message after the system prompt, with #3, the
    /// // turn after the answer, through the neighbour lift.
    /// assert_eq!(recall.positions, vec![1, 2, 3]);
    /// assert_eq!(recall.at, 1);
    /// assert!(matches!(out.rows[2].decision, Decision::Recalled { .. }));
    /// let sent = out.cloned_messages();
    /// assert!(sent[1].text().contains("NH 204"));
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn recall(mut self, recall: RecallOptions) -> Self {
        self.recall = Some(recall);
        self
    }

    /// The recall options, when this is a recall window.
    pub fn recall_options(&self) -> Option<&RecallOptions> {
        self.recall.as_ref()
    }

    /// The same options without recall (a cache session keeps its own
    /// append-only window).
    pub(crate) fn without_recall(mut self) -> Self {
        self.recall = None;
        self
    }

    /// Folds what the trim evicts into one running summary
    /// ([`Compaction`]; `spec/20-prompt-cache.md`, "Compaction"): the
    /// compaction's bound is held back from the budget, the trim runs at
    /// the rest, and the units it evicts for lack of room or by a provider
    /// rule (never orphan tool traffic, never a call without its result),
    /// those after the previous summary's [`through`](crate::RunningSummary::through),
    /// are folded with the previous summary by the summariser. The summary
    /// is one message right after the pinned prefix
    /// ([`inject`](crate::inject)); [`Trimmed::summary`] says what happened,
    /// [`Trimmed::cloned_messages`] and [`Transcript::window_of`] include it,
    /// and [`TrimTokens::window`] counts it.
    pub fn summarize(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Shortens old tool results before dropping whole units (an
    /// extension: `spec/22-variants.md`, "Chat"): when a unit does not fit,
    /// its aged results are tried as head+tail, then as placeholders (every
    /// aged result of the unit at once, one step at a time), and the unit is
    /// kept at the first step that fits. Tool calls are never shortened.
    /// A [`CacheSession`](crate::CacheSession) shortens only when it cuts
    /// (see there), so that its prefix stays byte-identical between cuts.
    ///
    /// ```
    /// use cupel_chat::{AgeToolResults, Message, Trim, trim};
    /// let log = "log line\n".repeat(2_000);
    /// let messages = vec![
    ///     Message::user("Why did the deploy fail?"),
    ///     Message::assistant_calls([("call_1", "lookup_logs", "{}")]),
    ///     Message::tool("call_1", log),
    ///     Message::assistant("The disk was full."),
    ///     Message::user("Thanks. Is it fixed?"),
    /// ];
    /// let aging = AgeToolResults::new(1).truncate_to(60)?;
    /// let out = trim(&messages, &Trim::openai(200).age_tool_results(aging))?;
    /// // The log (about 4,000 tokens) goes in at 60 tokens at most, so the
    /// // whole conversation fits; its call is untouched.
    /// assert_eq!(out.positions, vec![0, 1, 2, 3, 4]);
    /// assert!(out.shortened[&2].text().contains("tokens omitted"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn age_tool_results(mut self, aging: AgeToolResults) -> Self {
        self.aging = Some(aging);
        self
    }

    /// The tiktoken encoding of the OpenAI counter (`o200k_base`,
    /// `cl100k_base`, or a model name). Ignored when a counter is given.
    pub fn encoding(mut self, name: impl Into<String>) -> Self {
        self.encoding = name.into();
        self
    }

    /// Counts with `counter` instead of the provider's default.
    pub fn counter(mut self, counter: impl MessageCounter + 'static) -> Self {
        self.counter = Some(Arc::new(counter));
        self
    }

    /// What moves as one piece (default [`Granularity::Message`]).
    pub fn granularity(mut self, g: Granularity) -> Self {
        self.granularity = g;
        self
    }

    /// How the window is filled (default [`Strategy::NewestTurns`]).
    pub fn strategy(mut self, s: Strategy) -> Self {
        self.strategy = s;
        self
    }

    /// Whether system and developer messages are pinned (default `true`).
    pub fn pin_system(mut self, pin: bool) -> Self {
        self.pin_system = pin;
        self
    }

    /// Pins the task: the first user message (one without tool results)
    /// stays in the window after the pinned prompts, and the newest part
    /// of the window may then start at any unit boundary after it — an
    /// assistant message with its tool calls included — since the
    /// conversation already starts with the user's message.
    ///
    /// This is what a one-task agent loop needs (a system prompt, one user
    /// task, then only tool calls and results): without it, a window may
    /// only start on a user message, and the only one is the task, so no
    /// window below the whole transcript exists. By default (no call to
    /// this method) the task is pinned **automatically when it is the
    /// transcript's only user message and tool calls follow it** (a
    /// one-task agent loop; a chat's first turn is left alone), and its
    /// row says so
    /// ([`Decision::PinnedTask`]); `pin_first_user(false)` turns that off,
    /// `pin_first_user(true)` pins the first user message of any transcript.
    ///
    /// ```
    /// use cupel_chat::{Decision, Message, Trim, trim};
    /// let log = "line\n".repeat(300);
    /// let mut messages = vec![
    ///     Message::system("You fix bugs."),
    ///     Message::user("Make the failing test pass."),
    /// ];
    /// for k in 0..6 {
    ///     let id = format!("call_{k}");
    ///     messages.push(Message::assistant_calls([(id.as_str(), "shell", "{}")]));
    ///     messages.push(Message::tool(id, log.clone()));
    /// }
    /// let out = trim(&messages, &Trim::openai(2_000))?;
    /// // The task stays; the newest tool groups fill the rest, the oldest go.
    /// assert_eq!(&out.positions[..2], &[0, 1]);
    /// assert_eq!(out.positions.last(), Some(&13));
    /// assert!(!out.positions.contains(&2) && !out.positions.contains(&3));
    /// assert_eq!(out.rows[1].decision, Decision::PinnedTask { automatic: true });
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn pin_first_user(mut self, pin: bool) -> Self {
        self.pin_first_user = Some(pin);
        self
    }

    /// The role the conversation must start with after the pinned prompts
    /// (default [`Role::User`]; `None` for no rule — Anthropic windows still
    /// start with a user message).
    pub fn start_on(mut self, role: Option<Role>) -> Self {
        self.start_on = role;
        self
    }

    /// Roles the window may end with; newer units are dropped until it does.
    pub fn end_on(mut self, roles: impl IntoIterator<Item = Role>) -> Self {
        self.end_on = Some(roles.into_iter().collect());
        self
    }

    /// Keep orphans (a result whose call is absent, a call never answered)
    /// as units of their own instead of dropping them. The window may then
    /// be one the provider refuses; the report still names them.
    pub fn keep_orphans(mut self, keep: bool) -> Self {
        self.keep_orphans = keep;
        self
    }

    /// The request's tool definitions, counted as overhead (a
    /// [`Transcript`]'s own `tools` are used by [`trim_transcript`]): an
    /// array of tool objects, as both providers take them (`null` counts as
    /// none). Anything else fails the trim with [`ChatError::Shape`] rather
    /// than being counted as zero tokens.
    pub fn tools(mut self, tools: Value) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Whether [`Trimmed::report`] holds the report (default `true`). The
    /// rows ([`Trimmed::rows`]) explain every message either way. The
    /// report is built only when first read, so keeping it costs a copy of
    /// the rows; `false` saves that copy and leaves the report empty.
    pub fn report(mut self, build: bool) -> Self {
        self.report = build;
        self
    }

    /// Whether system and developer prompts are pinned.
    pub(crate) fn pins_prompts(&self) -> bool {
        self.pin_system
    }

    /// The first-user pin asked for (`None`: the default rule).
    pub(crate) fn pins_first_user(&self) -> Option<bool> {
        self.pin_first_user
    }

    /// The same options with another budget (a cache session trims the
    /// same transcript at several budgets).
    pub fn with_max_tokens(mut self, max_tokens: i64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The budget.
    pub fn max_tokens(&self) -> i64 {
        self.max_tokens
    }

    /// The provider format.
    pub fn format(&self) -> Format {
        self.format
    }

    pub(crate) fn make_counter(&self) -> Result<Arc<dyn MessageCounter>, ChatError> {
        if let Some(c) = &self.counter {
            return Ok(Arc::clone(c));
        }
        Ok(match self.format {
            Format::OpenAi => Arc::new(OpenAiCounter::new(&self.encoding)?),
            Format::Anthropic => Arc::new(AnthropicEstimate::new()),
            Format::Responses => Arc::new(ResponsesCounter::new(&self.encoding)?),
            Format::Gemini => Arc::new(GeminiEstimate::new()),
        })
    }
}

/// Why a message is in or out of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Kept: a pinned system or developer prompt.
    Pinned,
    /// Kept: the task, the first user message, pinned
    /// ([`Trim::pin_first_user`]).
    PinnedTask {
        /// Pinned by default because it is the transcript's only user
        /// message (not by an explicit `pin_first_user(true)`).
        automatic: bool,
    },
    /// Half of a mixed Anthropic turn (`[tool_result, ..., text]`) is in
    /// the window: the message is sent rewritten without the other half,
    /// the one message a trim rewrites (the form sent is in
    /// [`Trimmed::shortened`]).
    Partial {
        /// Which half is kept.
        kept: TurnHalf,
        /// The tokens of the half sent (as its own message).
        tokens: i64,
        /// The call ids the turn's tool results answer.
        call_ids: Vec<String>,
        /// Why the other half is out.
        dropped: Box<Decision>,
    },
    /// Kept: its unit fit.
    Kept,
    /// Kept on request although its tool traffic is incomplete.
    KeptOrphan {
        /// The call id without its counterpart.
        call_id: String,
    },
    /// Dropped: its unit did not fit what was left.
    DoesNotFit {
        /// The unit's tokens.
        unit_tokens: i64,
        /// What was left when the unit came up.
        available_tokens: i64,
        /// How many messages the unit holds.
        unit_len: usize,
    },
    /// Dropped: older than a unit that did not fit (the window has no holes).
    OlderThanCut {
        /// Position of the first message of the unit that did not fit.
        cut_position: usize,
    },
    /// Dropped: a tool result whose call is not in the transcript (before it).
    OrphanResult {
        /// The call id it answers.
        call_id: String,
    },
    /// Dropped: a tool result whose call cannot be known (an OpenAI tool
    /// message with a missing, `null` or non-string `tool_call_id`, or a
    /// legacy `function` message without a `name`).
    MalformedResult {
        /// What was found instead (`it has no `tool_call_id``, ...).
        found: String,
    },
    /// Dropped: a tool call no message answers.
    UnansweredCall {
        /// The unanswered call id.
        call_id: String,
    },
    /// Dropped: an item the provider accepts only followed by the item it
    /// belongs to (an OpenAI Responses `reasoning` item), with nothing
    /// after it.
    WithoutFollower {
        /// The item's kind (`reasoning`).
        kind: String,
    },
    /// Dropped with the orphan at `position`, whose tool traffic is incomplete.
    WithOrphan {
        /// Position of the orphan.
        position: usize,
    },
    /// Dropped only so the conversation starts with `required` (a provider rule).
    StartRule {
        /// The role the window must start with.
        required: Role,
    },
    /// Dropped only so the window ends with one of the `end_on` roles.
    EndRule,
    /// Dropped only so turns alternate (Gemini refuses two turns of one role
    /// in a row): a dropped orphan or a pinned task left this message's
    /// turn next to a newer one of the same `role`.
    Alternation {
        /// The role that would have been sent twice in a row.
        role: Role,
    },
    /// Recalled: an older unit, relevant to the query, written as text
    /// into the recall window's context message ([`Trim::recall`]).
    Recalled {
        /// Its relevance.
        relevance: Relevance,
        /// The unit's tokens as text in the context message (an estimate:
        /// the message is counted whole).
        unit_tokens: i64,
    },
    /// Dropped: an older unit of a recall window that was not recalled
    /// (not relevant, or no room left for its text).
    NotRecalled {
        /// Its relevance (score 0: no query word).
        relevance: Relevance,
        /// The unit's tokens as text.
        unit_tokens: i64,
        /// What the recall had left when the unit came up.
        available_tokens: i64,
    },
    /// Kept in a shorter form: an aged tool result (see
    /// [`Trim::age_tool_results`]) whose unit only fit shortened.
    Shortened {
        /// 1: head and tail; 2: the placeholder.
        form: usize,
        /// The tokens of the form sent.
        tokens: i64,
        /// The message's tokens minus the form's.
        tokens_saved: i64,
    },
}

impl Decision {
    /// Whether the message is in the window.
    pub fn is_kept(&self) -> bool {
        matches!(
            self,
            Decision::Pinned
                | Decision::PinnedTask { .. }
                | Decision::Partial { .. }
                | Decision::Kept
                | Decision::KeptOrphan { .. }
                | Decision::Shortened { .. }
        )
    }

    /// Whether the message's content is in a recall window's context message.
    pub fn is_recalled(&self) -> bool {
        matches!(self, Decision::Recalled { .. })
    }

    /// Whether the message was dropped only to satisfy a provider rule.
    pub fn is_provider_rule(&self) -> bool {
        matches!(
            self,
            Decision::StartRule { .. } | Decision::EndRule | Decision::Alternation { .. }
        )
    }

    /// Whether the message is pinned (a prompt, or the task).
    pub fn is_pinned(&self) -> bool {
        matches!(self, Decision::Pinned | Decision::PinnedTask { .. })
    }
}

/// Owned copies of a window's `messages` (at input `positions`) as sent:
/// each in its form from `forms` when it has one there (a trim's or a cache
/// turn's `shortened`).
pub(crate) fn as_sent(
    messages: &[&Message],
    positions: &[usize],
    forms: &BTreeMap<usize, Message>,
) -> Vec<Message> {
    messages
        .iter()
        .zip(positions)
        .map(|(m, p)| forms.get(p).unwrap_or(m).clone())
        .collect()
}

/// Which half of a mixed Anthropic turn a [`Decision::Partial`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnHalf {
    /// The text (and any other non-result parts): the turn starts the
    /// window, and the calls its results answer were cut.
    Text,
    /// The tool results: the text that follows them was dropped (an end rule).
    Results,
}

/// Something in the input itself that breaks a provider rule. A trim
/// passes such input on as it is (it cannot know which side is right) but
/// says so: in [`Trimmed::notes`], in `--explain`, and as metadata `note`
/// on the report's items.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputNote {
    /// One call id is made by two calls; results answer the latest earlier one.
    ReusedCallId {
        /// The id.
        call_id: String,
        /// The first message making it.
        first_position: usize,
        /// The later message making it again.
        second_position: usize,
    },
    /// A result answers a call made before another message that a provider
    /// does not accept in between (OpenAI: anything but tool results;
    /// Anthropic: anything).
    DistantResult {
        /// The call id.
        call_id: String,
        /// The message making the call.
        call_position: usize,
        /// The message answering it.
        result_position: usize,
    },
}

impl InputNote {
    /// The input positions the note is about.
    pub fn positions(&self) -> [usize; 2] {
        match self {
            InputNote::ReusedCallId {
                first_position,
                second_position,
                ..
            } => [*first_position, *second_position],
            InputNote::DistantResult {
                call_position,
                result_position,
                ..
            } => [*call_position, *result_position],
        }
    }
}

impl fmt::Display for InputNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputNote::ReusedCallId {
                call_id,
                first_position,
                second_position,
            } => write!(
                f,
                "call id {call_id} is made by #{first_position} and again by #{second_position}; each result answers the latest call before it (a provider may refuse a request holding both)"
            ),
            InputNote::DistantResult {
                call_id,
                call_position,
                result_position,
            } => write!(
                f,
                "#{result_position} answers call {call_id} of #{call_position} with other messages in between; providers want results right after their call, so a window holding both is sent as the input has it"
            ),
        }
    }
}

/// One input message's fate (it borrows the message).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow<'a> {
    /// Input position (0-based; an Anthropic `system` is #0).
    pub position: usize,
    /// The message.
    pub message: &'a Message,
    /// The message's tokens as counted.
    pub tokens: i64,
    /// The unit it moved with (an index into the units in input order), if any.
    pub unit: Option<usize>,
    /// In or out, and why.
    pub decision: Decision,
    granularity: Granularity,
}

/// A token count as the explanations print it: digits grouped by
/// thousands with commas (`15865` → `15,865`, `-1200` → `-1,200`).
///
/// ```
/// assert_eq!(cupel_chat::group_digits(15_865), "15,865");
/// assert_eq!(cupel_chat::group_digits(-1_200), "-1,200");
/// assert_eq!(cupel_chat::group_digits(999), "999");
/// ```
pub fn group_digits(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

impl MessageRow<'_> {
    /// The message's role.
    pub fn role(&self) -> &Role {
        &self.message.role
    }

    /// `user`, `assistant tool call lookup (call_1)`, `tool result for call_1`, ...
    /// (see [`Message::label`]).
    pub fn label(&self) -> String {
        self.message.label()
    }

    /// The decision in words, without the `#position label` prefix
    /// (`kept: pinned`, `dropped with its call: the group needs ...`).
    pub fn reason(&self) -> String {
        Reason(self).to_string()
    }
}

impl fmt::Display for MessageRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} {}",
            self.position,
            self.message.label(),
            Reason(self)
        )
    }
}

struct Reason<'a, 'm>(&'a MessageRow<'m>);

impl fmt::Display for Reason<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.decision {
            Decision::Partial {
                kept,
                tokens,
                call_ids,
                dropped,
            } => self.partial(f, *kept, *tokens, call_ids, dropped),
            Decision::DoesNotFit {
                unit_tokens,
                available_tokens,
                unit_len,
            } => self.does_not_fit(f, *unit_tokens, *available_tokens, *unit_len),
            Decision::Shortened {
                form,
                tokens,
                tokens_saved,
            } => write!(
                f,
                "kept {}: {} tokens instead of {} (old tool result)",
                if *form == 1 {
                    "as head and tail"
                } else {
                    "as a placeholder"
                },
                group_digits(*tokens),
                group_digits(tokens.saturating_add(*tokens_saved))
            ),
            other => Self::plain(f, other),
        }
    }
}

impl Reason<'_, '_> {
    /// The decisions whose words need nothing but their own fields.
    fn plain(f: &mut fmt::Formatter<'_>, d: &Decision) -> fmt::Result {
        match d {
            Decision::Pinned => write!(f, "kept: pinned"),
            Decision::PinnedTask { automatic: true } => write!(
                f,
                "kept: pinned as the task (the only user message of a tool-using agent, pinned automatically; any unit may follow it)"
            ),
            Decision::PinnedTask { automatic: false } => write!(
                f,
                "kept: pinned as the task (the first user message; any unit may follow it)"
            ),
            Decision::MalformedResult { found } => write!(
                f,
                "dropped: a tool result must name the call it answers, and {found} (orphan result)"
            ),
            Decision::KeptOrphan { call_id } if call_id.is_empty() => {
                write!(f, "kept on request although it names no call (orphan)")
            }
            Decision::KeptOrphan { call_id } => write!(
                f,
                "kept on request although {call_id} has no counterpart (orphan)"
            ),
            Decision::OlderThanCut { cut_position } => write!(
                f,
                "dropped: older than #{cut_position}, which did not fit (no holes)"
            ),
            Decision::OrphanResult { call_id } => write!(
                f,
                "dropped: no earlier message makes call {call_id} (orphan result)"
            ),
            Decision::UnansweredCall { call_id } => {
                write!(f, "dropped: call {call_id} is never answered (orphan call)")
            }
            Decision::WithoutFollower { kind } => write!(
                f,
                "dropped: a {kind} item must be sent with the item after it, and none follows (orphan)"
            ),
            Decision::WithOrphan { position } => write!(
                f,
                "dropped with #{position}, whose tool traffic is incomplete"
            ),
            Decision::StartRule { required } => write!(
                f,
                "dropped only so the conversation starts with a {required} message (provider rule)"
            ),
            Decision::EndRule => write!(f, "dropped only so the window ends on an `end_on` role"),
            Decision::Alternation { role } => write!(
                f,
                "dropped only so turns alternate: two {role} turns would follow each other (provider rule)"
            ),
            Decision::Recalled {
                relevance,
                unit_tokens,
            } => write!(
                f,
                "recalled into the context message ({relevance}; {} tokens as text)",
                group_digits(*unit_tokens)
            ),
            Decision::NotRecalled { relevance, .. } if relevance.score <= 0.0 => write!(
                f,
                "dropped: older than the newest turns and not relevant (no query word)"
            ),
            Decision::NotRecalled {
                relevance,
                unit_tokens,
                available_tokens,
            } => write!(
                f,
                "dropped: older than the newest turns; {relevance}, but its text needs {} tokens, {} left for recall",
                group_digits(*unit_tokens),
                group_digits(*available_tokens)
            ),
            _ => write!(f, "kept"),
        }
    }

    /// A mixed turn of which one half is sent.
    fn partial(
        &self,
        f: &mut fmt::Formatter<'_>,
        kept: TurnHalf,
        tokens: i64,
        call_ids: &[String],
        dropped: &Decision,
    ) -> fmt::Result {
        let why = Reason(&MessageRow {
            decision: dropped.clone(),
            ..self.0.clone()
        });
        match kept {
            TurnHalf::Text => write!(
                f,
                "kept without its tool results for {} ({} tokens; rewritten, as their calls are out: {why})",
                call_ids.join(", "),
                group_digits(tokens),
            ),
            TurnHalf::Results => write!(
                f,
                "kept as its tool results only ({} tokens; rewritten, as its text is out: {why})",
                group_digits(tokens),
            ),
        }
    }

    /// A unit that did not fit, named by what the message moved with.
    fn does_not_fit(
        &self,
        f: &mut fmt::Formatter<'_>,
        unit_tokens: i64,
        available_tokens: i64,
        unit_len: usize,
    ) -> fmt::Result {
        let row = self.0;
        let (unit, with) = match row.granularity {
            _ if unit_len <= 1 => {
                return write!(
                    f,
                    "dropped: needs {} tokens, {} left",
                    group_digits(unit_tokens),
                    group_digits(available_tokens)
                );
            }
            Granularity::Message if row.message.is_tool_result() => ("group", "its call"),
            Granularity::Message
                if row.message.calls().next().is_some() || row.message.legacy_call().is_some() =>
            {
                ("group", "its results")
            }
            Granularity::Message => ("group", "its group"),
            Granularity::Exchange => ("exchange", "its exchange"),
            Granularity::Turn => ("turn", "its turn"),
        };
        write!(
            f,
            "dropped with {with}: the {unit} needs {} tokens, {} left",
            group_digits(unit_tokens),
            group_digits(available_tokens)
        )
    }
}

/// Token totals of a trim, by part (overhead, pinned, kept, dropped, ...).
/// Named `TokenTotals` before 0.2: core's `TokenTotals` is the overflow-safe
/// sum of item counts, another thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrimTokens {
    /// The budget.
    pub max_tokens: i64,
    /// What every request costs besides its messages: reply priming and
    /// tool definitions.
    pub overhead: i64,
    /// The tool definitions' part of [`overhead`](Self::overhead) (between
    /// 0 and it): the counter's request cost with the tools minus without
    /// them. Providers
    /// send them before the messages, so a prompt cache stores them with
    /// the prefix; the rest of the overhead (OpenAI's reply priming) comes
    /// after the messages.
    pub tools: i64,
    /// The pinned messages.
    pub pinned: i64,
    /// The kept messages, pinned included.
    pub kept: i64,
    /// The dropped messages.
    pub dropped: i64,
    /// The recall window's context message ([`Trim::recall`]; 0 without one).
    pub recalled: i64,
    /// The running summary's message ([`Trim::summarize`]; 0 without one).
    pub summary: i64,
    /// The request's input tokens: `overhead + kept + recalled + summary`, at most
    /// `max_tokens`.
    pub window: i64,
}

/// The old name of [`TrimTokens`].
#[deprecated(
    since = "0.2.0",
    note = "renamed `TrimTokens` (core's `TokenTotals` is the sum of item counts)"
)]
pub type TokenTotals = TrimTokens;

/// The result of a [`trim`]: it borrows the input messages (nothing is
/// copied; [`cloned_messages`](Self::cloned_messages) makes owned copies).
#[derive(Debug, Clone)]
pub struct Trimmed<'a> {
    /// The kept messages, in input order.
    pub messages: Vec<&'a Message>,
    /// Their input positions.
    pub positions: Vec<usize>,
    /// One row per input message, in input order.
    pub rows: Vec<MessageRow<'a>>,
    /// Token totals.
    pub tokens: TrimTokens,
    /// The counter used (`openai o200k_base`, ...).
    pub counter: String,
    /// The same decisions as a [`SelectionReport`](cupel_core::SelectionReport): one item per message,
    /// its content `#position label: text`, metadata `position` and `role`,
    /// tool groups and units as atomic groups (`unit-N`). Built when first
    /// read (it dereferences to the `SelectionReport`; see
    /// [`TrimReport`]). Empty when [`Trim::report`] was `false`.
    pub report: TrimReport<'a>,
    /// The shortened form sent for each kept message that was shortened
    /// ([`Trim::age_tool_results`]), by input position. `messages` holds
    /// such a message in its original form;
    /// [`cloned_messages`](Self::cloned_messages) applies these. A mixed
    /// turn kept in part ([`Decision::Partial`]) has its half here too.
    pub shortened: BTreeMap<usize, Message>,
    /// What in the input itself breaks a provider rule (passed on as it is).
    pub notes: Vec<InputNote>,
    /// What a recall window ([`Trim::recall`]) recalled; `None` for other
    /// windows. Its message is not in [`messages`](Self::messages) (it is
    /// no input message): [`cloned_messages`](Self::cloned_messages) and
    /// [`Transcript::window_of`] insert it at [`Recall::at`].
    pub recall: Option<Recall>,
    /// The running summary ([`Trim::summarize`]): what the fold did, the
    /// summary and its message, which [`cloned_messages`](Self::cloned_messages)
    /// sends right after the pinned prefix. `None` without compaction.
    pub summary: Option<SummaryReport>,
    /// Every piece (a message, or half a mixed turn) with its unit, for a
    /// cache session that cuts between units.
    pub(crate) pieces: Vec<PieceRow>,
}

/// Which part of its message a piece is (see `run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    /// The whole message.
    Whole,
    /// A mixed turn's tool results.
    Results,
    /// A mixed turn's other parts.
    Text,
}

/// One piece of a trim: its message, half, unit, tokens and whether kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PieceRow {
    pub msg: usize,
    pub half: Half,
    pub unit: Option<usize>,
    pub tokens: i64,
    pub kept: bool,
}

impl<'a> Trimmed<'a> {
    /// The rows of the dropped messages.
    pub fn dropped(&self) -> impl Iterator<Item = &MessageRow<'a>> {
        self.rows.iter().filter(|r| !r.decision.is_kept())
    }

    /// Owned copies of the kept messages, as sent: shortened ones in their
    /// shortened form.
    /// The running summary, if any, goes right after the pinned prefix.
    pub fn cloned_messages(&self) -> Vec<Message> {
        let mut out = as_sent(&self.messages, &self.positions, &self.shortened);
        if let Some((at, m)) = crate::compact::placed(self).or_else(|| self.recall_message()) {
            out.insert(at.min(out.len()), m.clone());
        }
        out
    }

    /// The recall window's context message and its index in the window,
    /// when something was recalled.
    pub fn recall_message(&self) -> Option<(usize, &Message)> {
        let r = self.recall.as_ref()?;
        r.message.as_ref().map(|m| (r.at, m))
    }

    /// Where Anthropic `cache_control` markers go in this window when it is
    /// sent on its own (no session): prefix lengths of
    /// [`messages`](Self::messages), planned by
    /// [`plan_breakpoints`](crate::plan_breakpoints) without a reused
    /// prefix — the end of the pinned prompts and the end of the window
    /// (each only when at least `profile`'s minimum cacheable length, tool
    /// definitions included: they come first in the prefix), plus
    /// one lookback marker when the gap is wider than the lookback. Write
    /// them with [`apply_breakpoints`](crate::apply_breakpoints). `format`
    /// is the transcript's format (blocks are counted as it writes them).
    /// Implicit profiles (OpenAI, Gemini) get none.
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, Format, Message, Transcript, Trim, apply_breakpoints, trim};
    /// let long = "word ".repeat(1_500); // 2,146 tokens each by the estimate: over 1,024
    /// let msgs = vec![Message::system(long.clone()), Message::user(long)];
    /// let out = trim(&msgs, &Trim::anthropic(10_000))?;
    /// let marks = out.breakpoints(Format::Anthropic, &CacheProfile::anthropic());
    /// assert_eq!(marks, vec![1, 2]); // after the system prompt, and at the end
    /// let window = Transcript::new(Format::Anthropic, out.cloned_messages());
    /// let request = apply_breakpoints(&window, &marks, &CacheProfile::anthropic());
    /// // A bare message array: the system prompt's block and the user's carry a marker.
    /// assert_eq!(request[0]["content"][0]["cache_control"]["type"], "ephemeral");
    /// assert_eq!(request[1]["content"][0]["cache_control"]["type"], "ephemeral");
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn breakpoints(&self, format: Format, profile: &crate::CacheProfile) -> Vec<usize> {
        let kept: Vec<&MessageRow<'_>> =
            self.rows.iter().filter(|r| r.decision.is_kept()).collect();
        let mut blocks: Vec<crate::Block> = kept
            .iter()
            .map(|r| crate::Block::of(r.message, r.tokens, format))
            .collect();
        let pinned = kept.iter().take_while(|r| r.decision.is_pinned()).count();
        if let Some((at, m)) = self.recall_message() {
            let tokens = self.tokens.recalled;
            blocks.insert(at.min(blocks.len()), crate::Block::of(m, tokens, format));
        }
        // The tool definitions count towards each marker's prefix.
        crate::cache::Frame::new(None, &self.tokens).plan(&blocks, pinned, None, profile)
    }

    /// One line per message (`#12 tool result for call_7 dropped with its call: ...`).
    pub fn explain(&self) -> String {
        let mut out = String::new();
        for r in &self.rows {
            out.push_str(&r.to_string());
            out.push('\n');
        }
        out
    }
}

/// Trims `messages` to the budget of `opts`: the newest units that fit, with
/// the pinned prompts, valid for the provider.
///
/// ```
/// use cupel_chat::{Message, Trim, trim};
/// let messages = vec![
///     Message::system("You are terse."),
///     Message::user("What is 2+2?"),
///     Message::assistant("4"),
///     Message::user("And 3+3?"),
/// ];
/// let out = trim(&messages, &Trim::openai(30))?;
/// // o200k_base: system 3+1+4 = 8, "And 3+3?" 3+1+5 = 9, priming 3: 20 of 30;
/// // "4" (3+1+1 = 5) would fit, but the window must start with a user message.
/// assert_eq!(out.positions, vec![0, 3]);
/// println!("{}", out.explain());
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::InvalidBudget`] for `max_tokens <= 0`,
/// [`ChatError::UnknownEncoding`], [`ChatError::PinnedOverBudget`] when the
/// pinned prompts and the request overhead alone exceed the budget, and
/// [`ChatError::NothingFits`] when not even the newest unit fits (and no
/// task is pinned), [`ChatError::NoConversation`] when no conversation
/// message can be sent;
/// [`ChatError::Shape`] when the tool definitions are not an array of
/// objects.
pub fn trim<'a>(messages: &'a [Message], opts: &Trim) -> Result<Trimmed<'a>, ChatError> {
    run_any(messages, opts).map_err(|f| f.error)
}

/// The trim, with its compaction when it has one.
fn run_any<'a>(messages: &'a [Message], opts: &Trim) -> Result<Trimmed<'a>, Failed<'a>> {
    match &opts.compaction {
        Some(c) => crate::compact::trim_compacted(messages, opts, c),
        None => run::run(messages, opts),
    }
}

/// [`trim`], and when it fails, what it knew: one row per message it had
/// decided on before it failed (every message when not even the newest
/// unit fits or no conversation can be sent; the pinned prompts when they
/// alone are over the budget), so a failure can be explained too.
///
/// ```
/// use cupel_chat::{ChatError, Message, Trim, trim_or_rows};
/// let messages = vec![Message::user("word ".repeat(500))];
/// let (error, rows) = trim_or_rows(&messages, &Trim::openai(50)).unwrap_err();
/// assert!(matches!(error, ChatError::NothingFits { .. }));
/// assert_eq!(rows.len(), 1); // "#0 user dropped: needs 504 tokens, 47 left"
/// ```
///
/// # Errors
/// As [`trim`], with the rows.
#[allow(clippy::result_large_err)]
pub fn trim_or_rows<'a>(
    messages: &'a [Message],
    opts: &Trim,
) -> Result<Trimmed<'a>, (ChatError, Vec<MessageRow<'a>>)> {
    run_any(messages, opts).map_err(|f| (f.error, f.rows))
}

/// Trims a whole document: its messages with [`trim`], counting its `tools`
/// (unless `opts` has its own) under the rules of the document's own format
/// (whatever format `opts` was made for), and writes the kept messages back
/// into the same document. Without a counter of the caller's, an Anthropic
/// document is counted with [`AnthropicEstimate::for_request`] of its body.
///
/// ```
/// use cupel_chat::{Transcript, Trim, trim_transcript};
/// let doc = Transcript::parse(r#"[{"role": "user", "content": "hi"}]"#)?;
/// let (window, report) = trim_transcript(&doc, &Trim::openai(100))?;
/// assert_eq!(window, doc); // everything fits: the same document
/// assert_eq!(report.positions, vec![0]);
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// As [`trim`].
pub fn trim_transcript<'a>(
    transcript: &'a Transcript,
    opts: &Trim,
) -> Result<(Transcript, Trimmed<'a>), ChatError> {
    let opts = document_options(transcript, opts);
    let out = trim(transcript.messages(), &opts)?;
    Ok((transcript.window_of(&out), out))
}

/// The options [`trim_transcript`] trims `transcript` with: its own tools
/// (unless `opts` has some) and its own format, which decides the provider
/// rules (and, without a counter of the caller's, how tokens are counted).
/// Trim `transcript.messages()` with them and write the window with
/// [`Transcript::window_json`] to avoid copying the kept messages.
pub fn document_options(transcript: &Transcript, opts: &Trim) -> Trim {
    let mut opts = opts.clone();
    if opts.tools.is_none() {
        opts.tools = transcript.tools().cloned();
    }
    opts.format = transcript.format();
    if opts.counter.is_none() && opts.format == Format::Anthropic {
        // The estimate for this request body: its model, tool choice and thinking.
        let estimate = AnthropicEstimate::for_request(&transcript.body_value());
        opts.counter = Some(Arc::new(estimate));
    }
    opts
}
