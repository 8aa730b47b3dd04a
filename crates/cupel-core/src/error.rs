//! The one error type of the Cupel crates.

use std::fmt;

/// Every way a Cupel operation can fail.
///
/// Each variant names one failure class and carries the numbers a caller needs
/// to fix the input (the offending value, the limit it broke). The enum is
/// `#[non_exhaustive]`: match the variants you handle and keep a `_` arm.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CupelError {
    // ----- item construction -------------------------------------------------
    /// A [`ContextItem`](crate::ContextItem) was built with empty content.
    #[error("context item content must not be empty")]
    EmptyContent,

    /// A [`ContextKind`](crate::ContextKind) was empty or whitespace only.
    #[error("context kind must not be empty or whitespace-only (got {value:?})")]
    InvalidKind {
        /// The rejected value.
        value: String,
    },

    /// A [`ContextSource`](crate::ContextSource) was empty or whitespace only.
    #[error("context source must not be empty or whitespace-only (got {value:?})")]
    InvalidSource {
        /// The rejected value.
        value: String,
    },

    // ----- budget construction (the spec's seven rules) -----------------------
    /// Rule 1: `max_tokens` was negative.
    #[error("budget max_tokens must be >= 0 (got {max_tokens})")]
    NegativeMaxTokens {
        /// The rejected value.
        max_tokens: i64,
    },

    /// Rule 2: `target_tokens` was negative.
    #[error("budget target_tokens must be >= 0 (got {target_tokens})")]
    NegativeTargetTokens {
        /// The rejected value.
        target_tokens: i64,
    },

    /// Rule 3: `target_tokens` was larger than `max_tokens`.
    #[error("budget target_tokens ({target_tokens}) must not exceed max_tokens ({max_tokens})")]
    TargetExceedsMax {
        /// The soft target that was too large.
        target_tokens: i64,
        /// The hard ceiling it exceeded.
        max_tokens: i64,
    },

    /// Rule 4: `output_reserve` was negative.
    #[error("budget output_reserve must be >= 0 (got {output_reserve})")]
    NegativeOutputReserve {
        /// The rejected value.
        output_reserve: i64,
    },

    /// Rule 5: `output_reserve` was larger than `max_tokens`.
    #[error("budget output_reserve ({output_reserve}) must not exceed max_tokens ({max_tokens})")]
    OutputReserveExceedsMax {
        /// The reserve that was too large.
        output_reserve: i64,
        /// The hard ceiling it exceeded.
        max_tokens: i64,
    },

    /// Rule 6: `estimation_safety_margin_percent` was outside `[0, 100]` (or NaN).
    #[error("budget estimation_safety_margin_percent must be within [0, 100] (got {value})")]
    SafetyMarginOutOfRange {
        /// The rejected percentage.
        value: f64,
    },

    /// Rule 7: a reserved-slot count was negative.
    #[error("budget reserved slot for kind '{kind}' must be >= 0 (got {value})")]
    NegativeReservedSlot {
        /// The kind whose reservation was rejected.
        kind: String,
        /// The rejected count.
        value: i64,
    },

    // ----- component configuration ---------------------------------------------
    /// A scorer was configured with an invalid parameter.
    #[error("scorer configuration: {0}")]
    ScorerConfig(String),

    /// A slicer was configured with an invalid parameter.
    #[error("slicer configuration: {0}")]
    SlicerConfig(String),

    /// A placer was configured with an invalid parameter.
    #[error("placer configuration: {0}")]
    PlacerConfig(String),

    /// A pipeline, policy or declarative configuration was invalid.
    #[error("pipeline configuration: {0}")]
    PipelineConfig(String),

    /// A declarative configuration (a policy file or table) was invalid;
    /// the [`ConfigError`] says where (key path, line and column) and what
    /// was expected.
    #[error("pipeline configuration: {0}")]
    Config(ConfigError),

    /// A variant of an item (see [`ItemVariant`](crate::ItemVariant)) was
    /// malformed: empty content, a token count below 0 or above the form
    /// before it, or a value outside `[0, 1]`.
    #[error("variant {variant} of the item is invalid: {detail}")]
    InvalidVariant {
        /// The variant's number (1 is the first variant).
        variant: usize,
        /// What is wrong, with the numbers.
        detail: String,
    },

    /// A function argument broke its documented precondition.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    // ----- run-time failures ------------------------------------------------------
    /// Pinned items need more tokens than `max_tokens - output_reserve` allows.
    #[error(
        "Pinned items require {pinned_tokens} tokens, but only {available_tokens} are available"
    )]
    PinnedBudgetExceeded {
        /// Sum of the tokens of all pinned items.
        pinned_tokens: i64,
        /// `max_tokens - output_reserve`.
        available_tokens: i64,
    },

    /// The merged selection exceeded the budget's
    /// [`overflow_limit`](crate::ContextBudget::overflow_limit) under
    /// [`OverflowStrategy::Throw`](crate::OverflowStrategy::Throw).
    #[error(
        "Selected items require {selected_tokens} tokens, exceeding target budget of {target_tokens}"
    )]
    BudgetOverflow {
        /// Tokens of the merged (pinned + sliced) selection.
        selected_tokens: i64,
        /// The limit the selection was checked against:
        /// [`ContextBudget::overflow_limit`](crate::ContextBudget::overflow_limit),
        /// which is `target_tokens` unless `max_tokens - output_reserve` is
        /// lower (clarification S-15a).
        target_tokens: i64,
    },

    /// The knapsack table would exceed its guard: by default
    /// [`DEFAULT_MAX_TABLE_BYTES`](crate::DEFAULT_MAX_TABLE_BYTES) bytes of
    /// keep table and DP rows together, optionally also a cell count (see
    /// [`TableLimit`]).
    ///
    /// The numbers are exact (`u128`): nothing saturates, so the message never
    /// compares a clamped value with itself.
    #[error("{}", table_too_large(*.candidates, *.capacity, *.cells, *.keep_bytes, *.row_bytes, *.limit))]
    TableTooLarge {
        /// Number of non-zero-token candidates.
        candidates: usize,
        /// Discretised capacity plus one (the DP row length).
        capacity: u64,
        /// `candidates * capacity`.
        cells: u128,
        /// Bytes the keep table would take: `candidates * ceil(capacity / 64) * 8`.
        keep_bytes: u128,
        /// Bytes the two DP rows would take: `2 * capacity * width`, the
        /// width being the narrowest integer that holds the candidates'
        /// total scaled value (4, 8 or 16 bytes; 16 when variants are
        /// weighed). The byte guard counts `keep_bytes + row_bytes`.
        row_bytes: u128,
        /// The guard that was exceeded.
        limit: TableLimit,
    },

    /// A score was NaN or infinite (the one rule for non-finite scores: they
    /// are errors). The pipeline checks the scorer's output before any later
    /// stage sees it; slicers check the scores they are given.
    #[error(
        "{scorer} gave a non-finite score ({score}) to item {index}: scores must be finite numbers"
    )]
    NonFiniteScore {
        /// Who produced the score (`Scorer::name`, or the slicer that was given it).
        scorer: String,
        /// The item's index: into the pipeline's input items, or into the
        /// slice the slicer was given.
        index: usize,
        /// The offending value (NaN, `inf` or `-inf`).
        score: f64,
    },

    /// An embedding (an item's or the query's) cannot be compared: empty,
    /// a NaN or infinite component, or every component zero (no direction).
    #[error("the {owner} embedding is invalid: {detail}")]
    InvalidEmbedding {
        /// Whose embedding: `item`, `item 3` (the input index) or `query`.
        owner: String,
        /// What is wrong, with the component's index when one is.
        detail: String,
    },

    /// An item's embedding and the query's have different lengths.
    #[error(
        "item {index}'s embedding has {item_dims} dimensions but the query's has {query_dims}: \
         embed items and query with the same model"
    )]
    EmbeddingDimensionMismatch {
        /// The item's index in the pipeline's input (or in the slice given
        /// to the scorer, outside the pipeline).
        index: usize,
        /// The item embedding's length.
        item_dims: usize,
        /// The query embedding's length.
        query_dims: usize,
    },

    /// A vector similarity scorer ran without a query embedding.
    #[error(
        "{scorer} needs a query embedding: give the run a query with an embedding \
         (Query::with_embedding, or --query-embedding on the command line)"
    )]
    QueryEmbeddingMissing {
        /// The scorer (`Scorer::name`).
        scorer: String,
    },

    /// A count quota could not be met and the slicer was told to fail
    /// (`ScarcityBehavior::Throw` in `cupel-slicers`).
    #[error(
        "{slicer}: candidate pool for kind '{kind}' has {satisfied} items but RequireCount is {required}."
    )]
    CountRequirementNotMet {
        /// The slicer that failed (`CountQuotaSlice` or `CountConstrainedKnapsackSlice`).
        slicer: &'static str,
        /// The kind whose requirement could not be met.
        kind: String,
        /// How many candidates of that kind there were.
        satisfied: usize,
        /// The configured `require_count`.
        required: usize,
    },

    /// The input's token counts add up beyond what an `i64` can hold.
    #[error(
        "token counts overflow: the {sign} token counts of the input add up to {total}, beyond the i64 range"
    )]
    TokenOverflow {
        /// `"positive"` or `"negative"`.
        sign: TokenSign,
        /// The exact total.
        total: i128,
    },
}

