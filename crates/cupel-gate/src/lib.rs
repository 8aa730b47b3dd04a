//! The context gate: admits retrieved texts into the current context under a
//! global token budget, or answers "over" so the caller compacts first.
//!
//! A retrieval-augmented loop keeps a list of context blocks (what the model
//! will read) and, after each retrieval, a buffer of [`RetrievalNode`]s. The
//! [`ContextGate`] decides whether the whole buffer can join the context:
//!
//! * each node's language is detected ([`LanguageClassifier`]; built in:
//!   [`BuiltinClassifier`]) and the first [`CompactionRule`] for that language
//!   says whether to compact it ([`Compactor`]; built in: [`BuiltinCompactor`]);
//! * each node becomes a block ([`format_node`]), counted with the
//!   [`TokenCounter`] as it would be appended;
//! * if the buffer alone (its blocks plus the divider) needs more than
//!   `max_context_tokens`, that is a pipeline misconfiguration
//!   ([`GateFailure::PipelineBudgetMisconfig`], message starting with
//!   `PIPELINE_BUDGET_MISCONFIG`);
//! * if the context plus the buffer fits, the outcome is
//!   [`GateOutcome::Admitted`]: the divider (if configured) and the blocks are
//!   appended and the buffer is consumed;
//! * otherwise it is [`GateOutcome::Over`]: the context and the buffer come
//!   back exactly as they went in, with the demand messages to re-enqueue.
//!
//! [`ContextGate::admit`] takes the context and the buffer *by value* and only
//! the admitted path ever changes them, so "untouched on Over" holds by
//! construction: the [`Over`] variant hands back the very vectors it was given.
//! [`ContextGate::evaluate`] is the side-effect-free dry run.
//!
//! [`ContextGate::admit_with_retry`] runs the seed's whole retry loop
//! (`on_over` → compact the existing context with a [`ContextCompactor`] →
//! gate again) under a [`LoopGuard`], and stops early when a compaction does
//! not shrink the context.
//!
//! Every decision of [`ContextGate::admit`] emits one `tracing` event named
//! `MANAGE_CONTEXT_BUDGET` (target `cupel::gate`, level INFO) whose field
//! `decision` is the seed's `on_ok` or `on_over` ([`GateDecision::seed_outcome`];
//! `verdict` holds `admitted` / `over`), with the numbers, the inbox summary
//! (messages consumed, demand topics found, messages handed back) and, per
//! node, the language, policy, compacted flag and tokens before and after. A
//! failed call's event has no `decision`; its `verdict` is
//! `pipeline_budget_misconfig` or `error`. The dry run
//! [`ContextGate::evaluate`] emits none. The same facts are in the
//! [`GateReport`], which `cupel-otel` turns into OpenTelemetry attributes and
//! a span event (its `gate` feature).
//!
//! Depends only on `cupel-core`. Token counters for [`ContextGate::new`] are
//! in `cupel-rs-tokens` (`TiktokenCounter`, `HuggingFaceCounter`, ...).
//!
//! # Features
//! * `config` (default) — [`GateConfig::from_toml_str`] /
//!   [`GateConfig::from_json_str`]: the configuration read from TOML or JSON
//!   with strict keys and positioned errors.
//!
//! ```
//! use cupel_core::TokenCounter;
//! use cupel_gate::{
//!     CodeLanguage, CompactionRule, ContextGate, GateConfig, GateOutcome, GateState, RetrievalNode,
//! };
//!
//! /// A stand-in that counts words; use a real tokenizer (`TiktokenCounter`) in production.
//! struct Words;
//! impl TokenCounter for Words {
//!     fn count_tokens(&self, text: &str) -> i64 {
//!         text.split_whitespace().count() as i64
//!     }
//! }
//!
//! let config = GateConfig::builder("manage_budget", 40)
//!     .rule(CompactionRule::always(CodeLanguage::Sql))
//!     .build()?;
//! let gate = ContextGate::new(config, Words);
//! let state = GateState::new(
//!     vec!["the user asked about sales".to_string()],
//!     vec![RetrievalNode::new("SELECT region, SUM(total)  -- per region\nFROM sales GROUP BY region;").with_id("q1")],
//! );
//! match gate.admit(state, &[])? {
//!     GateOutcome::Admitted(admitted) => {
//!         let context = admitted.into_context();
//!         assert_eq!(context.len(), 2);
//!         assert!(context[1].contains("compact: true"));
//!         assert!(!context[1].contains("per region")); // the comment is gone
//!     }
//!     // 5 context words + an 18-word block (8 header + 2 id + 8 compacted text) = 23 <= 40.
//!     GateOutcome::Over(over) => unreachable!("23 tokens fit 40: {:?}", over.report()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod classify;
mod code;
mod compact;
mod config;
mod error;
mod format;
mod report;
mod retry;

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use cupel_core::{CupelError, TokenCounter};

