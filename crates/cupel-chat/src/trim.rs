//! [`trim`]: the newest-turns window of a transcript, valid for the provider,
//! with every message explained.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use cupel_core::{
    ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason,
    SelectionReport, VariantChoice, VariantReason, score_cmp_desc,
};
use serde_json::Value;

use crate::aging::AgeToolResults;
use crate::count::{AnthropicEstimate, MessageCounter, OpenAiCounter};
use crate::error::ChatError;
use crate::message::{Message, Role};
use crate::transcript::Transcript;
use crate::wire::Format;
use crate::wire::kind_of;

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
    start_on: Option<Role>,
    end_on: Option<Vec<Role>>,
    keep_orphans: bool,
    pub(crate) tools: Option<Value>,
    report: bool,
    pub(crate) aging: Option<AgeToolResults>,
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
            .field("start_on", &self.start_on)
            .field("end_on", &self.end_on)
            .field("keep_orphans", &self.keep_orphans)
            .field("aging", &self.aging)
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
            start_on: Some(Role::User),
            end_on: None,
            keep_orphans: false,
            tools: None,
            report: true,
            aging: None,
        }
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

    /// Whether to build [`Trimmed::report`] (default `true`). The rows
    /// ([`Trimmed::rows`]) explain every message either way; without the
    /// report a trim allocates one item less per message.
    pub fn report(mut self, build: bool) -> Self {
        self.report = build;
        self
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
        })
    }
}

/// Why a message is in or out of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Kept: a pinned system or developer prompt.
    Pinned,
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
    /// Dropped: a tool call no message answers.
    UnansweredCall {
        /// The unanswered call id.
        call_id: String,
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
                | Decision::Kept
                | Decision::KeptOrphan { .. }
                | Decision::Shortened { .. }
        )
    }

    /// Whether the message was dropped only to satisfy a provider rule.
    pub fn is_provider_rule(&self) -> bool {
        matches!(self, Decision::StartRule { .. } | Decision::EndRule)
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
        let row = self.0;
        match &row.decision {
            Decision::Pinned => write!(f, "kept: pinned"),
            Decision::Kept => write!(f, "kept"),
            Decision::KeptOrphan { call_id } => {
                write!(
                    f,
                    "kept on request although {call_id} has no counterpart (orphan)"
                )
            }
            Decision::DoesNotFit {
                unit_tokens,
                available_tokens,
                unit_len,
            } => {
                let (unit, with) = match row.granularity {
                    _ if *unit_len <= 1 => {
                        return write!(
                            f,
                            "dropped: needs {} tokens, {} left",
                            group_digits(*unit_tokens),
                            group_digits(*available_tokens)
                        );
                    }
                    Granularity::Message if row.message.is_tool_result() => ("group", "its call"),
                    Granularity::Message if row.message.calls().next().is_some() => {
                        ("group", "its results")
                    }
                    Granularity::Message => ("group", "its group"),
                    Granularity::Exchange => ("exchange", "its exchange"),
                    Granularity::Turn => ("turn", "its turn"),
                };
                write!(
                    f,
                    "dropped with {with}: the {unit} needs {} tokens, {} left",
                    group_digits(*unit_tokens),
                    group_digits(*available_tokens)
                )
            }
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
            Decision::WithOrphan { position } => write!(
                f,
                "dropped with #{position}, whose tool traffic is incomplete"
            ),
            Decision::StartRule { required } => write!(
                f,
                "dropped only so the conversation starts with a {required} message (provider rule)"
            ),
            Decision::EndRule => write!(f, "dropped only so the window ends on an `end_on` role"),
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
        }
    }
}

