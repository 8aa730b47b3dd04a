//! [`OtelCollector`]: a [`TraceCollector`] that turns a run into spans.

use std::fmt;
use std::time::SystemTime;

use cupel_core::{
    ContextBudget, ContextItem, CountRequirementShortfall, CupelError, ExclusionRecord,
    InclusionRecord, OverflowEvent, PipelineStage, StageTrace, TraceCollector,
};
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{
    Event, Span as _, SpanBuilder, SpanContext, SpanId, Status, TraceContextExt, TraceFlags,
    TraceId, TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use crate::CupelVerbosity;
use crate::names::{self, TRACER_NAME, exclusion_reason_name, stage_span_name};

/// A [`TraceCollector`] that records each pipeline run as an OpenTelemetry
/// span tree.
///
/// One run produces a root span `cupel.pipeline` and one child span per
/// completed stage — `cupel.stage.classify`, `cupel.stage.score`,
/// `cupel.stage.deduplicate`, `cupel.stage.slice`, `cupel.stage.place` (Sort
/// has none). The tracer is obtained under the instrumentation name
/// [`TRACER_NAME`] (`"cupel"`).
///
/// # Timing
/// The root span starts when the run starts ([`on_run_started`]) and ends when
/// it completes or fails. A stage span is created when its stage completes,
/// with the start time the pipeline measured ([`StageTrace::started_at`]) and
/// ended at `started_at + duration`, so it shows when the stage really ran.
/// Stage spans always lie inside the root span: the root's end is never earlier
/// than the last stage's end, and a stage's start is never earlier than the
/// root's start (both clamps are no-ops unless the wall clock steps backwards
/// during a run). Events carry the time their hook was called, clamped into
/// their span.
///
/// # Parent
/// The root span is a child of the context that is current when the run starts
/// ([`Context::current`]), so it nests under the caller's active span and shares
/// its trace — for example the span of the model call the window is built for.
/// [`with_parent_context`](Self::with_parent_context) fixes an explicit parent
/// instead.
///
/// # What is recorded
/// By default exactly the specification's attribute table for the tier, and
/// nothing else. Root span `cupel.pipeline` (all tiers):
///
/// | attribute | type | value |
/// | --- | --- | --- |
/// | `cupel.budget.max_tokens` | int | the budget's `max_tokens` |
/// | `cupel.verbosity` | string | [`CupelVerbosity::name`] |
///
/// Stage span `cupel.stage.{name}` (all tiers): `cupel.stage.name` (lowercase),
/// `cupel.stage.item_count_in`, `cupel.stage.item_count_out`. At
/// [`StageAndExclusions`](CupelVerbosity::StageAndExclusions) and above a stage
/// that excluded items also carries `cupel.exclusion.count` and one
/// `cupel.exclusion` event per excluded item (`cupel.exclusion.reason` — one
/// of the specification's eight reason names or `"Unknown"`, see
/// [`exclusion_reason_name`] —, `cupel.exclusion.item_kind`,
/// `cupel.exclusion.item_tokens`). At [`Full`](CupelVerbosity::Full) the
/// `cupel.stage.place` span also carries one `cupel.item.included` event per
/// window item, in placed order (`cupel.item.kind`, `cupel.item.tokens`,
/// `cupel.item.score`: the report's score, 1.0 for pinned items).
///
/// A failed run sets the root span's status to `Error` with the error's
/// message; so does a run abandoned without `on_run_completed`/`on_run_failed`
/// (the next run, or dropping the collector, ends it).
///
/// # Extras (opt-in)
/// [`with_extras(true)`](Self::with_extras) adds what the specification's
/// table does not list, at every tier. Extras only add: they never change or
/// remove a value the table defines.
///
/// | name | on | value |
/// | --- | --- | --- |
/// | `cupel.budget.target_tokens` | root span | the budget's `target_tokens` |
/// | `cupel.candidate_count` | root span | items given to the run |
/// | `cupel.included_count` | root span | items in the returned window (set at the end) |
/// | `cupel.excluded_count` | root span | items excluded, every stage together (set at the end) |
/// | `cupel.exclusion.variant` | `cupel.exclusion` events (StageAndExclusions and up) | the core's variant name when `cupel.exclusion.reason` reads `"Unknown"` for a reason this implementation names (`CountCapExceeded`, `GroupExcluded`) |
/// | `cupel.exclusion.group` | `cupel.exclusion` events (StageAndExclusions and up) | the excluded item's atomic group id, for an item that has one (the atomic-group extension) |
/// | `cupel.overflow` event | `cupel.stage.place` | the selection overflowed the target under `OverflowStrategy::Proceed`: `cupel.overflow.tokens_over_budget`, `cupel.overflow.item_count` |
/// | `cupel.shortfall` events | `cupel.stage.slice` | one per count requirement a count-quota slicer could not meet: `cupel.shortfall.kind`, `cupel.shortfall.required_count`, `cupel.shortfall.satisfied_count` |
///
/// When a run fails inside a stage, that stage still gets a span — from the
/// end of the previous stage (or the run's start) to the failure — carrying
/// `cupel.stage.name`, the events recorded so far and an `Error` status; it has
/// no item counts. A failure before the first stage completes is attributed to
/// Classify.
///
/// # Cost
/// Construction probes the tracer once, without creating a span that could be
/// exported: if it is OpenTelemetry's no-op tracer (no provider installed, or
/// [`NoopTracerProvider`](opentelemetry::trace::noop::NoopTracerProvider)),
/// [`is_enabled`](TraceCollector::is_enabled) is `false` and the pipeline does
/// none of its tracing work — the run costs what `Pipeline::run` costs. With a
/// real provider, a run whose root span the sampler drops records nothing
/// beyond that root span. Note that
/// [`new`](OtelCollector::new) takes the global provider installed
/// *at construction*; build the collector after installing it.
///
/// SDK span limits apply: the OpenTelemetry SDK keeps 128 events per span by
/// default, so raise `max_events_per_span` on the tracer provider if you want
/// every exclusion of a large run at `StageAndExclusions` or `Full`.
///
/// # Example
/// ```
/// use cupel_otel::{OtelCollector, CupelVerbosity};
/// use cupel_core::TraceCollector;
/// use opentelemetry::trace::noop::NoopTracerProvider;
///
/// // No real provider: the collector turns itself off.
/// let collector = OtelCollector::with_tracer_provider(
///     &NoopTracerProvider::new(),
///     CupelVerbosity::StageOnly,
/// );
/// assert!(!collector.is_enabled());
/// ```
///
/// [`on_run_started`]: TraceCollector::on_run_started
pub struct OtelCollector<T = BoxedTracer> {
    tracer: T,
    verbosity: CupelVerbosity,
    extras: bool,
    enabled: bool,
    parent: Option<Context>,
    run: Option<Run>,
}

/// The old name of [`OtelCollector`].
#[deprecated(note = "renamed to `OtelCollector` (the crate name already says Cupel)")]
pub type CupelOtelTraceCollector<T = BoxedTracer> = OtelCollector<T>;

/// Facts of one stage gathered before its span is built.
#[derive(Default)]
struct StageBuffer {
    exclusions: usize,
    events: Vec<Event>,
}

/// The run in progress: its root span (held in a context, so children can name
/// it as their parent) and what has been gathered so far.
struct Run {
    root_cx: Context,
    /// Whether the root span gets the included/excluded counts at the end.
    extras: bool,
    started_at: SystemTime,
    included: usize,
    excluded: usize,
    /// Indexed by [`slot`]: the five stages, then `Unknown`.
    stages: [StageBuffer; 6],
    last_completed: Option<PipelineStage>,
    last_end: Option<SystemTime>,
    finished: bool,
}

impl Run {
    /// Ends the root span with its final counts, `end` clamped after every stage.
    fn finish(&mut self, end: SystemTime, status: Option<Status>) {
        let end = end.max(self.last_end.unwrap_or(self.started_at));
        let span = self.root_cx.span();
        if self.extras {
            span.set_attributes([
                KeyValue::new(names::INCLUDED_COUNT, to_i64(self.included)),
                KeyValue::new(names::EXCLUDED_COUNT, to_i64(self.excluded)),
            ]);
        }
        if let Some(status) = status {
            span.set_status(status);
        }
        span.end_with_timestamp(end);
        self.finished = true;
    }

    /// Where the next stage starts: the last stage's end, or the run's start.
    fn next_start(&self) -> SystemTime {
        self.last_end.unwrap_or(self.started_at)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.finished {
            // Neither on_run_completed nor on_run_failed came (a component
            // panicked, or a custom driver stopped early): close the trace anyway.
            self.finish(
                SystemTime::now(),
                Some(Status::error("the run ended without completing")),
            );
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for OtelCollector<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelCollector")
            .field("tracer", &self.tracer)
            .field("verbosity", &self.verbosity)
            .field("extras", &self.extras)
            .field("enabled", &self.enabled)
            .field("explicit_parent", &self.parent.is_some())
            .field("run_in_progress", &self.run.is_some())
            .finish()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(TRACER_NAME)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl OtelCollector<BoxedTracer> {
    /// A collector using the global tracer provider (as installed by
    /// [`opentelemetry::global::set_tracer_provider`]) at `verbosity`.
    ///
    /// The provider is looked up now: a collector built before a provider is
    /// installed stays disabled.
    pub fn new(verbosity: CupelVerbosity) -> Self {
        Self::with_tracer(global::tracer_with_scope(scope()), verbosity)
    }
}

impl<T> OtelCollector<T>
where
    T: Tracer,
    T::Span: Send + Sync + 'static,
{
    /// A collector with a tracer named `"cupel"` from `provider`, at `verbosity`.
    ///
    /// ```
    /// use cupel_otel::{OtelCollector, CupelVerbosity};
    /// use cupel_core::TraceCollector;
    /// use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    ///
    /// let provider = SdkTracerProvider::builder()
    ///     .with_simple_exporter(InMemorySpanExporter::default())
    ///     .build();
    /// let collector = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::Full);
    /// assert!(collector.is_enabled());
    /// ```
    pub fn with_tracer_provider<P>(provider: &P, verbosity: CupelVerbosity) -> Self
    where
        P: TracerProvider<Tracer = T>,
    {
        Self::with_tracer(provider.tracer_with_scope(scope()), verbosity)
    }

    /// A collector using `tracer` as given, at `verbosity`.
    ///
    /// Prefer [`with_tracer_provider`](Self::with_tracer_provider), which names
    /// the tracer `"cupel"`; use this to share a tracer you already hold.
    pub fn with_tracer(tracer: T, verbosity: CupelVerbosity) -> Self {
        let enabled = !is_noop(&tracer);
        Self {
            tracer,
            verbosity,
            extras: false,
            enabled,
            parent: None,
            run: None,
        }
    }

    /// Also records the attributes and events the specification's table does
    /// not list (see [Extras](Self#extras-opt-in)); off by default, so each
    /// tier's output is exactly the specification's.
    ///
    /// ```
    /// use cupel_otel::{OtelCollector, CupelVerbosity};
    /// use opentelemetry::trace::noop::NoopTracerProvider;
    /// let c = OtelCollector::with_tracer_provider(
    ///     &NoopTracerProvider::new(),
    ///     CupelVerbosity::StageOnly,
    /// );
    /// assert!(!c.extras());
    /// assert!(c.with_extras(true).extras());
    /// ```
    pub fn with_extras(mut self, on: bool) -> Self {
        self.extras = on;
        self
    }

    /// Whether the [extras](Self#extras-opt-in) are recorded.
    pub fn extras(&self) -> bool {
        self.extras
    }

    /// Makes every run's root span a child of `parent` instead of the context
    /// current when the run starts.
    pub fn with_parent_context(mut self, parent: Context) -> Self {
        self.parent = Some(parent);
        self
    }

    /// The tier this collector records.
    pub fn verbosity(&self) -> CupelVerbosity {
        self.verbosity
    }

    /// The tracer spans are created with.
    pub fn tracer(&self) -> &T {
        &self.tracer
    }

    fn buffer(&mut self, stage: PipelineStage) -> Option<&mut StageBuffer> {
        let run = self.run.as_mut()?;
        run.stages.get_mut(slot(stage))
    }

    /// Builds and ends one stage span as a child of the run's root.
    #[allow(clippy::too_many_arguments)]
    fn emit_stage(
        tracer: &T,
        verbosity: CupelVerbosity,
        run: &mut Run,
        stage: PipelineStage,
        start: SystemTime,
        end: SystemTime,
        counts: Option<(usize, usize)>,
        status: Option<Status>,
    ) {
        let start = start.max(run.started_at);
        let end = end.max(start);
        let buffer = run
            .stages
            .get_mut(slot(stage))
            .map(std::mem::take)
            .unwrap_or_default();
        let mut attributes = Vec::with_capacity(4);
        attributes.push(KeyValue::new(names::STAGE_NAME, stage.lowercase_name()));
        if let Some((count_in, count_out)) = counts {
            attributes.push(KeyValue::new(names::STAGE_ITEM_COUNT_IN, to_i64(count_in)));
            attributes.push(KeyValue::new(
                names::STAGE_ITEM_COUNT_OUT,
                to_i64(count_out),
            ));
        }
        if verbosity.records_exclusions() && buffer.exclusions > 0 {
            attributes.push(KeyValue::new(
                names::EXCLUSION_COUNT,
                to_i64(buffer.exclusions),
            ));
        }
        let mut events = buffer.events;
        for event in &mut events {
            event.timestamp = event.timestamp.clamp(start, end);
        }
        let mut builder = SpanBuilder::from_name(stage_span_name(stage))
            .with_start_time(start)
            .with_attributes(attributes);
        if !events.is_empty() {
            builder = builder.with_events(events);
        }
        let mut span = tracer.build_with_context(builder, &run.root_cx);
        if let Some(status) = status {
            span.set_status(status);
        }
        span.end_with_timestamp(end);
        run.last_completed = Some(stage);
        run.last_end = Some(end);
    }
}

impl<T> TraceCollector for OtelCollector<T>
where
    T: Tracer,
    T::Span: Send + Sync + 'static,
{
    fn is_enabled(&self) -> bool {
        self.enabled
    }

    fn on_run_started(&mut self, items: &[ContextItem], budget: &ContextBudget) {
        // A run still open here was abandoned; dropping it closes its root span.
        self.run = None;
        if !self.enabled {
            return;
        }
        let started_at = SystemTime::now();
        let mut attributes = vec![
            KeyValue::new(names::BUDGET_MAX_TOKENS, budget.max_tokens()),
            KeyValue::new(names::VERBOSITY, self.verbosity.name()),
        ];
        if self.extras {
            attributes.push(KeyValue::new(
                names::BUDGET_TARGET_TOKENS,
                budget.target_tokens(),
            ));
            attributes.push(KeyValue::new(names::CANDIDATE_COUNT, to_i64(items.len())));
        }
        let builder = SpanBuilder::from_name(names::PIPELINE_SPAN)
            .with_start_time(started_at)
            .with_attributes(attributes);
        let parent = self.parent.clone().unwrap_or_else(Context::current);
        let root = self.tracer.build_with_context(builder, &parent);
        if !root.is_recording() {
            // Sampled out (or a no-op tracer under a live parent): nothing of
            // this run can be exported, so gather nothing.
            return;
        }
        self.run = Some(Run {
            root_cx: parent.with_span(root),
            extras: self.extras,
            started_at,
            included: 0,
            excluded: 0,
            stages: Default::default(),
            last_completed: None,
            last_end: None,
            finished: false,
        });
    }

    fn on_stage_completed(&mut self, trace: &StageTrace) {
        let verbosity = self.verbosity;
        let Some(run) = self.run.as_mut() else {
            return;
        };
        let end = trace
            .started_at
            .checked_add(trace.duration)
            .unwrap_or(trace.started_at);
        Self::emit_stage(
            &self.tracer,
            verbosity,
            run,
            trace.stage,
            trace.started_at,
            end,
            Some((trace.item_count_in, trace.item_count_out)),
            None,
        );
    }

    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        let verbosity = self.verbosity;
        let extras = self.extras;
        if let Some(run) = self.run.as_mut() {
            run.excluded += 1;
        }
        let Some(buffer) = self.buffer(record.stage) else {
            return;
        };
        buffer.exclusions += 1;
        if verbosity.records_exclusions() {
            let reason = exclusion_reason_name(&record.reason);
            let mut attributes = vec![
                KeyValue::new(names::EXCLUSION_REASON, reason),
                KeyValue::new(
                    names::EXCLUSION_ITEM_KIND,
                    record.item.kind().as_str().to_owned(),
                ),
                KeyValue::new(names::EXCLUSION_ITEM_TOKENS, record.item.tokens()),
            ];
            let variant = record.reason.variant_name();
            if extras && variant != reason {
                attributes.push(KeyValue::new(names::EXCLUSION_VARIANT, variant));
            }
            if extras && let Some(group) = record.item.group() {
                attributes.push(KeyValue::new(names::EXCLUSION_GROUP, group.to_owned()));
            }
            buffer.events.push(Event::new(
                names::EXCLUSION_EVENT,
                SystemTime::now(),
                attributes,
                0,
            ));
        }
    }

    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        let verbosity = self.verbosity;
        if let Some(run) = self.run.as_mut() {
            run.included += 1;
        }
        if !verbosity.records_inclusions() {
            return;
        }
        let Some(buffer) = self.buffer(PipelineStage::Place) else {
            return;
        };
        buffer.events.push(Event::new(
            names::INCLUDED_EVENT,
            SystemTime::now(),
            vec![
                KeyValue::new(names::ITEM_KIND, record.item.kind().as_str().to_owned()),
                KeyValue::new(names::ITEM_TOKENS, record.item.tokens()),
                KeyValue::new(names::ITEM_SCORE, record.score),
            ],
            0,
        ));
    }

    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        if !self.extras {
            return;
        }
        let Some(buffer) = self.buffer(PipelineStage::Slice) else {
            return;
        };
        let now = SystemTime::now();
        for s in shortfalls {
            buffer.events.push(Event::new(
                names::SHORTFALL_EVENT,
                now,
                vec![
                    KeyValue::new(names::SHORTFALL_KIND, s.kind.as_str().to_owned()),
                    KeyValue::new(names::SHORTFALL_REQUIRED_COUNT, to_i64(s.required_count)),
                    KeyValue::new(names::SHORTFALL_SATISFIED_COUNT, to_i64(s.satisfied_count)),
                ],
                0,
            ));
        }
    }

    fn on_overflow(&mut self, event: &OverflowEvent) {
        // Delivered even to disabled collectors; without a run there is nowhere to put it.
        if !self.extras {
            return;
        }
        let Some(buffer) = self.buffer(PipelineStage::Place) else {
            return;
        };
        buffer.events.push(Event::new(
            names::OVERFLOW_EVENT,
            SystemTime::now(),
            vec![
                KeyValue::new(names::OVERFLOW_TOKENS_OVER_BUDGET, event.tokens_over_budget),
                KeyValue::new(
                    names::OVERFLOW_ITEM_COUNT,
                    to_i64(event.overflowing_items.len()),
                ),
            ],
            0,
        ));
    }

    fn on_run_completed(&mut self) {
        if let Some(mut run) = self.run.take() {
            run.finish(SystemTime::now(), None);
        }
    }

    fn on_run_failed(&mut self, error: &CupelError) {
        let verbosity = self.verbosity;
        let Some(mut run) = self.run.take() else {
            return;
        };
        let now = SystemTime::now();
        let message = error.to_string();
        if let Some(stage) = stage_after(run.last_completed) {
            let start = run.next_start();
            Self::emit_stage(
                &self.tracer,
                verbosity,
                &mut run,
                stage,
                start,
                now,
                None,
                Some(Status::error(message.clone())),
            );
        }
        run.finish(now, Some(Status::error(message)));
    }
}

/// The buffer slot of a stage: the five stages in order, then one for any other.
fn slot(stage: PipelineStage) -> usize {
    match stage {
        PipelineStage::Classify => 0,
        PipelineStage::Score => 1,
        PipelineStage::Deduplicate => 2,
        PipelineStage::Slice => 3,
        PipelineStage::Place => 4,
        _ => 5,
    }
}

/// The stage that runs after `last` (Classify when none has completed yet);
/// `None` after Place or an unknown stage.
fn stage_after(last: Option<PipelineStage>) -> Option<PipelineStage> {
    match last {
        None => Some(PipelineStage::Classify),
        Some(stage) => PipelineStage::ALL.get(slot(stage) + 1).copied(),
    }
}

/// Counts as OpenTelemetry ints (saturating; a count never reaches `i64::MAX`).
fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether `tracer` is OpenTelemetry's no-op tracer, decided without creating a
/// span any exporter could see.
///
/// The probe's parent context carries a made-up remote span context and has
/// telemetry suppressed. The SDK tracer honours suppression and returns an
/// empty, invalid span context without sampling, recording or exporting. The
/// no-op tracer ignores suppression and hands back its parent's span context
/// unchanged. So "not recording and exactly the sentinel context" identifies
/// the no-op tracer; any other answer counts as a real tracer (a
/// misidentification can only leave the collector enabled, never silence a
/// working provider).
fn is_noop<T: Tracer>(tracer: &T) -> bool {
    let sentinel = SpanContext::new(
        TraceId::from(0x00c0_ffee_0000_0000_0000_0000_0000_0001_u128),
        SpanId::from(0x00c0_ffee_0000_0001_u64),
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    let cx = Context::new()
        .with_remote_span_context(sentinel.clone())
        .with_telemetry_suppressed();
    let probe = tracer.build_with_context(SpanBuilder::from_name("cupel.probe"), &cx);
    !probe.is_recording() && probe.span_context() == &sentinel
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::noop::{NoopTracer, NoopTracerProvider};

    #[test]
    fn noop_tracers_are_detected() {
        assert!(is_noop(&NoopTracer::new()));
        let c =
            OtelCollector::with_tracer_provider(&NoopTracerProvider::new(), CupelVerbosity::Full);
        assert!(!c.is_enabled());
        let boxed = BoxedTracer::new(Box::new(NoopTracer::new()));
        assert!(is_noop(&boxed));
    }

    #[test]
    fn collectors_can_move_between_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<OtelCollector>();
        assert_send::<OtelCollector<NoopTracer>>();
    }

    #[test]
    fn stage_after_walks_the_five_stages() {
        assert_eq!(stage_after(None), Some(PipelineStage::Classify));
        assert_eq!(
            stage_after(Some(PipelineStage::Classify)),
            Some(PipelineStage::Score)
        );
        assert_eq!(
            stage_after(Some(PipelineStage::Slice)),
            Some(PipelineStage::Place)
        );
        assert_eq!(stage_after(Some(PipelineStage::Place)), None);
        assert_eq!(stage_after(Some(PipelineStage::Unknown)), None);
    }

    #[test]
    fn disabled_collector_ignores_every_hook() {
        let mut c = OtelCollector::with_tracer(NoopTracer::new(), CupelVerbosity::Full);
        let item = ContextItem::new("a", 1).unwrap();
        let budget = ContextBudget::new(10, 10).unwrap();
        c.on_run_started(std::slice::from_ref(&item), &budget);
        c.on_overflow(&OverflowEvent::new(1, vec![item.clone()], budget.clone()));
        c.on_run_completed();
        assert!(c.run.is_none());
    }
}