pub use code::{CodeLanguage, CodeNode, Compactor, LanguageClassifier};
pub use error::GateFailure;
pub use report::{
    CompactionPolicyKind, GATE_EVENT, GateDecision, GateReport, NodeReport, Unmatched,
};

pub use classify::{BuiltinClassifier, ClassifierScores, CodeKind};
pub use compact::{BuiltinCompactor, compact_csharp, compact_sql};
pub use config::{
    CompactCodeSpec, CompactionPolicy, CompactionRule, GateConfig, GateConfigBuilder,
    GateConfigError, GateSpec, RuleSpec,
};
pub use format::{NODE_HEADER, format_node, header_value};
pub use retry::{
    ContextCompactor, GaveUp, LoopGuard, LoopOutcome, RUNNING_SUMMARY_PREFIX, RunningSummary,
    SummarizeWith,
};

/// One retrieved text waiting to enter the context.
///
/// `text` is required; `id`, `path`, `source` and `metadata` are optional and
/// only shape the block's header (see [`format_node`]) — and, for `path`, the
/// language (see [`LanguageClassifier::classify_node`]).
///
/// Read from a file, the original retrieval output's keys are accepted as
/// they are: `node_id` for `id`, `repo_relative_path` for `path`,
/// `source_file` for `source` and `metadata_context` for `metadata` (see
/// [`deserialize_node_metadata`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "a node table with `text` (and optional id, path, source, metadata)")]
pub struct RetrievalNode {
    #[serde(default, alias = "node_id", skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(
        default,
        alias = "repo_relative_path",
        skip_serializing_if = "Option::is_none"
    )]
    path: Option<String>,
    #[serde(
        default,
        alias = "source_file",
        skip_serializing_if = "Option::is_none"
    )]
    source: Option<String>,
    text: String,
    #[serde(
        default,
        alias = "metadata_context",
        deserialize_with = "deserialize_node_metadata",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    metadata: BTreeMap<String, String>,
}

/// Reads a node's metadata as the original retrieval output wrote it
/// (`metadata` or `metadata_context`): a table whose values are strings,
/// numbers or booleans (numbers and booleans are kept as their text, null
/// values are left out), or a bare string, kept under the key `context`.
///
/// [`RetrievalNode`] uses it for its `metadata` key; it is public so that a
/// caller's own node table (the `cupel gate` command's, for one) reads the
/// key the same way.
///
/// # Errors
/// The deserializer's error for anything else (a list, a nested table).
pub fn deserialize_node_metadata<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    use serde::de::{Error, MapAccess, Visitor};

    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a string, number, boolean or null")]
    enum Scalar {
        Text(String),
        Int(i64),
        Float(f64),
        Bool(bool),
        Null(()),
    }

    struct Meta;
    impl<'de> Visitor<'de> for Meta {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a metadata table of strings, numbers or booleans, or a string")
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(BTreeMap::from([("context".to_string(), v.to_string())]))
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }
        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = map.next_entry::<String, Scalar>()? {
                let v = match v {
                    Scalar::Text(s) => s,
                    Scalar::Int(i) => i.to_string(),
                    Scalar::Float(x) => x.to_string(),
                    Scalar::Bool(b) => b.to_string(),
                    Scalar::Null(()) => continue,
                };
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    de.deserialize_any(Meta)
}

impl RetrievalNode {
    /// A node with `text` and nothing else.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            id: None,
            path: None,
            source: None,
            text: text.into(),
            metadata: BTreeMap::new(),
        }
    }

    /// Sets the id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the path.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Sets the source (used as the block's `path:` when there is no path).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Adds a metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The id, if any.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The path, if any.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The source, if any.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The metadata, ordered by key.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The block's `path:` value, best effort: the first non-empty of `path`,
    /// `source`, `metadata["path"]`, `metadata["source"]`.
    ///
    /// ```
    /// use cupel_gate::RetrievalNode;
    /// let n = RetrievalNode::new("x").with_metadata("source", "kb/42");
    /// assert_eq!(n.display_path(), Some("kb/42"));
    /// assert_eq!(n.with_source("wiki").display_path(), Some("wiki"));
    /// ```
    pub fn display_path(&self) -> Option<&str> {
        [
            self.path.as_deref(),
            self.source.as_deref(),
            self.metadata.get("path").map(String::as_str),
            self.metadata.get("source").map(String::as_str),
        ]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
    }
}