/// Token totals of a trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenTotals {
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
    /// The request's input tokens: `overhead + kept`, at most `max_tokens`.
    pub window: i64,
}

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
    pub tokens: TokenTotals,
    /// The counter used (`openai o200k_base`, ...).
    pub counter: String,
    /// The same decisions as a [`SelectionReport`]: one item per message,
    /// its content `#position label: text`, metadata `position` and `role`,
    /// tool groups and units as atomic groups (`unit-N`). Empty when
    /// [`Trim::report`] was `false`.
    pub report: SelectionReport,
    /// The shortened form sent for each kept message that was shortened
    /// ([`Trim::age_tool_results`]), by input position. `messages` holds
    /// such a message in its original form;
    /// [`cloned_messages`](Self::cloned_messages) applies these.
    pub shortened: BTreeMap<usize, Message>,
}

impl<'a> Trimmed<'a> {
    /// The rows of the dropped messages.
    pub fn dropped(&self) -> impl Iterator<Item = &MessageRow<'a>> {
        self.rows.iter().filter(|r| !r.decision.is_kept())
    }

    /// Owned copies of the kept messages, as sent: shortened ones in their
    /// shortened form.
    pub fn cloned_messages(&self) -> Vec<Message> {
        self.messages
            .iter()
            .zip(&self.positions)
            .map(|(m, p)| self.shortened.get(p).unwrap_or(m).clone())
            .collect()
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
        let blocks: Vec<crate::Block> = kept
            .iter()
            .map(|r| crate::Block::of(r.message, r.tokens, format))
            .collect();
        let pinned = kept
            .iter()
            .take_while(|r| r.decision == Decision::Pinned)
            .count();
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

/// Union-find over message positions.
struct Dsu(Vec<usize>);

impl Dsu {
    fn new(n: usize) -> Self {
        Dsu((0..n).collect())
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The smaller position is the root: roots are first members.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.0[hi] = lo;
        }
    }
}

/// One unit: its first and last member (input positions), how many members
/// it has, and their tokens.
struct Unit {
    first: usize,
    last: usize,
    len: usize,
    tokens: i64,
}

