//! [`TracingCollector`]: pipeline runs as `tracing` spans and events.

use cupel_core::{
    ContextBudget, ContextItem, CountRequirementShortfall, CupelError, ExclusionRecord,
    InclusionRecord, OverflowEvent, StageTrace, TraceCollector,
};
use tracing::Level;

/// A [`TraceCollector`] that reports runs to the [`tracing`] ecosystem, for
/// applications that log with `tracing-subscriber` rather than export
/// OpenTelemetry (feature `tracing`).
///
/// Everything is emitted with target `"cupel"` (so `RUST_LOG=cupel=debug`
/// selects it):
///
/// | what | level | name / message | fields |
/// | --- | --- | --- | --- |
/// | one span per run | DEBUG | span `cupel.pipeline` | `candidates`, `max_tokens`, `target_tokens`; `included`, `excluded` recorded at the end |
/// | each completed stage | DEBUG | `stage completed` | `stage` (lowercase), `duration_ms`, `item_count_in`, `item_count_out` |
/// | a `Proceed` overflow | DEBUG | `budget overflow` | `tokens_over_budget`, `item_count` |
/// | an unmet count requirement | DEBUG | `count requirement shortfall` | `kind`, `required_count`, `satisfied_count` |
/// | the end of the run | DEBUG | `run completed` / `run failed` | `included`, `excluded` / `error` |
/// | each excluded item | TRACE | `item excluded` | `stage`, `reason` (the variant name, [`ExclusionReason::variant_name`](cupel_core::ExclusionReason::variant_name)), `item_kind`, `item_tokens`, `score` |
/// | each included item, placed order | TRACE | `item included` | `item_kind`, `item_tokens`, `score` |
///
/// Events name the run's span as their parent explicitly, so they appear
/// inside it without the span being entered; the run span itself is a child of
/// whatever span is current when the run starts.
///
/// [`is_enabled`](TraceCollector::is_enabled) asks the current subscriber
/// whether DEBUG events of target `cupel` are wanted; when not, the pipeline
/// skips all tracing work. The collector holds no state between runs and can
/// be reused.
///
/// ```
/// use cupel_core::TraceCollector;
/// use cupel_otel::TracingCollector;
///
/// // No subscriber installed: nothing would be seen, so nothing is done.
/// assert!(!TracingCollector::new().is_enabled());
/// ```
#[derive(Debug, Default)]
pub struct TracingCollector {
    run: Option<TracingRun>,
}

#[derive(Debug)]
struct TracingRun {
    span: tracing::Span,
    included: usize,
    excluded: usize,
}

impl TracingCollector {
    /// A collector reporting to the current `tracing` subscriber.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TraceCollector for TracingCollector {
    fn is_enabled(&self) -> bool {
        tracing::enabled!(target: "cupel", Level::DEBUG)
    }

    fn on_run_started(&mut self, items: &[ContextItem], budget: &ContextBudget) {
        let span = tracing::debug_span!(
            target: "cupel",
            "cupel.pipeline",
            candidates = items.len(),
            max_tokens = budget.max_tokens(),
            target_tokens = budget.target_tokens(),
            included = tracing::field::Empty,
            excluded = tracing::field::Empty,
        );
        self.run = Some(TracingRun {
            span,
            included: 0,
            excluded: 0,
        });
    }

    fn on_stage_completed(&mut self, trace: &StageTrace) {
        let Some(run) = &self.run else { return };
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            stage = trace.stage.lowercase_name(),
            duration_ms = trace.duration.as_secs_f64() * 1000.0,
            item_count_in = trace.item_count_in,
            item_count_out = trace.item_count_out,
            "stage completed"
        );
    }

    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        let Some(run) = &mut self.run else { return };
        run.excluded += 1;
        tracing::trace!(
            target: "cupel",
            parent: &run.span,
            stage = record.stage.lowercase_name(),
            reason = record.reason.variant_name(),
            item_kind = record.item.kind().as_str(),
            item_tokens = record.item.tokens(),
            score = record.score,
            "item excluded"
        );
    }

    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        let Some(run) = &mut self.run else { return };
        run.included += 1;
        tracing::trace!(
            target: "cupel",
            parent: &run.span,
            item_kind = record.item.kind().as_str(),
            item_tokens = record.item.tokens(),
            score = record.score,
            "item included"
        );
    }

    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        let Some(run) = &self.run else { return };
        for s in shortfalls {
            tracing::debug!(
                target: "cupel",
                parent: &run.span,
                kind = s.kind.as_str(),
                required_count = s.required_count,
                satisfied_count = s.satisfied_count,
                "count requirement shortfall"
            );
        }
    }

    fn on_overflow(&mut self, event: &OverflowEvent) {
        let Some(run) = &self.run else { return };
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            tokens_over_budget = event.tokens_over_budget,
            item_count = event.overflowing_items.len(),
            "budget overflow"
        );
    }

    fn on_run_completed(&mut self) {
        let Some(run) = self.run.take() else { return };
        run.span.record("included", run.included);
        run.span.record("excluded", run.excluded);
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            included = run.included,
            excluded = run.excluded,
            "run completed"
        );
    }

    fn on_run_failed(&mut self, error: &CupelError) {
        let Some(run) = self.run.take() else { return };
        run.span.record("included", run.included);
        run.span.record("excluded", run.excluded);
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            error = %error,
            "run failed"
        );
    }
}