/// A message consumed from the gate's inbox: who it is for and what it asks.
///
/// A `demand` rule compacts its language when a consumed message has
/// `target` = the gate's id and `topic` = the rule's `inbox_key`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(expecting = "an inbox message with `target` and `topic`")]
pub struct InboxMessage {
    /// The id of the step (gate) the message is addressed to.
    pub target: String,
    /// What it asks for.
    pub topic: String,
}

impl InboxMessage {
    /// A message for `target` about `topic`.
    pub fn new(target: impl Into<String>, topic: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            topic: topic.into(),
        }
    }
}

/// What the gate works on: the current context blocks and the retrieval buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateState {
    /// The context blocks, in order.
    pub context: Vec<String>,
    /// The retrieval buffer, in order.
    pub nodes: Vec<RetrievalNode>,
}

impl GateState {
    /// A state from its two parts.
    pub fn new(context: Vec<String>, nodes: Vec<RetrievalNode>) -> Self {
        Self { context, nodes }
    }
}

/// The batch was admitted: the context with the new blocks appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    context: Vec<String>,
    appended: Range<usize>,
    report: GateReport,
}

impl Admitted {
    /// The whole context, new blocks included.
    pub fn context(&self) -> &[String] {
        &self.context
    }

    /// The blocks this decision appended (the divider first, if any).
    pub fn appended(&self) -> &[String] {
        self.context.get(self.appended.clone()).unwrap_or(&[])
    }

    /// The numbers behind the decision.
    pub fn report(&self) -> &GateReport {
        &self.report
    }

    /// The context, new blocks included.
    pub fn into_context(self) -> Vec<String> {
        self.context
    }

    /// The state after admission: the grown context and an empty buffer.
    pub fn into_state(self) -> GateState {
        GateState::new(self.context, Vec::new())
    }
}

/// The batch did not fit: the untouched state and the demand messages to re-enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    state: GateState,
    requeue: Vec<InboxMessage>,
    report: GateReport,
}

impl Over {
    /// The context and the buffer, exactly as they were given.
    pub fn state(&self) -> &GateState {
        &self.state
    }

    /// The consumed demand messages to put back in the gate's inbox, so that
    /// the demand still holds when the gate runs again (one per demand topic
    /// that was present, in rule order).
    pub fn requeue(&self) -> &[InboxMessage] {
        &self.requeue
    }

    /// The numbers behind the decision.
    pub fn report(&self) -> &GateReport {
        &self.report
    }

    /// The untouched state and the messages to re-enqueue.
    pub fn into_parts(self) -> (GateState, Vec<InboxMessage>) {
        (self.state, self.requeue)
    }
}

/// The outcome of [`ContextGate::admit`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
#[allow(clippy::large_enum_variant)]
pub enum GateOutcome {
    /// The batch fits and was appended; the buffer is consumed.
    Admitted(Admitted),
    /// The batch does not fit; nothing changed.
    Over(Over),
}

impl GateOutcome {
    /// The decision.
    pub fn decision(&self) -> GateDecision {
        match self {
            GateOutcome::Admitted(_) => GateDecision::Admitted,
            GateOutcome::Over(_) => GateDecision::Over,
        }
    }

    /// The numbers behind the decision.
    pub fn report(&self) -> &GateReport {
        match self {
            GateOutcome::Admitted(a) => &a.report,
            GateOutcome::Over(o) => &o.report,
        }
    }
}

/// [`ContextGate::admit`] failed; the state comes back untouched with the error.
#[derive(Debug, Clone, PartialEq)]
pub struct GateError {
    /// Boxed: the state is large already, and results carrying this error
    /// should stay small.
    error: Box<GateFailure>,
    state: GateState,
}

impl GateError {
    /// What went wrong ([`GateFailure::PipelineBudgetMisconfig`], or
    /// [`GateFailure::Core`] holding [`CupelError::InvalidArgument`] for a
    /// negative token count).
    pub fn error(&self) -> &GateFailure {
        &self.error
    }

    /// The context and the buffer, exactly as they were given.
    pub fn into_state(self) -> GateState {
        self.state
    }

