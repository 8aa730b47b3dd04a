//! [`TracingCollector`]: pipeline runs as `tracing` spans and events.

use cupel_core::{
    ContextBudget, ContextItem, CountRequirementShortfall, CupelError, ExclusionRecord,
    InclusionRecord, OverflowEvent, PipelineStage, StageTrace, TraceCollector,
};
use tracing::Level;

use crate::names;

/// A [`TraceCollector`] that reports runs to the [`tracing`] ecosystem, for
/// applications that log with `tracing-subscriber` rather than export
/// OpenTelemetry (feature `tracing`).
///
/// Each run is a span tree with the same names as the OpenTelemetry bridge's
/// ([`OtelCollector`](crate::OtelCollector)), so an application exporting
/// `tracing` spans through `tracing-opentelemetry` sees the same tree as one
/// using the bridge directly (names in [`names`](crate::names)):
///
/// ```text
/// cupel.pipeline                 candidates, max_tokens, target_tokens; included, excluded
/// ├── cupel.stage.classify       stage, duration_ms, item_count_in, item_count_out
/// ├── cupel.stage.score
/// ├── cupel.stage.deduplicate
/// ├── cupel.stage.slice
/// └── cupel.stage.place
/// ```
///
/// Everything is emitted with target `"cupel"` (so `RUST_LOG=cupel=debug`
/// selects it):
///
/// | what | level | name / message | parent | fields |
/// | --- | --- | --- | --- | --- |
/// | one span per run | DEBUG | span `cupel.pipeline` | the current span | `candidates`, `max_tokens`, `target_tokens`; `included`, `excluded` recorded at the end |
/// | one span per stage | DEBUG | span `cupel.stage.{stage}` | the run span | `stage` (lowercase); `duration_ms`, `item_count_in`, `item_count_out` recorded when it completes; `error` if the run failed in it |
/// | each completed stage | DEBUG | `stage completed` | the stage span | `stage`, `duration_ms`, `item_count_in`, `item_count_out` |
/// | a `Proceed` overflow | DEBUG | `budget overflow` | the Place span | `tokens_over_budget`, `item_count` |
/// | an unmet count requirement | DEBUG | `count requirement shortfall` | the Slice span | `kind`, `required_count`, `satisfied_count` |
/// | the end of the run | DEBUG | `run completed` / `run failed` | the run span | `included`, `excluded` / `error` |
/// | each excluded item | TRACE | `item excluded` | the span of the stage that excluded it | `stage`, `reason` (the variant name, [`ExclusionReason::variant_name`](cupel_core::ExclusionReason::variant_name)), `item_kind`, `item_tokens`, `score` |
/// | each included item, placed order | TRACE | `item included` | the Place span | `item_kind`, `item_tokens`, `score` |
///
/// Spans and events name their parent explicitly, so they nest without being
/// entered. A stage span is opened at the stage's first record (an item
/// exclusion, say) or at its completion, whichever comes first, and closed
/// at its completion; the stage's measured duration is its `duration_ms`
/// field (a `tracing` span cannot be back-dated to when the stage really
/// started). Sort reports no stage, so it has no span. When a run fails, the
/// failing stage's span (opened now if it had no record yet, for the stage
/// after the last completed one) gets the `error` field and closes, then the
/// run span closes.
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
    /// The open stage span, if any.
    stage: Option<(PipelineStage, tracing::Span)>,
    /// The last stage that completed.
    last_completed: Option<PipelineStage>,
    included: usize,
    excluded: usize,
}

/// A DEBUG span of target `cupel` named `name` (a constant: `tracing` keeps
/// span names in static metadata), child of `parent`.
macro_rules! stage_span {
    ($parent:expr, $name:expr, $stage:expr) => {
        tracing::debug_span!(
            target: "cupel",
            parent: $parent,
            $name,
            stage = $stage,
            duration_ms = tracing::field::Empty,
            item_count_in = tracing::field::Empty,
            item_count_out = tracing::field::Empty,
            error = tracing::field::Empty,
        )
    };
}