/// The tool definitions must be what both providers take: an array of
/// objects (`null` stands for none). A string, a number or an object where
/// the array belongs would otherwise be counted as no tools at all.
fn check_tools(tools: Option<&Value>) -> Result<(), ChatError> {
    match tools {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(list)) => match list.iter().position(|t| !t.is_object()) {
            None => Ok(()),
            Some(i) => Err(ChatError::Shape {
                path: format!("tools[{i}]"),
                message: format!(
                    "a tool definition must be an object, not {}",
                    kind_of(&list[i])
                ),
            }),
        },
        Some(other) => Err(ChatError::Shape {
            path: "tools".into(),
            message: format!(
                "`tools` must be an array of tool definitions, not {}",
                kind_of(other)
            ),
        }),
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
/// [`ChatError::NothingFits`] when not even the newest unit fits;
/// [`ChatError::Shape`] when the tool definitions are not an array of
/// objects.
pub fn trim<'a>(messages: &'a [Message], opts: &Trim) -> Result<Trimmed<'a>, ChatError> {
    if opts.max_tokens <= 0 {
        return Err(ChatError::InvalidBudget {
            max_tokens: opts.max_tokens,
        });
    }
    check_tools(opts.tools.as_ref())?;
    let counter = opts.make_counter()?;
    let n = messages.len();
    let tokens: Vec<i64> = counter
        .count_messages(messages)
        .into_iter()
        .map(|t| t.max(0))
        .collect();
    let overhead = counter.count_request(opts.tools.as_ref()).max(0);
    let tools_tokens = if opts.tools.is_some() {
        overhead
            .saturating_sub(counter.count_request(None))
            .clamp(0, overhead)
    } else {
        0
    };
    let pinned: Vec<bool> = messages
        .iter()
        .map(|m| opts.pin_system && m.role.is_prompt())
        .collect();

    // A pinned prompt in tool traffic cannot be paired safely: refuse it
    // (see `ChatError::PinnedToolTraffic`).
    for (i, m) in messages.iter().enumerate().filter(|(i, _)| pinned[*i]) {
        let traffic = m
            .answered_ids()
            .next()
            .map(|id| ("answers", id))
            .or_else(|| m.calls().next().map(|c| ("makes", c.id.as_str())));
        if let Some((action, id)) = traffic {
            return Err(ChatError::PinnedToolTraffic {
                position: i,
                label: m.label(),
                action,
                call_id: id.to_string(),
            });
        }
    }

    // Tool groups: each result joins the message that made its call.
    let mut dsu = Dsu::new(n);
    // A result answers the latest earlier message making its call id (ids
    // can repeat); `bound` holds each (maker, id) that got an answer.
    let mut call_owner: BTreeMap<&str, usize> = BTreeMap::new();
    let mut bound: BTreeSet<(usize, &str)> = BTreeSet::new();
    let mut orphan: Vec<Option<Decision>> = vec![None; n];
    for (i, m) in messages.iter().enumerate() {
        for id in m.answered_ids() {
            match call_owner.get(id) {
                Some(&owner) => {
                    dsu.union(owner, i);
                    bound.insert((owner, id));
                }
                None if orphan[i].is_none() => {
                    orphan[i] = Some(Decision::OrphanResult {
                        call_id: id.to_string(),
                    });
                }
                None => {}
            }
        }
        for c in m.calls() {
            call_owner.insert(c.id.as_str(), i);
        }
    }
    for (i, m) in messages.iter().enumerate() {
        if orphan[i].is_none()
            && let Some(c) = m.calls().find(|c| !bound.contains(&(i, c.id.as_str())))
        {
            orphan[i] = Some(Decision::UnansweredCall {
                call_id: c.id.clone(),
            });
        }
    }
    // Orphans take their whole tool group with them (unless kept on request).
    let mut decision: Vec<Option<Decision>> = vec![None; n];
    let mut orphan_root: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, o) in orphan.iter().enumerate() {
        if o.is_some() {
            let r = dsu.find(i);
            orphan_root.entry(r).or_insert(i);
        }
    }
    for i in 0..n {
        if pinned[i] {
            decision[i] = Some(Decision::Pinned);
            continue;
        }
        if opts.keep_orphans {
            continue;
        }
        let r = dsu.find(i);
        if let Some(&o) = orphan_root.get(&r) {
            decision[i] = Some(match &orphan[i] {
                Some(d) => d.clone(),
                None => Decision::WithOrphan { position: o },
            });
        }
    }

    // Units: tool groups, merged into exchanges or turns when asked.
    let side = |m: &Message| -> u8 {
        if m.role == Role::User && !m.is_tool_result() {
            0
        } else {
            1
        }
    };
    let mut prev: Option<usize> = None;
    for i in 0..n {
        if decision[i].is_some() {
            continue;
        }
        let m = &messages[i];
        if let Some(p) = prev {
            let joins = match opts.granularity {
                Granularity::Message => false,
                Granularity::Exchange => side(m) != 0,
                Granularity::Turn => side(m) == side(&messages[p]),
            };
            if joins {
                dsu.union(p, i);
            }
        }
        prev = Some(i);
    }
    // Units in input order of their first member (a root is its set's
    // smallest position, so the first member seen is the root).
    let mut unit_of_root: Vec<usize> = vec![usize::MAX; n];
    let mut units: Vec<Unit> = Vec::new();
    let mut unit_of: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        if decision[i].is_some() {
            continue;
        }
        let r = dsu.find(i);
        let u = if unit_of_root[r] == usize::MAX {
            units.push(Unit {
                first: i,
                last: i,
                len: 0,
                tokens: 0,
            });
            unit_of_root[r] = units.len() - 1;
            units.len() - 1
        } else {
            unit_of_root[r]
        };
        let unit = &mut units[u];
        unit.last = i;
        unit.len += 1;
        unit.tokens = unit.tokens.saturating_add(tokens[i]);
        unit_of[i] = Some(u);
    }

    let pinned_tokens = (0..n)
        .filter(|&i| pinned[i])
        .map(|i| tokens[i])
        .fold(0i64, i64::saturating_add);
    let fixed = pinned_tokens.saturating_add(overhead);
    if fixed > opts.max_tokens {
        return Err(ChatError::PinnedOverBudget {
            pinned_tokens,
            overhead_tokens: overhead,
            total: fixed,
            max_tokens: opts.max_tokens,
        });
    }
    let available = opts.max_tokens - fixed;

    // Aged tool results: their shorter forms, and each unit's members.
    let (forms, members) = match &opts.aging {
        Some(aging) => {
            let names: BTreeMap<&str, &str> = messages
                .iter()
                .flat_map(Message::calls)
                .map(|c| (c.id.as_str(), c.name.as_str()))
                .collect();
            let forms = aging.forms(messages, &tokens, &*counter, |id| {
                names.get(id).map(|n| (*n).to_owned())
            });
            let mut members: Vec<Vec<usize>> = vec![Vec::new(); units.len()];
            for (i, u) in unit_of.iter().enumerate() {
                if let Some(u) = u {
                    members[*u].push(i);
                }
            }
            (forms, members)
        }
        None => (Vec::new(), Vec::new()),
    };
    // The step each unit is kept at (0: whole).
    let mut unit_step: Vec<usize> = vec![0; if forms.is_empty() { 0 } else { units.len() }];
    // Newest units first (by their newest member), contiguous.
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| std::cmp::Reverse(units[u].last));
    let mut remaining = available;
    let mut cut: Option<usize> = None;
    let mut kept_units: Vec<usize> = Vec::new();
    let mut unit_decision: Vec<Option<Decision>> = (0..units.len()).map(|_| None).collect();
    for &u in &order {
        let unit = &units[u];
        let first = unit.first;
        let d = if let Some(c) = cut {
            Decision::OlderThanCut { cut_position: c }
        } else if unit.tokens <= remaining {
            remaining -= unit.tokens;
            kept_units.push(u);
            Decision::Kept
        } else if let Some((step, t)) = shortest_step(&forms, members.get(u), &tokens, remaining) {
            remaining -= t;
            kept_units.push(u);
            unit_step[u] = step;
            Decision::Kept
        } else {
            cut = Some(first);
            Decision::DoesNotFit {
                unit_tokens: unit.tokens,
                available_tokens: remaining,
                unit_len: unit.len,
            }
        };
        unit_decision[u] = Some(d);
    }
    if kept_units.is_empty()
        && let Some(&newest) = order.first()
    {
        let first = units[newest].first;
        return Err(ChatError::NothingFits {
            position: first,
            label: messages[first].label(),
            unit_tokens: units[newest].tokens,
            available_tokens: available,
        });
    }

    // Provider rules: start on a user message (always for Anthropic), end on `end_on`.
    kept_units.sort_by_key(|&u| units[u].first);
    let required = match (opts.format, &opts.start_on) {
        (_, Some(r)) => Some(r.clone()),
        (Format::Anthropic, None) => Some(Role::User),
        (Format::OpenAi, None) => None,
    };
    if let Some(required) = required {
        let starts_ok = |u: usize| {
            let first = units[u].first;
            let m = &messages[first];
            m.role == required && !m.is_tool_result()
        };
        let drop_n = kept_units.iter().take_while(|&&u| !starts_ok(u)).count();
        for &u in &kept_units[..drop_n] {
            unit_decision[u] = Some(Decision::StartRule {
                required: required.clone(),
            });
        }
        kept_units.drain(..drop_n);
    }
    if let Some(end_on) = &opts.end_on {
        while let Some(&u) = kept_units.last() {
            let last = units[u].last;
            if end_on.contains(&messages[last].role) {
                break;
            }
            unit_decision[u] = Some(Decision::EndRule);
            kept_units.pop();
        }
    }

    // Rows, kept messages and totals.
    let mut rows = Vec::with_capacity(n);
    let mut kept_msgs = Vec::new();
    let mut positions = Vec::new();
    let mut shortened = BTreeMap::new();
    let (mut kept_tokens, mut dropped_tokens) = (0i64, 0i64);
    for i in 0..n {
        let m = &messages[i];
        let mut d = match (&decision[i], unit_of[i]) {
            (Some(d), _) => d.clone(),
            (None, Some(u)) => unit_decision[u].clone().unwrap_or(Decision::Kept),
            (None, None) => Decision::Kept,
        };
        if d == Decision::Kept
            && let Some(Decision::OrphanResult { call_id } | Decision::UnansweredCall { call_id }) =
                &orphan[i]
        {
            d = Decision::KeptOrphan {
                call_id: call_id.clone(),
            };
        }
        let step = unit_of[i]
            .and_then(|u| unit_step.get(u).copied())
            .unwrap_or(0);
        if d == Decision::Kept
            && step > 0
            && let Some(f) = forms.get(i).filter(|f| !f.is_empty())
        {
            let form = step.min(f.len());
            let (short, t) = &f[form - 1];
            shortened.insert(i, short.clone());
            d = Decision::Shortened {
                form,
                tokens: *t,
                tokens_saved: tokens[i].saturating_sub(*t),
            };
        }
        if d.is_kept() {
            let sent = match &d {
                Decision::Shortened { tokens, .. } => *tokens,
                _ => tokens[i],
            };
            kept_tokens = kept_tokens.saturating_add(sent);
            kept_msgs.push(m);
            positions.push(i);
        } else {
            dropped_tokens = dropped_tokens.saturating_add(tokens[i]);
        }
        rows.push(MessageRow {
            position: i,
            message: m,
            tokens: tokens[i],
            unit: unit_of[i],
            decision: d,
            granularity: opts.granularity,
        });
    }
    // A window without conversation is refused by providers: say why
    // every conversation message went (see `ChatError::NoConversation`).
    let conversation = pinned.iter().filter(|p| !**p).count();
    if conversation > 0 && positions.iter().all(|&i| pinned[i]) {
        let (mut orphans, mut provider_rules, mut budget) = (0, 0, 0);
        for r in rows.iter().filter(|r| !pinned[r.position]) {
            match r.decision {
                Decision::OrphanResult { .. }
                | Decision::UnansweredCall { .. }
                | Decision::WithOrphan { .. } => orphans += 1,
                Decision::StartRule { .. } | Decision::EndRule => provider_rules += 1,
                Decision::DoesNotFit { .. } | Decision::OlderThanCut { .. } => budget += 1,
                _ => {}
            }
        }
        return Err(ChatError::NoConversation {
            messages: conversation,
            orphans,
            provider_rules,
            budget,
        });
    }
    let report = if opts.report {
        build_report(messages, &rows, &units)
    } else {
        SelectionReport::default()
    };
    Ok(Trimmed {
        messages: kept_msgs,
        positions,
        tokens: TokenTotals {
            max_tokens: opts.max_tokens,
            overhead,
            tools: tools_tokens,
            pinned: pinned_tokens,
            kept: kept_tokens,
            dropped: dropped_tokens,
            window: overhead.saturating_add(kept_tokens),
        },
        counter: counter.describe(),
        rows,
        report,
        shortened,
    })
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
    let mut opts = opts.clone();
    if opts.tools.is_none() {
        opts.tools = transcript.tools().cloned();
    }
    // The document's format decides the provider rules (and, without a
    // counter of the caller's, how tokens are counted).
    opts.format = transcript.format();
    if opts.counter.is_none() && opts.format == Format::Anthropic {
        // The estimate for this request body: its model, tool choice and thinking.
        let estimate = AnthropicEstimate::for_request(&transcript.to_value());
        opts.counter = Some(Arc::new(estimate));
    }
    let out = trim(transcript.messages(), &opts)?;
    Ok((transcript.with_messages(out.cloned_messages()), out))
}