    /// The error, dropping the state.
    pub fn into_error(self) -> GateFailure {
        *self.error
    }
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for GateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.error.as_ref())
    }
}

impl From<GateError> for GateFailure {
    fn from(e: GateError) -> Self {
        *e.error
    }
}

/// Admits retrieval nodes into a context under a global token budget.
///
/// Holds a validated [`GateConfig`], a [`TokenCounter`] (required: no
/// heuristic is built in), a [`LanguageClassifier`] and a [`Compactor`]. It is
/// `Send + Sync` and holds no state between calls.
#[derive(Clone)]
pub struct ContextGate {
    config: GateConfig,
    counter: Arc<dyn TokenCounter>,
    classifier: Arc<dyn LanguageClassifier>,
    compactor: Arc<dyn Compactor>,
}

impl fmt::Debug for ContextGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextGate")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ContextGate`]; the counter is required.
#[derive(Clone)]
pub struct ContextGateBuilder {
    config: GateConfig,
    counter: Option<Arc<dyn TokenCounter>>,
    classifier: Arc<dyn LanguageClassifier>,
    compactor: Arc<dyn Compactor>,
}

impl fmt::Debug for ContextGateBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextGateBuilder")
            .field("config", &self.config)
            .field("counter", &self.counter.is_some())
            .finish_non_exhaustive()
    }
}

impl ContextGateBuilder {
    /// The token counter (required).
    pub fn counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Some(Arc::new(counter));
        self
    }

    /// A shared token counter (required, unless [`counter`](Self::counter) is used).
    pub fn counter_arc(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = Some(counter);
        self
    }

    /// Replaces the [`BuiltinClassifier`].
    pub fn classifier(mut self, classifier: impl LanguageClassifier + 'static) -> Self {
        self.classifier = Arc::new(classifier);
        self
    }

    /// Replaces the [`BuiltinCompactor`].
    pub fn compactor(mut self, compactor: impl Compactor + 'static) -> Self {
        self.compactor = Arc::new(compactor);
        self
    }

    /// Builds the gate.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] when no counter was given.
    pub fn build(self) -> Result<ContextGate, CupelError> {
        let Some(counter) = self.counter else {
            return Err(CupelError::PipelineConfig(format!(
                "gate '{}': a token counter is required (no heuristic counting is built in)",
                self.config.id()
            )));
        };
        Ok(ContextGate {
            config: self.config,
            counter,
            classifier: self.classifier,
            compactor: self.compactor,
        })
    }
}

/// The plan for one call: the report plus the blocks to append.
struct Plan {
    report: GateReport,
    /// The divider (if any) and the node blocks, in append order.
    blocks: Vec<String>,
    requeue: Vec<InboxMessage>,
}

impl ContextGate {
    /// A gate with the built-in classifier and compactor.
    pub fn new(config: GateConfig, counter: impl TokenCounter + 'static) -> Self {
        Self {
            config,
            counter: Arc::new(counter),
            classifier: Arc::new(BuiltinClassifier),
            compactor: Arc::new(BuiltinCompactor),
        }
    }

