//! What the context gate decided and why: [`GateReport`], one [`NodeReport`]
//! per retrieval node, [`GateDecision`] and [`CompactionPolicyKind`].
//!
//! The report is plain data, next to the gate that fills it; whatever
//! presents decisions (the OpenTelemetry bridge in `cupel-otel`, the `cupel`
//! command-line tool) reads it by depending on this crate, which depends on
//! `cupel-core` only.

use std::fmt;

use crate::CodeLanguage;

/// The name (and `event_type`) of the event every gate decision emits.
pub const GATE_EVENT: &str = "MANAGE_CONTEXT_BUDGET";

/// The gate's verdict: exactly these two (a failure is an error, not a verdict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateDecision {
    /// Everything fits: the batch is appended.
    Admitted,
    /// The batch does not fit on top of the context: compact the context first.
    Over,
}

impl GateDecision {
    /// `admitted` or `over`: the `verdict` field of the `MANAGE_CONTEXT_BUDGET`
    /// event, and the `decision` of the report's JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            GateDecision::Admitted => "admitted",
            GateDecision::Over => "over",
        }
    }
}

impl GateDecision {
    /// The seed's name for the transition: `on_ok` (admitted) or `on_over`,
    /// the `decision` field of the `MANAGE_CONTEXT_BUDGET` event.
    ///
    /// ```
    /// use cupel_gate::GateDecision;
    ///
    /// assert_eq!(GateDecision::Admitted.seed_outcome(), "on_ok");
    /// assert_eq!(GateDecision::Over.seed_outcome(), "on_over");
    /// ```
    pub const fn seed_outcome(self) -> &'static str {
        match self {
            GateDecision::Admitted => "on_ok",
            GateDecision::Over => "on_over",
        }
    }
}

impl fmt::Display for GateDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of a compaction policy: `always`, `threshold` or `demand` on the wire.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CompactionPolicyKind {
    /// Compact every node of the language.
    Always,
    /// Compact when the raw node would take the context above a fraction of
    /// the budget.
    Threshold,
    /// Compact when a consumed inbox message asks for it.
    Demand,
}

impl CompactionPolicyKind {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            CompactionPolicyKind::Always => "always",
            CompactionPolicyKind::Threshold => "threshold",
            CompactionPolicyKind::Demand => "demand",
        }
    }
}

impl fmt::Display for CompactionPolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why no compaction rule applied to a node (see [`NodeReport::unmatched`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unmatched {
    /// The classifier could not tell the language: no rule can match
    /// `unknown`.
    UnknownLanguage,
    /// The language was recognised, but the configuration has no rule for it.
    NoRule,
}

impl Unmatched {
    /// `unknown_language` or `no_rule`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unmatched::UnknownLanguage => "unknown_language",
            Unmatched::NoRule => "no_rule",
        }
    }
}

impl fmt::Display for Unmatched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unmatched::UnknownLanguage => "language unknown, so no compaction rule can match",
            Unmatched::NoRule => "no compaction rule for this language",
        })
    }
}

/// What the gate did with one node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct NodeReport {
    /// The node's position in the buffer.
    pub index: usize,
    /// The node's id, if any.
    pub id: Option<String>,
    /// The detected language.
    pub language: CodeLanguage,
    /// The policy of the first rule for that language, if there is one.
    pub policy: Option<CompactionPolicyKind>,
    /// Whether the rule's policy applied compaction to this node.
    pub compacted: bool,
    /// Tokens of the node's block with its raw text (`compact: false`).
    pub tokens_before: i64,
    /// Tokens of the block as it would be appended (equal to
    /// `tokens_before` when not compacted).
    pub tokens_after: i64,
    /// Set when no compaction rule matched the node, and why; `None` when a
    /// rule matched (whether or not its policy compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<Unmatched>,
}

impl NodeReport {
    /// The report of node `index` in `language`: no id, no policy, not
    /// compacted, zero tokens. Set the public fields for the rest.
    pub fn new(index: usize, language: CodeLanguage) -> Self {
        Self {
            index,
            id: None,
            language,
            policy: None,
            compacted: false,
            tokens_before: 0,
            tokens_after: 0,
            unmatched: None,
        }
    }
}