impl From<ConfigError> for CupelError {
    fn from(err: ConfigError) -> Self {
        CupelError::Config(err)
    }
}

/// A configuration error with its location: the key path, the line and
/// column where the parser knows them, the keys or names that were
/// expected, the message, and the underlying parser error as
/// [`source`](std::error::Error::source).
///
/// Displayed as the message followed by ` (line L, column C)` when the
/// position is known; the message already names the key.
///
/// ```
/// use cupel_core::{ConfigError, CupelError};
/// let e = ConfigError::new("unknown policy key `dedupliction`")
///     .with_key_path("dedupliction")
///     .with_position(2, 1)
///     .with_expected(["deduplication", "placer"]);
/// assert_eq!(e.key_path(), Some("dedupliction"));
/// assert_eq!(e.to_string(), "unknown policy key `dedupliction` (line 2, column 1)");
/// let e = CupelError::from(e);
/// assert!(e.to_string().starts_with("pipeline configuration: unknown policy key"));
/// ```
#[derive(Debug, Clone)]
pub struct ConfigError(Box<ConfigErrorInner>);

/// Boxed so that [`CupelError`] stays small.
#[derive(Debug, Clone)]
struct ConfigErrorInner {
    message: String,
    kind: ConfigErrorKind,
    detail: Option<String>,
    key_path: Option<String>,
    position: Option<(usize, usize)>,
    expected: Vec<String>,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl ConfigError {
    /// An error with `message` and no location.
    pub fn new(message: impl Into<String>) -> Self {
        Self(Box::new(ConfigErrorInner {
            message: message.into(),
            kind: ConfigErrorKind::Other,
            detail: None,
            key_path: None,
            position: None,
            expected: Vec::new(),
            source: None,
        }))
    }

    /// Sets what kind of error this is (default [`ConfigErrorKind::Other`]).
    pub fn with_kind(mut self, kind: ConfigErrorKind) -> Self {
        self.0.kind = kind;
        self
    }

    /// Sets the parser's own words, without the prefix naming where the
    /// error sits (see [`detail`](Self::detail)).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.0.detail = Some(detail.into());
        self
    }