    /// A builder, to plug in a custom classifier or compactor.
    pub fn builder(config: GateConfig) -> ContextGateBuilder {
        ContextGateBuilder {
            config,
            counter: None,
            classifier: Arc::new(BuiltinClassifier),
            compactor: Arc::new(BuiltinCompactor),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GateConfig {
        &self.config
    }

    /// Decides without changing anything: the report [`admit`](Self::admit)
    /// would produce for these inputs.
    ///
    /// A dry run emits no trace event: only [`admit`](Self::admit), the call
    /// that acts on its decision, does, so a dry run followed by the real
    /// call is one `MANAGE_CONTEXT_BUDGET` event, not two. A caller that
    /// wants to record a dry run has the report (`cupel-otel`'s
    /// `record_gate_report` puts it on a span).
    ///
    /// # Errors
    /// As [`admit`](Self::admit).
    pub fn evaluate(
        &self,
        context: &[String],
        nodes: &[RetrievalNode],
        consumed: &[InboxMessage],
    ) -> Result<GateReport, GateFailure> {
        self.plan_inner(context, nodes, consumed).map(|p| p.report)
    }

    /// Admits the buffer into the context, or hands both back untouched.
    ///
    /// `consumed` are the inbox messages consumed when the gate's step was
    /// entered; only those with `target` = this gate's id count.
    ///
    /// # Errors
    /// [`GateFailure::PipelineBudgetMisconfig`] when the buffer alone (its
    /// blocks as they would be appended, plus the divider) needs more than
    /// `max_context_tokens`; [`GateFailure::Core`] holding
    /// [`CupelError::InvalidArgument`] when the counter returns a negative
    /// count. Either way the [`GateError`] hands the state
    /// back untouched.
    pub fn admit(
        &self,
        state: GateState,
        consumed: &[InboxMessage],
    ) -> Result<GateOutcome, GateError> {
        let plan = match self.plan(&state.context, &state.nodes, consumed) {
            Ok(p) => p,
            Err(error) => {
                return Err(GateError {
                    error: Box::new(error),
                    state,
                });
            }
        };
        Ok(match plan.report.decision {
            GateDecision::Over => GateOutcome::Over(Over {
                state,
                requeue: plan.requeue,
                report: plan.report,
            }),
            GateDecision::Admitted => {
                let GateState { mut context, nodes } = state;
                // The buffer is consumed.
                drop(nodes);
                let start = context.len();
                context.extend(plan.blocks);
                let appended = start..context.len();
                GateOutcome::Admitted(Admitted {
                    context,
                    appended,
                    report: plan.report,
                })
            }
        })
    }

    fn count(&self, text: &str) -> Result<i128, CupelError> {
        let n = self.counter.count_tokens(text);
        if n < 0 {
            return Err(CupelError::InvalidArgument(format!(
                "gate '{}': the token counter returned {n} for a text of {} bytes; counts must be >= 0",
                self.config.id(),
                text.len()
            )));
        }
        Ok(i128::from(n))
    }

    /// [`plan_inner`](Self::plan_inner), plus the decision's one trace event.
    fn plan(
        &self,
        context: &[String],
        nodes: &[RetrievalNode],
        consumed: &[InboxMessage],
    ) -> Result<Plan, GateFailure> {
        let result = self.plan_inner(context, nodes, consumed);
        match &result {
            Ok(plan) => emit(&plan.report),
            Err(e) => emit_error(self.config.id(), consumed.len(), e),
        }
        result
    }

    /// One node's block (compacted when its rule says so, given the tokens
    /// `running` so far and the `demanded` topics), its tokens and its report.
    fn node_block(
        &self,
        index: usize,
        node: &RetrievalNode,
        running: i128,
        demanded: &[&str],
    ) -> Result<(String, i128, NodeReport), GateFailure> {
        let cfg = &self.config;
        let language = self.classifier.classify_node(
            CodeNode::new(node.text())
                .with_id(node.id())
                .with_path(node.display_path()),
        );
        let rule = cfg.rule_for(language);
        let raw_block = format_node(node, language, false, node.text());
        let before = self.count(&raw_block)?;
        let compact = match rule.map(|r| &r.policy) {
            None => false,
            Some(CompactionPolicy::Always) => true,
            Some(CompactionPolicy::Threshold { threshold }) => {
                running + before > i128::from(cfg.trigger_tokens(*threshold))
            }
            Some(CompactionPolicy::Demand { inbox_key }) => demanded.contains(&inbox_key.as_str()),
        };
        let (block, after) = if compact {
            let text = self.compactor.compact(language, node.text());
            let block = format_node(node, language, true, &text);
            let after = self.count(&block)?;
            (block, after)
        } else {
            (raw_block, before)
        };
        let mut report = NodeReport::new(index, language);
        report.id = node.id().map(str::to_string);
        report.policy = rule.map(|r| r.policy.kind());
        report.compacted = compact;
        report.tokens_before = saturate(before);
        report.tokens_after = saturate(after);
        report.unmatched = match (rule, language) {
            (Some(_), _) => None,
            (None, CodeLanguage::Unknown) => Some(Unmatched::UnknownLanguage),
            (None, _) => Some(Unmatched::NoRule),
        };
        Ok((block, after, report))
    }

    fn plan_inner(
        &self,
        context: &[String],
        nodes: &[RetrievalNode],
        consumed: &[InboxMessage],
    ) -> Result<Plan, GateFailure> {
        let cfg = &self.config;
        let max = i128::from(cfg.max_context_tokens());
        let mut context_tokens: i128 = 0;
        for block in context {
            context_tokens += self.count(block)?;
        }
        let mut blocks: Vec<String> = Vec::with_capacity(nodes.len() + 1);
        // G-5: the divider precedes a non-empty batch; it counts as one block.
        let mut divider_tokens: i128 = 0;
        if !nodes.is_empty()
            && let Some(d) = cfg.divide_new_content()
        {
            divider_tokens = self.count(d)?;
            blocks.push(d.to_string());
        }
        // The demand topics present among the messages addressed to this gate,
        // in rule order (resolved once per call, not once per node).
        let demanded: Vec<&str> = cfg
            .demand_topics()
            .into_iter()
            .filter(|t| {
                consumed
                    .iter()
                    .any(|m| m.target == cfg.id() && m.topic == *t)
            })
            .collect();
        let mut running = context_tokens + divider_tokens;
        let mut retrieval_tokens: i128 = 0;
        let mut reports = Vec::with_capacity(nodes.len());
        for (index, node) in nodes.iter().enumerate() {
            let (block, after, report) = self.node_block(index, node, running, &demanded)?;
            running += after;
            retrieval_tokens += after;
            blocks.push(block);
            reports.push(report);
        }
        let buffer_tokens = divider_tokens + retrieval_tokens;
        // G-2: "alone" is measured after compaction, divider included.
        if buffer_tokens > max {
            return Err(GateFailure::PipelineBudgetMisconfig {
                gate_id: cfg.id().to_string(),
                nodes: nodes.len(),
                retrieval_tokens: saturate(buffer_tokens),
                max_context_tokens: cfg.max_context_tokens(),
            });
        }
        let total = context_tokens + buffer_tokens;
        // G-6: an empty buffer adds nothing, so it is never over.
        let decision = if !nodes.is_empty() && total > max {
            GateDecision::Over
        } else {
            GateDecision::Admitted
        };
        let requeue = match decision {
            GateDecision::Admitted => Vec::new(),
            GateDecision::Over => demanded
                .iter()
                .map(|t| InboxMessage::new(cfg.id(), *t))
                .collect(),
        };
        let mut report = GateReport::new(cfg.id(), decision, cfg.max_context_tokens());
        report.context_tokens = saturate(context_tokens);
        report.divider_tokens = saturate(divider_tokens);
        report.retrieval_tokens = saturate(retrieval_tokens);
        report.total_tokens = saturate(total);
        report.nodes = reports;
        report.consumed = consumed.len();
        report.demanded = demanded.iter().map(|t| (*t).to_string()).collect();
        report.requeued = requeue.len();
        Ok(Plan {
            report,
            blocks,
            requeue,
        })
    }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Serialises the per-node details lazily, only when a subscriber wants the event.
struct NodesJson<'a>(&'a [NodeReport]);

impl fmt::Display for NodesJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(feature = "config")]
        {
            let s = serde_json::to_string(self.0).map_err(|_| fmt::Error)?;
            f.write_str(&s)
        }
        // Without the `config` feature there is no JSON serialiser: the
        // details are written in `Debug` form.
        #[cfg(not(feature = "config"))]
        {
            write!(f, "{:?}", self.0)
        }
    }
}