/// The numbers behind one decision.
///
/// Token totals are sums of per-block counts (see `spec/17-context-gate.md`,
/// G-3): `total_tokens = context_tokens + divider_tokens + retrieval_tokens`.
///
/// ```
/// use cupel_gate::{GateDecision, GateReport};
/// let mut r = GateReport::new("manage_budget", GateDecision::Over, 5000);
/// r.context_tokens = 4900;
/// r.retrieval_tokens = 300;
/// r.total_tokens = 5200;
/// assert_eq!(r.decision.as_str(), "over");
/// assert!(r.nodes.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct GateReport {
    /// The gate's id.
    pub gate_id: String,
    /// Admitted or over.
    pub decision: GateDecision,
    /// The global budget.
    pub max_context_tokens: i64,
    /// Tokens of the current context blocks.
    pub context_tokens: i64,
    /// Tokens of the divider this batch would add (0 without a divider or
    /// with an empty buffer).
    pub divider_tokens: i64,
    /// Tokens of the node blocks as they would be appended.
    pub retrieval_tokens: i64,
    /// The context after appending: the three above, summed.
    pub total_tokens: i64,
    /// One entry per node, in buffer order.
    pub nodes: Vec<NodeReport>,
    /// How many inbox messages the call was handed as consumed (all of them,
    /// whatever their target).
    #[serde(default)]
    pub consumed: usize,
    /// The demand topics present among the consumed messages addressed to
    /// this gate, in rule order, without repeats.
    #[serde(default)]
    pub demanded: Vec<String>,
    /// How many messages are handed back for re-enqueueing: one per
    /// `demanded` topic on Over, none on Admitted.
    #[serde(default)]
    pub requeued: usize,
}

impl GateReport {
    /// A report of `decision` for the gate `gate_id` under
    /// `max_context_tokens`, with every count zero and no nodes. Set the
    /// public fields for the rest.
    pub fn new(
        gate_id: impl Into<String>,
        decision: GateDecision,
        max_context_tokens: i64,
    ) -> Self {
        Self {
            gate_id: gate_id.into(),
            decision,
            max_context_tokens,
            context_tokens: 0,
            divider_tokens: 0,
            retrieval_tokens: 0,
            total_tokens: 0,
            nodes: Vec::new(),
            consumed: 0,
            demanded: Vec::new(),
            requeued: 0,
        }
    }
}

/// One line per fact, for people:
///
/// ```text
/// gate manage_budget: over (context 4900 + divider 0 + nodes 300 = 5200 > max_context_tokens 5000)
///   node 1 (q1): sql, policy threshold, compacted, 320 -> 300 tokens
///   node 2: unknown, no rule (language unknown, so no compaction rule can match), 40 tokens
///   inbox: 1 consumed, demanded compact_sql, 1 requeued
/// ```
///
/// The inbox line appears only when messages were consumed or handed back.
impl fmt::Display for GateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cmp = if self.total_tokens > self.max_context_tokens {
            ">"
        } else {
            "<="
        };
        write!(
            f,
            "gate {}: {} (context {} + divider {} + nodes {} = {} {cmp} max_context_tokens {})",
            self.gate_id,
            self.decision,
            self.context_tokens,
            self.divider_tokens,
            self.retrieval_tokens,
            self.total_tokens,
            self.max_context_tokens
        )?;
        for n in &self.nodes {
            write!(f, "\n  {n}")?;
        }
        if self.consumed > 0 || self.requeued > 0 {
            write!(f, "\n  inbox: {} consumed", self.consumed)?;
            if !self.demanded.is_empty() {
                write!(f, ", demanded {}", self.demanded.join(", "))?;
            }
            write!(f, ", {} requeued", self.requeued)?;
        }
        Ok(())
    }
}

/// `node 1 (q1): sql, policy threshold, compacted, 320 -> 300 tokens`; the
/// node number counts from 1; control characters in the id are escaped.
impl fmt::Display for NodeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.index.saturating_add(1))?;
        if let Some(id) = &self.id {
            write!(f, " ({})", id.escape_debug())?;
        }
        write!(f, ": {}", self.language)?;
        match (self.policy, self.unmatched) {
            (Some(p), _) => write!(f, ", policy {p}")?,
            (None, Some(u)) => write!(f, ", no rule ({u})")?,
            (None, None) => write!(f, ", no rule")?,
        }
        if self.compacted {
            write!(
                f,
                ", compacted, {} -> {} tokens",
                self.tokens_before, self.tokens_after
            )
        } else {
            write!(f, ", {} tokens", self.tokens_after)
        }
    }
}