    /// What kind of error this is: an unknown key, a syntax error, a value
    /// of the wrong type or shape, or another problem.
    pub fn kind(&self) -> ConfigErrorKind {
        self.0.kind
    }

    /// The parser's own words on one line, without the prefix naming the
    /// key or the position (`invalid type: string "x", expected f64`); the
    /// [`message`](Self::message) when no separate detail was set.
    pub fn detail(&self) -> &str {
        self.0.detail.as_deref().unwrap_or(&self.0.message)
    }

    /// Replaces the message (e.g. to prefix where the error sits).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.0.message = message.into();
        self
    }

    /// Sets the key path (`scorers[0].curve.extra`: dots between keys, brackets
    /// around indices, the spelling of `strict::KeyPath`).
    pub fn with_key_path(mut self, path: impl Into<String>) -> Self {
        self.0.key_path = Some(path.into());
        self
    }

    /// Sets the 1-based line and column.
    pub fn with_position(mut self, line: usize, column: usize) -> Self {
        self.0.position = Some((line, column));
        self
    }

    /// Sets the keys or names that were expected there.
    pub fn with_expected<I, S>(mut self, expected: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.0.expected = expected.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the underlying error (a TOML or JSON parser error).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(std::sync::Arc::new(source));
        self
    }

    /// The message, without the position.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The key path (`scorers[0].wieght`), when known.
    pub fn key_path(&self) -> Option<&str> {
        self.0.key_path.as_deref()
    }

    /// The 1-based line, when known.
    pub fn line(&self) -> Option<usize> {
        self.0.position.map(|(l, _)| l)
    }

    /// The 1-based column, when known.
    pub fn column(&self) -> Option<usize> {
        self.0.position.map(|(_, c)| c)
    }

    /// The keys or names that were expected (empty when not relevant).
    pub fn expected(&self) -> &[String] {
        &self.0.expected
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)?;
        if let Some((line, column)) = self.0.position {
            write!(f, " (line {line}, column {column})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// What kind of problem a [`ConfigError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// A key no field of the table's type matches; the error's
    /// [`key_path`](ConfigError::key_path) ends with it.
    UnknownKey,
    /// The document is not well-formed (a missing bracket, an early end).
    Syntax,
    /// A value of the wrong type or shape, or a required key missing.
    Invalid,
    /// Anything else (a misplaced key, a value out of range, ...).
    Other,
}

/// Equal when the message, key path, position and expected keys are equal
/// (the kind, detail and source follow from those and are not compared).
impl PartialEq for ConfigError {
    fn eq(&self, other: &Self) -> bool {
        self.0.message == other.0.message
            && self.0.key_path == other.0.key_path
            && self.0.position == other.0.position
            && self.0.expected == other.0.expected
    }
}

/// Default knapsack table guard: 64 MiB for the keep table (one bit per
/// cell, rows padded to whole 64-bit words) and the two DP rows (4, 8 or 16
/// bytes per bucket of capacity) together.
pub const DEFAULT_MAX_TABLE_BYTES: u64 = 64 * 1024 * 1024;

/// The guard a [`CupelError::TableTooLarge`] exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLimit {
    /// The keep table and the DP rows would take more than this many bytes
    /// (`max_table_bytes`).
    Bytes(u64),
    /// The keep table would have more than this many cells (`max_table_cells`).
    Cells(u64),
}

