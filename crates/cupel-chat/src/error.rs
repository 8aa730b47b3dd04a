//! [`ChatError`]: everything the chat crate can refuse, with the numbers and
//! positions needed to act. It is the one error type the crate's functions
//! return (issue 50, item 4): a transcript, a trim, a cache session or a
//! simulation, a stored session, the placement of a synthesized message,
//! and the options that configure them. Two traits keep an error type of
//! their own, the one their implementors return: [`SessionStore`](crate::SessionStore)
//! ([`SessionStoreError`], wrapped here as [`ChatError::Store`]) and
//! [`Summarizer`](crate::Summarizer) ([`SummarizeError`](crate::SummarizeError),
//! which fails no window: the previous summary is kept and the failure
//! reported).

use crate::cache::SessionStoreError;

/// Why a transcript could not be read, counted, trimmed or windowed, a
/// session turn not committed, or an option not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// The text is not JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The JSON is not a chat document of the expected format.
    #[error("{path}: {message}")]
    Shape {
        /// Where (`messages[3].tool_calls[0]`), empty for the whole document.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An encoding name tiktoken does not know.
    #[error(
        "unknown encoding `{name}` (expected o200k_base or cl100k_base, or an OpenAI model name)"
    )]
    UnknownEncoding {
        /// The name as given.
        name: String,
    },
    /// The budget is not positive.
    #[error("max_tokens must be positive, got {max_tokens}")]
    InvalidBudget {
        /// The budget given.
        max_tokens: i64,
    },
    /// The running summary's bound leaves no budget for the conversation
    /// (see [`Compaction::max_tokens`](crate::Compaction::max_tokens)).
    #[error(
        "the summary's bound of {reserve} tokens leaves no room for the pinned messages and the conversation within max_tokens {max_tokens}; lower the bound or raise the budget"
    )]
    SummaryReserve {
        /// The summary bound held back.
        reserve: i64,
        /// The budget.
        max_tokens: i64,
    },
    /// What must always be sent (pinned prompts, tool definitions, reply
    /// priming) is larger than the budget.
    #[error(
        "the pinned messages need {pinned_tokens} tokens and the request overhead {overhead_tokens}, {total} in all, over max_tokens {max_tokens}"
    )]
    PinnedOverBudget {
        /// Tokens of the pinned messages.
        pinned_tokens: i64,
        /// Tool definitions and reply priming.
        overhead_tokens: i64,
        /// Their sum.
        total: i64,
        /// The budget.
        max_tokens: i64,
    },
    /// A pinned prompt (system or developer message) makes or answers a
    /// tool call. Pinned messages are always sent and never move, so the
    /// other half of that call could be dropped or sit before the prompt,
    /// and providers accept tool traffic only between the assistant and
    /// tool results. Remove the message's tool fields, or stop pinning
    /// prompts ([`Trim::pin_system`](crate::Trim::pin_system)`(false)`) so
    /// it is trimmed with its tool group.
    #[error("message #{position} ({label}) is a pinned prompt but {action} tool call {call_id}")]
    PinnedToolTraffic {
        /// Input position of the message.
        position: usize,
        /// Its label (`developer`, `system`).
        label: String,
        /// `makes` or `answers`.
        action: &'static str,
        /// The first call id involved.
        call_id: String,
    },
    /// The input has conversation messages, but none of them can be sent:
    /// each is incomplete tool traffic (a result without its call, a call
    /// never answered) or was dropped so the window obeys the provider's
    /// rules. A window with no conversation is one providers refuse
    /// (Anthropic needs at least one message, starting with the user).
    #[error(
        "no conversation message can be sent: of {messages} messages after the pinned prompts, {orphans} went as tool traffic missing its other half, {provider_rules} for the provider's rules and {budget} for the budget"
    )]
    NoConversation {
        /// Messages that are not pinned.
        messages: usize,
        /// Dropped as orphans or with an orphan's tool group.
        orphans: usize,
        /// Dropped by the start or end rule.
        provider_rules: usize,
        /// Dropped because they did not fit.
        budget: usize,
    },
    /// Not even the newest message (with its group) fits, so the window would
    /// hold no conversation at all, which providers refuse.
    #[error(
        "nothing fits: {} needs {unit_tokens} tokens, {available_tokens} left after the pinned messages and the request overhead",
        newest_unit(*position, label, *last_position, *unit_messages, *whole_conversation)
    )]
    NothingFits {
        /// Input position of the unit's first message.
        position: usize,
        /// That message's label (`user`, `tool result for call_1`, ...).
        label: String,
        /// Input position of the unit's last message.
        last_position: usize,
        /// How many input messages the unit spans, first to last.
        unit_messages: usize,
        /// Whether the unit is the whole conversation after the pinned
        /// messages (e.g. exchanges as the unit, and one user message).
        whole_conversation: bool,
        /// The unit's tokens.
        unit_tokens: i64,
        /// What was left for the conversation.
        available_tokens: i64,
    },
    /// A recall window ([`Trim::recall`](crate::Trim::recall)) was asked
    /// to fold a running summary too ([`Trim::summarize`](crate::Trim::summarize)):
    /// both place one message after the pinned prefix, and combining them
    /// is not specified yet.
    #[error(
        "a recall window cannot also keep a running summary: use recall or a summary, not both"
    )]
    RecallWithSummary,
    /// A recall option ([`RecallOptions`](crate::RecallOptions)) is out
    /// of range.
    #[error("recall {option} must be {expected}, got {value}")]
    InvalidRecall {
        /// The option (`newest_share`, `neighbours`).
        option: &'static str,
        /// The value given, as written by `{}`.
        value: String,
        /// The range it must be in.
        expected: &'static str,
    },
    /// The recall query given is longer than the scorer reads.
    #[error("the recall query is {bytes} bytes, over the {max}-byte limit")]
    QueryTooLong {
        /// Its length in bytes.
        bytes: usize,
        /// The limit ([`cupel_scorers::MAX_QUERY_BYTES`]).
        max: usize,
    },
    /// A calibration needs at least one observation with a positive estimate.
    #[error(
        "a calibration needs at least one observation with a positive estimate (got {observations})"
    )]
    NoObservations {
        /// How many observations were given.
        observations: usize,
    },
    /// A low-water fraction outside `0 < f <= 1`.
    #[error("the low-water fraction must be in (0, 1], got {fraction}")]
    InvalidLowWaterFraction {
        /// The fraction given.
        fraction: f64,
    },
    /// A low-water mark in tokens that is negative or above the budget.
    #[error("the low-water mark must be between 0 and max_tokens {max_tokens}, got {low_water}")]
    InvalidLowWater {
        /// The mark given.
        low_water: i64,
        /// The budget.
        max_tokens: i64,
    },
    /// One request of a simulation, named: what
    /// [`SimTurn::error`](crate::SimTurn::error) reports for a request a
    /// strategy could not window (its newest unit alone over the budget,
    /// the pinned prompts over it, no conversation message left; the replay
    /// goes on), and what [`simulate`](crate::simulate) returns when
    /// trimming one request fails for another reason (the replay stops).
    #[error("request {request} (the first {messages} messages) cannot be windowed: {source}")]
    Request {
        /// The request, numbered from 1 as the simulation numbers them.
        request: usize,
        /// The messages that request holds.
        messages: usize,
        /// Why.
        source: Box<ChatError>,
    },
    /// A simulation needs at least one request: a non-pinned message before
    /// an assistant message.
    #[error(
        "the transcript has no request to replay: {messages} messages, {assistant} from the assistant, none after a user message"
    )]
    NoRequests {
        /// Messages in the transcript.
        messages: usize,
        /// Assistant messages.
        assistant: usize,
    },
    /// A session store refused or failed (a conflict: another replica
    /// committed first — call again to re-plan from its state).
    #[error(transparent)]
    Store(#[from] SessionStoreError),
    /// The pinned prefix is longer than the window.
    #[error("the window holds {len} messages, fewer than its {pinned} pinned messages")]
    PinnedBeyondWindow {
        /// Pinned messages claimed.
        pinned: usize,
        /// Messages in the window.
        len: usize,
    },
    /// The message before the place makes tool calls whose results follow:
    /// nothing may come between them.
    #[error(
        "window message #{at} calls tools ({calls}) whose results must follow it directly; a synthesized message cannot go after it"
    )]
    InsideToolGroup {
        /// Window index of the calling message.
        at: usize,
        /// Its call ids.
        calls: String,
    },
    /// The message after the place starts with tool results, which must
    /// directly follow their calls (and, in Anthropic's combined user
    /// turn, come first).
    #[error(
        "window message #{at} starts with tool results; a synthesized message cannot go before it"
    )]
    BeforeToolResults {
        /// Window index of the result message.
        at: usize,
    },
    /// The message's role is not the one [`synthesize`](crate::inject::synthesize) gives the format
    /// (e.g. a `system` message in an Anthropic window, which would be
    /// written into the top-level system prompt).
    #[error("a synthesized {format} message must have role {expected}, not {found}")]
    WrongRole {
        /// The format.
        format: &'static str,
        /// The role it must have.
        expected: &'static str,
        /// The role it has.
        found: String,
    },
    /// An option core checks was refused (a head and tail size, a
    /// placeholder template, a summary bound).
    #[error(transparent)]
    Core(#[from] cupel_core::CupelError),
}

