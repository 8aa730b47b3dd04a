//! [`ChatError`]: everything the chat crate can refuse, with the numbers and
//! positions needed to act.

/// Why a transcript could not be read, counted or trimmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    fn from(e: ChatError) -> Self {
        cupel_core::CupelError::InvalidArgument(e.to_string())
    }
}