impl TracingRun {
    /// The span of `stage`, opening it (and closing another stage's) if needed.
    fn stage_span(&mut self, stage: PipelineStage) -> &tracing::Span {
        if self.stage.as_ref().is_some_and(|(open, _)| *open != stage) {
            self.stage = None;
        }
        let run = &self.span;
        let (_, span) = self.stage.get_or_insert_with(|| {
            let lower = stage.lowercase_name();
            let span = match stage {
                PipelineStage::Classify => stage_span!(run, names::STAGE_CLASSIFY_SPAN, lower),
                PipelineStage::Score => stage_span!(run, names::STAGE_SCORE_SPAN, lower),
                PipelineStage::Deduplicate => {
                    stage_span!(run, names::STAGE_DEDUPLICATE_SPAN, lower)
                }
                PipelineStage::Slice => stage_span!(run, names::STAGE_SLICE_SPAN, lower),
                PipelineStage::Place => stage_span!(run, names::STAGE_PLACE_SPAN, lower),
                _ => stage_span!(run, names::STAGE_UNKNOWN_SPAN, lower),
            };
            (stage, span)
        });
        span
    }

    /// The stage a failure belongs to: the open one, else the one after the
    /// last completed (Classify when none has).
    fn failing_stage(&self) -> PipelineStage {
        if let Some((stage, _)) = &self.stage {
            return *stage;
        }
        match self.last_completed {
            None => PipelineStage::Classify,
            Some(last) => PipelineStage::ALL
                .iter()
                .position(|&s| s == last)
                .and_then(|i| PipelineStage::ALL.get(i + 1))
                .copied()
                .unwrap_or(PipelineStage::Unknown),
        }
    }

    fn record_counts(&self) {
        self.span.record("included", self.included);
        self.span.record("excluded", self.excluded);
    }
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
            names::PIPELINE_SPAN,
            candidates = items.len(),
            max_tokens = budget.max_tokens(),
            target_tokens = budget.target_tokens(),
            included = tracing::field::Empty,
            excluded = tracing::field::Empty,
        );
        self.run = Some(TracingRun {
            span,
            stage: None,
            last_completed: None,
            included: 0,
            excluded: 0,
        });
    }

    fn on_stage_completed(&mut self, trace: &StageTrace) {
        let Some(run) = &mut self.run else { return };
        let duration_ms = trace.duration.as_secs_f64() * 1000.0;
        let span = run.stage_span(trace.stage);
        span.record("duration_ms", duration_ms);
        span.record("item_count_in", trace.item_count_in);
        span.record("item_count_out", trace.item_count_out);
        tracing::debug!(
            target: "cupel",
            parent: span,
            stage = trace.stage.lowercase_name(),
            duration_ms,
            item_count_in = trace.item_count_in,
            item_count_out = trace.item_count_out,
            "stage completed"
        );
        // Dropping the span closes it.
        run.stage = None;
        run.last_completed = Some(trace.stage);
    }

    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        let Some(run) = &mut self.run else { return };
        run.excluded += 1;
        tracing::trace!(
            target: "cupel",
            parent: run.stage_span(record.stage),
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
            parent: run.stage_span(PipelineStage::Place),
            item_kind = record.item.kind().as_str(),
            item_tokens = record.item.tokens(),
            score = record.score,
            "item included"
        );
    }

    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        let Some(run) = &mut self.run else { return };
        let span = run.stage_span(PipelineStage::Slice);
        for s in shortfalls {
            tracing::debug!(
                target: "cupel",
                parent: span,
                kind = s.kind.as_str(),
                required_count = s.required_count,
                satisfied_count = s.satisfied_count,
                "count requirement shortfall"
            );
        }
    }

    fn on_overflow(&mut self, event: &OverflowEvent) {
        let Some(run) = &mut self.run else { return };
        tracing::debug!(
            target: "cupel",
            parent: run.stage_span(PipelineStage::Place),
            tokens_over_budget = event.tokens_over_budget,
            item_count = event.overflowing_items.len(),
            "budget overflow"
        );
    }

    fn on_run_completed(&mut self) {
        let Some(mut run) = self.run.take() else {
            return;
        };
        run.stage = None;
        run.record_counts();
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            included = run.included,
            excluded = run.excluded,
            "run completed"
        );
    }

    fn on_run_failed(&mut self, error: &CupelError) {
        let Some(mut run) = self.run.take() else {
            return;
        };
        let failing = run.failing_stage();
        run.stage_span(failing)
            .record("error", tracing::field::display(error));
        run.stage = None;
        run.record_counts();
        tracing::debug!(
            target: "cupel",
            parent: &run.span,
            error = %error,
            "run failed"
        );
    }
}
