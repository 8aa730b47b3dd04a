//! [`GateFailure`]: why a gate call failed. The gate owns this error;
//! core's [`CupelError`] comes in only where the gate meets core's checks
//! (a token counter's count, an argument), as [`GateFailure::Core`].

use cupel_core::CupelError;

/// Why [`ContextGate::admit`](crate::ContextGate::admit) or
/// [`evaluate`](crate::ContextGate::evaluate) failed. A failure routes
/// nowhere: it is neither `on_ok` nor `on_over`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GateFailure {
    /// The retrieval buffer needs more tokens on its own than the whole
    /// context budget allows: compacting the existing context can
    /// never make room, so the pipeline's limits are inconsistent (the
    /// retrieval budget is larger than the global one).
    #[error(
        "PIPELINE_BUDGET_MISCONFIG: fetch_node_texts produced retrieval texts that cannot fit \
         into settings.max_context_tokens (gate '{gate_id}': the retrieval texts alone need \
         {retrieval_tokens} tokens (nodes: {nodes}), more than max_context_tokens = {max_context_tokens}); \
         the retrieval budget must be below the global context budget"
    )]
    PipelineBudgetMisconfig {
        /// The gate's id.
        gate_id: String,
        /// How many retrieval nodes were waiting.
        nodes: usize,
        /// Tokens of the buffer as it would be appended (formatted, compacted
        /// where a rule says so, the divider included).
        retrieval_tokens: i64,
        /// The gate's global budget.
        max_context_tokens: i64,
    },
    /// A check of core's failed: a token counter returned a negative
    /// count, or a compactor or fetcher returned core's error.
    #[error(transparent)]
    Core(#[from] CupelError),
}

impl GateFailure {
    /// The `verdict` of the failure's `MANAGE_CONTEXT_BUDGET` event (and of
    /// cupel-otel's `record_gate_error`): `pipeline_budget_misconfig`, or
    /// `error` for any other failure.
    pub fn verdict(&self) -> &'static str {
        match self {
            GateFailure::PipelineBudgetMisconfig { .. } => "pipeline_budget_misconfig",
            GateFailure::Core(_) => "error",
        }
    }
}