/// The first `max` characters of `m`'s text with every run of whitespace
/// collapsed to one space (and none at either end), `…` appended when cut:
/// the excerpt of `m.text()`, read from the message's parts without
/// building the whole text, so a huge tool output costs `max` characters,
/// not its length. `None` when `m.text()` would be empty.
fn excerpt(m: &Message, max: usize) -> Option<String> {
    let texts = m.content.texts();
    let results = m.content.parts().iter().filter_map(|p| match p {
        crate::Part::ToolResult(r) => Some(r.content.texts()),
        _ => None,
    });
    let mut parts = texts.into_iter().chain(results.flatten()).peekable();
    // `m.text()` joins the parts with '\n': it is empty only for no part,
    // or a single empty one.
    let first = parts.peek().copied()?;
    let mut out = String::new();
    let mut count = 0usize;
    let mut pending_space = false;
    let mut seen = 0usize;
    for text in parts {
        seen += 1;
        if !out.is_empty() {
            pending_space = true;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                pending_space |= !out.is_empty();
                continue;
            }
            for ch in [pending_space.then_some(' '), Some(c)]
                .into_iter()
                .flatten()
            {
                if count == max {
                    out.push('…');
                    return Some(out);
                }
                out.push(ch);
                count += 1;
            }
            pending_space = false;
        }
    }
    (seen > 1 || !first.is_empty()).then_some(out)
}