/// How [`ChatError::NothingFits`] names the newest unit.
fn newest_unit(position: usize, label: &str, last: usize, messages: usize, whole: bool) -> String {
    match (messages, whole) {
        (0 | 1, true) => format!("the only message (#{position} {label})"),
        (0 | 1, false) => format!("the newest message (#{position} {label})"),
        (n, true) => format!(
            "the newest unit is the whole conversation (#{position} {label} to #{last}, {n} messages) and"
        ),
        (n, false) => format!("the newest unit (#{position} {label} to #{last}, {n} messages)"),
    }
}

impl From<ChatError> for cupel_core::CupelError {
    /// Core's own error comes back as it was; any other is an invalid
    /// argument, with the chat error's message.
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::Core(e) => e,
            e => cupel_core::CupelError::InvalidArgument(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ChatError;
    use crate::cache::SessionStoreError;
    use cupel_core::CupelError;

    /// The names before the crate had one error type still compile, as
    /// deprecated aliases whose variant paths are `ChatError`'s.
    #[test]
    #[allow(deprecated)]
    fn the_old_error_names_are_aliases_of_chat_error() {
        let e: crate::CacheError = ChatError::NoRequests {
            messages: 1,
            assistant: 0,
        };
        assert!(matches!(
            e,
            crate::CacheError::NoRequests { messages: 1, .. }
        ));
        let e: ChatError = crate::inject::InjectError::BeforeToolResults { at: 1 };
        assert_eq!(
            e.to_string(),
            "window message #1 starts with tool results; a synthesized message cannot go before it"
        );
        let conflict = SessionStoreError::Conflict {
            key: "c".into(),
            expected: Some(1),
            current: Some(2),
        };
        let e: ChatError = conflict.clone().into();
        assert!(matches!(&e, crate::SessionError::Store(c) if *c == conflict));
        // Transparent: the store's own message.
        assert_eq!(e.to_string(), conflict.to_string());
    }

    /// Core's error goes in and comes back out unchanged; the options that
    /// core checks keep core's message.
    #[test]
    fn core_errors_round_trip_and_keep_their_message() {
        let core =
            CupelError::InvalidArgument("a summary bound must be at least 1 token; got 0".into());
        let chat = ChatError::from(core.clone());
        assert_eq!(chat.to_string(), core.to_string());
        assert_eq!(CupelError::from(chat), core);
        let e = crate::Compaction::new(crate::DigestSummarizer::new())
            .max_tokens(0)
            .err();
        assert_eq!(e, Some(ChatError::Core(core)));
        let aged = crate::AgeToolResults::new(2).truncate_to(0).err();
        assert!(
            matches!(aged, Some(ChatError::Core(CupelError::InvalidArgument(_)))),
            "{aged:?}"
        );
        // Any other chat error becomes an invalid argument with its message.
        let other = ChatError::InvalidBudget { max_tokens: -1 };
        assert_eq!(
            CupelError::from(other),
            CupelError::InvalidArgument("max_tokens must be positive, got -1".into())
        );
    }
}