/// The demand topics as one comma-separated field (`tracing` fields are flat).
struct Topics<'a>(&'a [String]);

impl fmt::Display for Topics<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

fn emit(r: &GateReport) {
    tracing::event!(
        name: "MANAGE_CONTEXT_BUDGET",
        target: "cupel::gate",
        tracing::Level::INFO,
        event_type = GATE_EVENT,
        gate_id = %r.gate_id,
        // The seed's words (`on_ok` / `on_over`); `outcome` repeats them for
        // hosts that read it before `decision` carried them.
        decision = r.decision.seed_outcome(),
        verdict = r.decision.as_str(),
        outcome = r.decision.seed_outcome(),
        max_context_tokens = r.max_context_tokens,
        context_tokens = r.context_tokens,
        divider_tokens = r.divider_tokens,
        retrieval_tokens = r.retrieval_tokens,
        total_tokens = r.total_tokens,
        node_count = r.nodes.len(),
        consumed = r.consumed,
        demanded = %Topics(&r.demanded),
        requeued = r.requeued,
        nodes = %NodesJson(&r.nodes),
    );
}

/// A failed call: no transition, so no `decision` (nor `outcome`); the
/// `verdict` says which failure.
fn emit_error(gate_id: &str, consumed: usize, e: &GateFailure) {
    let verdict = e.verdict();
    tracing::event!(
        name: "MANAGE_CONTEXT_BUDGET",
        target: "cupel::gate",
        tracing::Level::INFO,
        event_type = GATE_EVENT,
        gate_id = %gate_id,
        verdict,
        consumed,
        error = %e,
    );
}