/// The first step (1, 2, ...) at which a unit, its aged results shortened
/// (each to its form `min(step, forms)`), fits `remaining`, with its tokens
/// then; `None` when no step fits or the unit has nothing to shorten.
fn shortest_step(
    forms: &[Vec<(Message, i64)>],
    members: Option<&Vec<usize>>,
    tokens: &[i64],
    remaining: i64,
) -> Option<(usize, i64)> {
    let members = members?;
    let steps = members.iter().map(|&i| forms[i].len()).max()?;
    (1..=steps).find_map(|step| {
        let t = members.iter().fold(0i64, |acc, &i| {
            let own = match forms[i].len() {
                0 => tokens[i],
                n => forms[i][step.min(n) - 1].1,
            };
            acc.saturating_add(own)
        });
        (t <= remaining).then_some((step, t))
    })
}

fn build_report(messages: &[Message], rows: &[MessageRow<'_>], units: &[Unit]) -> SelectionReport {
    let n = rows.len().max(1) as f64;
    let mut included = Vec::new();
    let mut excluded = Vec::new();
    for r in rows {
        let m = &messages[r.position];
        let label = m.label();
        let content = match excerpt(m, 200) {
            None => format!("#{} {label}", r.position),
            Some(text) => format!("#{} {label}: {text}", r.position),
        };
        let kind = if m.role.is_prompt() {
            ContextKind::SYSTEM_PROMPT
        } else if m.is_tool_result() {
            ContextKind::TOOL_OUTPUT
        } else {
            ContextKind::MESSAGE
        };
        let group = r
            .unit
            .filter(|&u| units[u].len > 1)
            .map(|u| format!("unit-{u}"));
        let sent = match &r.decision {
            Decision::Shortened { tokens, .. } => *tokens,
            _ => r.tokens,
        };
        let built = ContextItem::builder(content, sent)
            .kind(kind)
            .pinned(r.decision == Decision::Pinned)
            .group_opt(group.clone())
            .metadata("position", r.position.to_string())
            .metadata("role", m.role.as_str())
            .build();
        // Content is never empty and the group id is `unit-N`: building cannot fail.
        let Ok(item) = built else { continue };
        // Newest scores highest: the order the newest-turns policy fills in.
        let score = (r.position as f64 + 1.0) / n;
        match &r.decision {
            Decision::Pinned => included.push(
                IncludedItem::new(item, 1.0, InclusionReason::Pinned).at_position(r.position),
            ),
            d if d.is_kept() => {
                let mut row =
                    IncludedItem::new(item, score, InclusionReason::Scored).at_position(r.position);
                if let Decision::Shortened {
                    form, tokens_saved, ..
                } = d
                {
                    row.variant = Some(VariantChoice {
                        variant: *form,
                        reason: VariantReason::DidNotFit,
                        tokens_saved: *tokens_saved,
                    });
                }
                included.push(row);
            }
            d => {
                let reason = match (d, group) {
                    (
                        Decision::DoesNotFit {
                            unit_tokens,
                            available_tokens,
                            ..
                        },
                        Some(group),
                    ) => ExclusionReason::GroupExcluded {
                        group,
                        group_tokens: *unit_tokens,
                        available_tokens: *available_tokens,
                    },
                    (
                        Decision::DoesNotFit {
                            unit_tokens,
                            available_tokens,
                            ..
                        },
                        None,
                    ) => ExclusionReason::BudgetExceeded {
                        item_tokens: *unit_tokens,
                        available_tokens: *available_tokens,
                    },
                    (other, _) => ExclusionReason::Filtered {
                        filter_name: filter_name(other).into(),
                    },
                };
                excluded.push(ExcludedItem::new(item, score, reason).at_position(r.position));
            }
        }
    }
    excluded.sort_by(|a, b| score_cmp_desc(a.score, b.score));
    SelectionReport::new(included, excluded)
}

fn filter_name(d: &Decision) -> &'static str {
    match d {
        Decision::OlderThanCut { .. } => "chat:older-than-cut",
        Decision::OrphanResult { .. } => "chat:orphan-tool-result",
        Decision::UnansweredCall { .. } => "chat:unanswered-tool-call",
        Decision::WithOrphan { .. } => "chat:with-orphan",
        Decision::StartRule { .. } => "chat:start-on",
        Decision::EndRule => "chat:end-on",
        _ => "chat",
    }
}