fn table_too_large(
    candidates: usize,
    capacity: u64,
    cells: u128,
    keep_bytes: u128,
    row_bytes: u128,
    limit: TableLimit,
) -> String {
    let over = match limit {
        TableLimit::Bytes(b) => format!("more than the max_table_bytes guard of {b} bytes"),
        TableLimit::Cells(c) => format!("more than the max_table_cells guard of {c} cells"),
    };
    let raise = match limit {
        TableLimit::Bytes(_) => "max_table_bytes",
        TableLimit::Cells(_) => "max_table_cells",
    };
    let plural = if candidates == 1 { "" } else { "s" };
    format!(
        "knapsack table too large: {candidates} candidate{plural} x {capacity} capacity buckets = \
         {cells} cells, a keep table of {keep_bytes} bytes and DP rows of {row_bytes} bytes, \
         {over}; raise the knapsack \
         `bucket_size` (fewer buckets), lower `target_tokens`, or raise `{raise}`"
    )
}

/// Which side of the `i64` range a [`CupelError::TokenOverflow`] fell off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenSign {
    /// Non-negative token counts summed above `i64::MAX`.
    Positive,
    /// Negative token counts summed below `i64::MIN`.
    Negative,
}

impl fmt::Display for TokenSign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenSign::Positive => "positive",
            TokenSign::Negative => "negative",
        })
    }
}