#[cfg(test)]
mod excerpt_tests {
    use super::*;

    /// The excerpt by its definition: `m.text()`, words joined by one space,
    /// cut at `max` characters.
    fn by_definition(m: &Message, max: usize) -> Option<String> {
        let text = m.text();
        if text.is_empty() {
            return None;
        }
        let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(if one_line.chars().count() <= max {
            one_line
        } else {
            let mut t: String = one_line.chars().take(max).collect();
            t.push('…');
            t
        })
    }

    #[test]
    fn a_huge_part_costs_only_the_excerpt() {
        let m = Message::user(format!("  start {}", "x ".repeat(1_000_000)));
        // "start" + 1,000,000 × " x": cut after 9 characters ("start x x").
        assert_eq!(excerpt(&m, 9).as_deref(), Some("start x x…"));
        assert_eq!(excerpt(&Message::user(""), 9), None);
        assert_eq!(excerpt(&Message::user(" \n "), 9).as_deref(), Some(""));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn streams_the_excerpt_of_the_definition(
            texts in proptest::collection::vec("[ a\nb\té]{0,12}", 0..4),
            max in 0usize..12,
        ) {
            let m = Message::user(texts.first().cloned().unwrap_or_default());
            proptest::prop_assert_eq!(excerpt(&m, max), by_definition(&m, max));
            let parts: Vec<serde_json::Value> = texts
                .iter()
                .map(|t| serde_json::json!({"type": "text", "text": t}))
                .collect();
            let doc = serde_json::json!([{"role": "user", "content": parts}]).to_string();
            if let Ok(t) = crate::Transcript::parse(&doc) {
                let m = &t.messages()[0];
                proptest::prop_assert_eq!(excerpt(m, max), by_definition(m, max));
            }
        }
    }
}
