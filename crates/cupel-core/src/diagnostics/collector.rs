//! The [`TraceCollector`] observer trait and its two built-in implementations.

use std::fmt::{self, Write as _};

use crate::diagnostics::{
    CountRequirementShortfall, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason,
    OverflowEvent, PipelineStage, SelectionReport, StageTrace, TraceDetailLevel, TraceEvent,
};
use crate::{ContextBudget, ContextItem, CupelError, VariantChoice};

/// One item's exclusion, as the pipeline reports it to a collector.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExclusionRecord<'a> {
    /// The stage that excluded the item.
    pub stage: PipelineStage,
    /// The item's position in the run's input slice.
    pub index: usize,
    /// The item.
    pub item: &'a ContextItem,
    /// Its score at exclusion (0.0 before scoring).
    pub score: f64,
    /// Why.
    pub reason: ExclusionReason,
}

/// One item's inclusion, reported after the Place stage in placed order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InclusionRecord<'a> {
    /// The item's position in the run's input slice.
    pub index: usize,
    /// The item.
    pub item: &'a ContextItem,
    /// Its score (1.0 for pinned items).
    pub score: f64,
    /// Why.
    pub reason: InclusionReason,
    /// The variant the window holds instead of the whole item, if any (an
    /// extension: `spec/22-variants.md`); `item` is then the variant's form.
    pub variant: Option<VariantChoice>,
}

/// Observer of a pipeline run, passed per call
/// (`run_with(&items, RunOptions::new().collector(&mut collector))`).
///
/// The pipeline checks [`is_enabled`](TraceCollector::is_enabled) once per
/// run; when it is `false` no record is built, no clock is read and no hook is
/// called (only [`on_overflow`](TraceCollector::on_overflow), which happens at
/// most once, is delivered regardless).
///
/// Only `is_enabled` is required. The structured hooks (`on_*`) have defaults
/// that turn them into the specification's plain events —
/// [`record_stage_event`](TraceCollector::record_stage_event) after each stage,
/// and [`record_item_event`](TraceCollector::record_item_event) for each item
/// decision when [`detail_level`](TraceCollector::detail_level) is `Item` — so
/// a simple collector implements those two; a rich one (report builder,
/// OpenTelemetry bridge) overrides the hooks.
///
/// Call order in one run: `on_run_started`; then per stage, its item records
/// followed by `on_stage_completed`; `on_shortfalls` (before the Slice stage
/// completes, if any); `on_item_included` for every included item in placed
/// order before the Place stage completes; finally `on_run_completed` or
/// `on_run_failed`.
pub trait TraceCollector {
    /// Whether this collector records anything.
    fn is_enabled(&self) -> bool;

    /// The granularity of plain events recorded (default [`TraceDetailLevel::Stage`]).
    fn detail_level(&self) -> TraceDetailLevel {
        TraceDetailLevel::Stage
    }

    /// Records a stage-level event (called after the stage completes).
    fn record_stage_event(&mut self, event: TraceEvent) {
        let _ = event;
    }

    /// Records an item-level event (only called when the detail level is `Item`).
    fn record_item_event(&mut self, event: TraceEvent) {
        let _ = event;
    }

    /// A run starts over `items` with `budget`.
    fn on_run_started(&mut self, items: &[ContextItem], budget: &ContextBudget) {
        let _ = (items, budget);
    }

    /// A stage finished. Default: [`record_stage_event`](Self::record_stage_event).
    fn on_stage_completed(&mut self, trace: &StageTrace) {
        self.record_stage_event(trace.to_event());
    }

    /// An item was excluded. Default: an item event, if the detail level asks for it.
    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        if self.detail_level() >= TraceDetailLevel::Item {
            self.record_item_event(exclusion_event(&record));
        }
    }

    /// An item was included. Default: an item event, if the detail level asks for it.
    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        if self.detail_level() >= TraceDetailLevel::Item {
            self.record_item_event(inclusion_event(&record));
        }
    }

    /// The slicer could not meet some count requirements.
    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        let _ = shortfalls;
    }

    /// The selection overflowed the target under `Proceed`.
    fn on_overflow(&mut self, event: &OverflowEvent) {
        let _ = event;
    }

    /// Whether this collector keeps the scorers' per-item notes
    /// ([`ScoreNote`](crate::ScoreNote)); the pipeline asks the scorer for
    /// them (an extra pass for a query-aware scorer) only when it does.
    /// Default `false`; the report builder says `true`.
    fn wants_score_notes(&self) -> bool {
        false
    }

    /// The scorers' notes of one run, as `(input index, note)` pairs in
    /// index order (called after the Score stage when
    /// [`wants_score_notes`](Self::wants_score_notes)).
    fn on_score_notes(&mut self, notes: Vec<(usize, crate::ScoreNote)>) {
        let _ = notes;
    }

    /// The run finished and returned a window.
    fn on_run_completed(&mut self) {}

    /// The run failed with `error`.
    fn on_run_failed(&mut self, error: &CupelError) {
        let _ = error;
    }
}

/// The item-level event of an exclusion: the reason as the message.
fn exclusion_event(record: &ExclusionRecord<'_>) -> TraceEvent {
    let mut message = String::new();
    write_exclusion(&mut message, record);
    item_event(record.stage, message)
}

/// The item-level event of an inclusion (always at the Place stage).
fn inclusion_event(record: &InclusionRecord<'_>) -> TraceEvent {
    let mut message = String::new();
    write_inclusion(&mut message, record);
    item_event(PipelineStage::Place, message)
}

/// Appends an exclusion event's message to `out`.
fn write_exclusion(out: &mut String, record: &ExclusionRecord<'_>) {
    // Writing to a `String` cannot fail.
    let _ = write!(out, "{}", record.reason);
}

/// Appends an inclusion event's message to `out`.
fn write_inclusion(out: &mut String, record: &InclusionRecord<'_>) {
    // Writing to a `String` cannot fail.
    let _ = write!(
        out,
        "{}: {} tokens, score {}",
        record.reason,
        record.item.tokens(),
        record.score
    );
}

fn item_event(stage: PipelineStage, message: String) -> TraceEvent {
    TraceEvent {
        stage,
        duration_ms: 0.0,
        item_count: 1,
        message: Some(message),
    }
}

macro_rules! forward_collector {
    ($($ptr:ty),*) => {$(
        impl<T: TraceCollector + ?Sized> TraceCollector for $ptr {
            fn is_enabled(&self) -> bool { (**self).is_enabled() }
            fn detail_level(&self) -> TraceDetailLevel { (**self).detail_level() }
            fn record_stage_event(&mut self, event: TraceEvent) { (**self).record_stage_event(event) }
            fn record_item_event(&mut self, event: TraceEvent) { (**self).record_item_event(event) }
            fn on_run_started(&mut self, items: &[ContextItem], budget: &ContextBudget) { (**self).on_run_started(items, budget) }
            fn on_stage_completed(&mut self, trace: &StageTrace) { (**self).on_stage_completed(trace) }
            fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) { (**self).on_item_excluded(record) }
            fn on_item_included(&mut self, record: InclusionRecord<'_>) { (**self).on_item_included(record) }
            fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) { (**self).on_shortfalls(shortfalls) }
            fn on_overflow(&mut self, event: &OverflowEvent) { (**self).on_overflow(event) }
            fn wants_score_notes(&self) -> bool { (**self).wants_score_notes() }
            fn on_score_notes(&mut self, notes: Vec<(usize, crate::ScoreNote)>) { (**self).on_score_notes(notes) }
            fn on_run_completed(&mut self) { (**self).on_run_completed() }
            fn on_run_failed(&mut self, error: &CupelError) { (**self).on_run_failed(error) }
        }
    )*};
}
forward_collector!(&mut T, Box<T>);

/// Two collectors fed by one run: every hook goes to both, in order (`first`,
/// then `second`).
///
/// Nest to feed more: `FanOut::new(a, FanOut::new(b, c))`. Typical use is one
/// run that both exports telemetry and builds a [`SelectionReport`] with a
/// [`DiagnosticTraceCollector`]:
///
/// ```
/// use cupel_core::{DiagnosticTraceCollector, FanOut, NullTraceCollector, TraceCollector};
///
/// let mut both = FanOut::new(DiagnosticTraceCollector::default(), NullTraceCollector);
/// // Enabled when either side is.
/// assert!(both.is_enabled());
/// // ... `pipeline.run_with(&items, RunOptions::new().collector(&mut both))?` ...
/// let (diagnostics, _other) = both.into_inner();
/// let report = diagnostics.into_report();
/// assert_eq!(report.total_candidates, 0);
/// ```
///
/// Semantics, so that each side sees exactly what it would see alone:
///
/// * [`is_enabled`](TraceCollector::is_enabled) is true when either side is;
///   every hook except `on_overflow` is forwarded only to the sides that are
///   enabled (a disabled collector is never called, as in a run of its own);
///   `on_overflow`, which the pipeline delivers even to disabled collectors,
///   goes to both;
/// * [`detail_level`](TraceCollector::detail_level) is the finer of the
///   enabled sides' levels; each side's own hooks still apply its own level,
///   and `record_item_event` reaches only a side whose level is `Item`;
/// * item records are cloned once for the first side (an `Arc` bump and the
///   reason's strings) and moved into the second.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FanOut<A, B> {
    first: A,
    second: B,
}

impl<A, B> FanOut<A, B> {
    /// Feeds `first` and then `second`.
    pub fn new(first: A, second: B) -> Self {
        Self { first, second }
    }

    /// The first collector.
    pub fn first(&self) -> &A {
        &self.first
    }

    /// The second collector.
    pub fn second(&self) -> &B {
        &self.second
    }

    /// The first collector, mutably.
    pub fn first_mut(&mut self) -> &mut A {
        &mut self.first
    }

    /// The second collector, mutably.
    pub fn second_mut(&mut self) -> &mut B {
        &mut self.second
    }

    /// Both collectors, `(first, second)`.
    pub fn into_inner(self) -> (A, B) {
        (self.first, self.second)
    }
}

impl<A: TraceCollector, B: TraceCollector> TraceCollector for FanOut<A, B> {
    fn is_enabled(&self) -> bool {
        self.first.is_enabled() || self.second.is_enabled()
    }

    fn detail_level(&self) -> TraceDetailLevel {
        match (self.first.is_enabled(), self.second.is_enabled()) {
            (true, true) => self.first.detail_level().max(self.second.detail_level()),
            (true, false) => self.first.detail_level(),
            (false, true) => self.second.detail_level(),
            (false, false) => TraceDetailLevel::Stage,
        }
    }

    fn record_stage_event(&mut self, event: TraceEvent) {
        match (self.first.is_enabled(), self.second.is_enabled()) {
            (true, true) => {
                self.first.record_stage_event(event.clone());
                self.second.record_stage_event(event);
            }
            (true, false) => self.first.record_stage_event(event),
            (false, true) => self.second.record_stage_event(event),
            (false, false) => {}
        }
    }

    fn record_item_event(&mut self, event: TraceEvent) {
        let first = self.first.is_enabled() && self.first.detail_level() >= TraceDetailLevel::Item;
        let second =
            self.second.is_enabled() && self.second.detail_level() >= TraceDetailLevel::Item;
        match (first, second) {
            (true, true) => {
                self.first.record_item_event(event.clone());
                self.second.record_item_event(event);
            }
            (true, false) => self.first.record_item_event(event),
            (false, true) => self.second.record_item_event(event),
            (false, false) => {}
        }
    }

    fn wants_score_notes(&self) -> bool {
        (self.first.is_enabled() && self.first.wants_score_notes())
            || (self.second.is_enabled() && self.second.wants_score_notes())
    }

    fn on_score_notes(&mut self, notes: Vec<(usize, crate::ScoreNote)>) {
        let first = self.first.is_enabled() && self.first.wants_score_notes();
        let second = self.second.is_enabled() && self.second.wants_score_notes();
        match (first, second) {
            (true, true) => {
                self.first.on_score_notes(notes.clone());
                self.second.on_score_notes(notes);
            }
            (true, false) => self.first.on_score_notes(notes),
            (false, true) => self.second.on_score_notes(notes),
            (false, false) => {}
        }
    }

    fn on_run_started(&mut self, items: &[ContextItem], budget: &ContextBudget) {
        if self.first.is_enabled() {
            self.first.on_run_started(items, budget);
        }
        if self.second.is_enabled() {
            self.second.on_run_started(items, budget);
        }
    }

    fn on_stage_completed(&mut self, trace: &StageTrace) {
        if self.first.is_enabled() {
            self.first.on_stage_completed(trace);
        }
        if self.second.is_enabled() {
            self.second.on_stage_completed(trace);
        }
    }

    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        match (self.first.is_enabled(), self.second.is_enabled()) {
            (true, true) => {
                self.first.on_item_excluded(record.clone());
                self.second.on_item_excluded(record);
            }
            (true, false) => self.first.on_item_excluded(record),
            (false, true) => self.second.on_item_excluded(record),
            (false, false) => {}
        }
    }

    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        match (self.first.is_enabled(), self.second.is_enabled()) {
            (true, true) => {
                self.first.on_item_included(record.clone());
                self.second.on_item_included(record);
            }
            (true, false) => self.first.on_item_included(record),
            (false, true) => self.second.on_item_included(record),
            (false, false) => {}
        }
    }

    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        if self.first.is_enabled() {
            self.first.on_shortfalls(shortfalls);
        }
        if self.second.is_enabled() {
            self.second.on_shortfalls(shortfalls);
        }
    }

    fn on_overflow(&mut self, event: &OverflowEvent) {
        self.first.on_overflow(event);
        self.second.on_overflow(event);
    }

    fn on_run_completed(&mut self) {
        if self.first.is_enabled() {
            self.first.on_run_completed();
        }
        if self.second.is_enabled() {
            self.second.on_run_completed();
        }
    }

    fn on_run_failed(&mut self, error: &CupelError) {
        if self.first.is_enabled() {
            self.first.on_run_failed(error);
        }
        if self.second.is_enabled() {
            self.second.on_run_failed(error);
        }
    }
}

/// The disabled collector: records nothing and costs nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NullTraceCollector;

impl TraceCollector for NullTraceCollector {
    #[inline(always)]
    fn is_enabled(&self) -> bool {
        false
    }
}

/// Synchronous per-event callback of a [`DiagnosticTraceCollector`].
pub type EventObserver = Box<dyn FnMut(&TraceEvent) + Send>;

/// The recording collector: buffers events in order and builds a [`SelectionReport`].
///
/// Stage events are always kept; item events only at [`TraceDetailLevel::Item`].
/// The included/excluded lists of the report are filled at either level.
///
/// Memory: at the start of a run the collector reserves an excluded row for
/// every candidate (and, at item level, an event for every candidate), so
/// that no list is copied as it grows; memory that is never written is
/// never touched. [`into_report`](Self::into_report) cuts the excluded
/// rows to their number. A collector kept after a run without
/// `into_report` holds that capacity until it is dropped or the next run
/// starts.
///
/// ```
/// use cupel_core::{DiagnosticTraceCollector, TraceCollector, TraceDetailLevel};
/// let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Item)
///     .with_observer(|e| println!("{:?} took {} ms", e.stage, e.duration_ms));
/// assert!(c.is_enabled());
/// let report = c.into_report();
/// assert_eq!(report.total_candidates, 0);
/// ```
pub struct DiagnosticTraceCollector {
    detail_level: TraceDetailLevel,
    events: Vec<TraceEvent>,
    included: Vec<IncludedItem>,
    excluded: Vec<ExcludedItem>,
    /// Where each run of excluded rows recorded by one stage in turn
    /// begins, and the stage of the last run: the report's sort puts each
    /// run in order on its own, then merges them.
    excluded_runs: Vec<usize>,
    last_stage: Option<PipelineStage>,
    total_candidates: usize,
    total_tokens: i64,
    shortfalls: Vec<CountRequirementShortfall>,
    /// The scorers' notes, `(input index, note)` in index order.
    notes: Vec<(usize, crate::ScoreNote)>,
    observer: Option<EventObserver>,
    /// Where item messages are written before each is copied out at its
    /// exact length: one allocation per message, none to grow it. (Kept
    /// between runs, with the capacity of the longest message so far.)
    scratch: String,
}

impl fmt::Debug for DiagnosticTraceCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiagnosticTraceCollector")
            .field("detail_level", &self.detail_level)
            .field("events", &self.events.len())
            .field("included", &self.included.len())
            .field("excluded", &self.excluded.len())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Default for DiagnosticTraceCollector {
    fn default() -> Self {
        Self::new(TraceDetailLevel::Stage)
    }
}

impl DiagnosticTraceCollector {
    /// A recording collector at `detail_level`.
    pub fn new(detail_level: TraceDetailLevel) -> Self {
        Self {
            detail_level,
            events: Vec::new(),
            included: Vec::new(),
            excluded: Vec::new(),
            excluded_runs: Vec::new(),
            last_stage: None,
            total_candidates: 0,
            total_tokens: 0,
            shortfalls: Vec::new(),
            notes: Vec::new(),
            observer: None,
            scratch: String::new(),
        }
    }

    /// Adds a callback invoked synchronously for every recorded event.
    pub fn with_observer(mut self, observer: impl FnMut(&TraceEvent) + Send + 'static) -> Self {
        self.observer = Some(Box::new(observer));
        self
    }

    /// The events recorded so far, in insertion order.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Builds the report of the last run (the collector stays usable).
    pub fn report(&self) -> SelectionReport {
        let mut report = build_report(
            self.events.clone(),
            self.included.clone(),
            self.excluded.clone(),
            &self.excluded_runs,
            self.total_candidates,
            self.total_tokens,
            self.shortfalls.clone(),
        );
        attach_notes(&mut report, self.notes.clone());
        report
    }

    /// Consumes the collector and builds the report of the last run.
    pub fn into_report(self) -> SelectionReport {
        let mut report = build_report(
            self.events,
            self.included,
            self.excluded,
            &self.excluded_runs,
            self.total_candidates,
            self.total_tokens,
            self.shortfalls,
        );
        attach_notes(&mut report, self.notes);
        report
    }

    fn push(&mut self, event: TraceEvent) {
        if let Some(obs) = self.observer.as_mut() {
            obs(&event);
        }
        self.events.push(event);
    }
}

/// Sorts report rows by score, descending, stably (ties keep exclusion
/// order; NaN scores go last). `starts` are where each run of rows that one
/// stage recorded in turn begins.
///
/// The pipeline records Classify's rows (all scored 0.0) and, in a run
/// without groups, Slice's and Place's in score order already; Deduplicate's
/// come in input order. When at most half the rows are in runs out of order,
/// those runs are put in order on their own and the sorted runs then merged
/// by the standard library's stable sort, which finds them and merges them
/// in sequential passes over the rows. Otherwise (a grouped run's Slice
/// rows, where each member keeps its own score, or rows recorded in no
/// order) every row's integer score key is sorted with its position, and
/// each row then moved once into its place. (Moving all rows into place at
/// random was the slow part of the plain case: for the standard workload's
/// dry run, 1.56 ms for the rows at 100k items against 0.74 ms merged, and
/// 65 ms at 1M against 7.9 ms.)
fn sort_excluded(excluded: &mut [ExcludedItem], starts: &[usize]) {
    let key = |e: &ExcludedItem| crate::score_sort_key(e.score);
    let ends = starts.iter().skip(1).copied().chain([excluded.len()]);
    let unsorted: Vec<(usize, usize)> = starts
        .iter()
        .copied()
        .zip(ends)
        .filter(|&(a, b)| {
            excluded
                .get(a..b)
                .is_some_and(|run| !run.is_sorted_by_key(key))
        })
        .collect();
    let out_of_order: usize = unsorted.iter().map(|&(a, b)| b - a).sum();
    if out_of_order.saturating_mul(2) > excluded.len() {
        sort_run(excluded);
        return;
    }
    for (a, b) in unsorted {
        if let Some(run) = excluded.get_mut(a..b) {
            sort_run(run);
        }
    }
    if !excluded.is_sorted_by_key(key) {
        excluded.sort_by_key(key);
    }
}

/// Sorts rows by their integer score keys (stably), then moves each row
/// once into its place.
fn sort_run(run: &mut [ExcludedItem]) {
    let mut keys: Vec<(u64, usize)> = run
        .iter()
        .enumerate()
        .map(|(k, e)| (crate::score_sort_key(e.score), k))
        .collect();
    crate::sort_by_key_stable(&mut keys);
    // Row `keys[j].1` goes to position `j`: each cycle of that permutation
    // is walked once, swapping each row into place.
    let mut placed = vec![false; keys.len()];
    for start in 0..keys.len() {
        let mut j = start;
        while !placed[j] {
            placed[j] = true;
            let from = keys[j].1;
            if from == start {
                break;
            }
            run.swap(j, from);
            j = from;
        }
    }
}

fn build_report(
    events: Vec<TraceEvent>,
    included: Vec<IncludedItem>,
    mut excluded: Vec<ExcludedItem>,
    runs: &[usize],
    total_candidates: usize,
    total_tokens_considered: i64,
    count_requirement_shortfalls: Vec<CountRequirementShortfall>,
) -> SelectionReport {
    sort_excluded(&mut excluded, runs);
    excluded.shrink_to_fit();
    SelectionReport {
        events,
        included,
        excluded,
        total_candidates,
        total_tokens_considered,
        count_requirement_shortfalls,
    }
}

/// Moves each note onto the row of its item (by input position); a note of
/// an item without a row (none in a pipeline run) is dropped.
fn attach_notes(report: &mut SelectionReport, notes: Vec<(usize, crate::ScoreNote)>) {
    if notes.is_empty() {
        return;
    }
    let mut by_position: std::collections::BTreeMap<usize, Vec<crate::ScoreNote>> =
        std::collections::BTreeMap::new();
    for (i, n) in notes {
        by_position.entry(i).or_default().push(n);
    }
    for row in &mut report.included {
        if let Some(n) = by_position.remove(&row.position) {
            row.notes = n;
        }
    }
    for row in &mut report.excluded {
        if let Some(n) = by_position.remove(&row.position) {
            row.notes = n;
        }
    }
}

impl TraceCollector for DiagnosticTraceCollector {
    fn is_enabled(&self) -> bool {
        true
    }

    fn detail_level(&self) -> TraceDetailLevel {
        self.detail_level
    }

    fn record_stage_event(&mut self, event: TraceEvent) {
        self.push(event);
    }

    fn record_item_event(&mut self, event: TraceEvent) {
        if self.detail_level >= TraceDetailLevel::Item {
            self.push(event);
        }
    }

    fn on_run_started(&mut self, items: &[ContextItem], _budget: &ContextBudget) {
        self.events.clear();
        self.included.clear();
        self.excluded.clear();
        self.excluded_runs.clear();
        self.last_stage = None;
        self.shortfalls.clear();
        self.notes.clear();
        self.total_candidates = items.len();
        // At most every candidate is excluded: its rows are reserved once
        // (capacity never written to is never touched) and cut to their
        // number when the report is built.
        self.excluded.reserve(items.len());
        if self.detail_level >= TraceDetailLevel::Item {
            // Every item is included or excluded exactly once, one event
            // each, and each of the five stages adds one: reserved at once
            // rather than grown by doubling (a copy of every event so far
            // at each step).
            self.events.reserve(items.len().saturating_add(5));
        }
        self.total_tokens = items
            .iter()
            .fold(0i64, |acc, i| acc.saturating_add(i.tokens()));
    }

    fn on_item_excluded(&mut self, record: ExclusionRecord<'_>) {
        if self.detail_level >= TraceDetailLevel::Item {
            self.scratch.clear();
            write_exclusion(&mut self.scratch, &record);
            self.push(item_event(record.stage, self.scratch.as_str().to_owned()));
        }
        if self.last_stage != Some(record.stage) {
            self.last_stage = Some(record.stage);
            self.excluded_runs.push(self.excluded.len());
        }
        self.excluded.push(ExcludedItem {
            item: record.item.clone(),
            score: record.score,
            reason: record.reason,
            position: record.index,
            notes: Vec::new(),
        });
    }

    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        if self.detail_level >= TraceDetailLevel::Item {
            self.scratch.clear();
            write_inclusion(&mut self.scratch, &record);
            let message = self.scratch.as_str().to_owned();
            self.push(item_event(PipelineStage::Place, message));
        }
        if self.included.is_empty() {
            // The pipeline reports every exclusion before the first
            // inclusion: the rest of the candidates are the window, so its
            // rows are reserved at once (a hint: a collector driven
            // otherwise still gets every row).
            let rest = self.total_candidates.saturating_sub(self.excluded.len());
            self.included.reserve(rest);
        }
        self.included.push(IncludedItem {
            item: record.item.clone(),
            score: record.score,
            reason: record.reason,
            position: record.index,
            variant: record.variant,
            notes: Vec::new(),
        });
    }

    fn on_shortfalls(&mut self, shortfalls: &[CountRequirementShortfall]) {
        self.shortfalls.extend_from_slice(shortfalls);
    }

    fn wants_score_notes(&self) -> bool {
        true
    }

    fn on_score_notes(&mut self, notes: Vec<(usize, crate::ScoreNote)>) {
        self.notes = notes;
    }
}

impl<'a> ExclusionRecord<'a> {
    /// Item `index` excluded at `stage` with its score and reason.
    pub fn new(
        stage: PipelineStage,
        index: usize,
        item: &'a ContextItem,
        score: f64,
        reason: ExclusionReason,
    ) -> Self {
        Self {
            stage,
            index,
            item,
            score,
            reason,
        }
    }
}

impl<'a> InclusionRecord<'a> {
    /// Item `index` included with its score and reason.
    pub fn new(index: usize, item: &'a ContextItem, score: f64, reason: InclusionReason) -> Self {
        Self {
            index,
            item,
            score,
            reason,
            variant: None,
        }
    }

    /// The same record, for an item the window holds as a variant.
    #[must_use]
    pub fn with_variant(mut self, variant: VariantChoice) -> Self {
        self.variant = Some(variant);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, SystemTime};

    fn stage(stage: PipelineStage, n: usize) -> StageTrace {
        StageTrace {
            stage,
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::from_micros(1500),
            item_count_in: n,
            item_count_out: n,
        }
    }

    #[test]
    fn null_collector_is_disabled() {
        let mut c = NullTraceCollector;
        assert!(!c.is_enabled());
        c.on_stage_completed(&stage(PipelineStage::Score, 3));
    }

    #[test]
    fn stage_level_discards_item_events_but_keeps_report_lists() {
        let item = ContextItem::new("a", 5).unwrap();
        let budget = ContextBudget::new(10, 10).unwrap();
        let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
        c.on_run_started(std::slice::from_ref(&item), &budget);
        c.on_item_excluded(ExclusionRecord {
            stage: PipelineStage::Slice,
            index: 0,
            item: &item,
            score: 0.5,
            reason: ExclusionReason::BudgetExceeded {
                item_tokens: 5,
                available_tokens: 2,
            },
        });
        c.record_item_event(item_event(PipelineStage::Slice, "x".into()));
        c.on_stage_completed(&stage(PipelineStage::Slice, 1));
        assert_eq!(c.events().len(), 1);
        assert_eq!(c.events()[0].duration_ms, 1.5);
        let r = c.into_report();
        assert_eq!(r.excluded.len(), 1);
        assert_eq!(r.total_candidates, 1);
        assert_eq!(r.total_tokens_considered, 5);
    }

    #[test]
    fn item_level_records_in_order_and_notifies_observer() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let item = ContextItem::new("a", -1).unwrap();
        let budget = ContextBudget::new(10, 10).unwrap();
        let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Item)
            .with_observer(move |e| sink.lock().unwrap().push(e.stage));
        c.on_run_started(std::slice::from_ref(&item), &budget);
        c.on_item_excluded(ExclusionRecord {
            stage: PipelineStage::Classify,
            index: 0,
            item: &item,
            score: 0.0,
            reason: ExclusionReason::NegativeTokens { tokens: -1 },
        });
        c.on_stage_completed(&stage(PipelineStage::Classify, 1));
        assert_eq!(c.events().len(), 2);
        assert_eq!(c.events()[0].item_count, 1);
        assert_eq!(c.events()[0].duration_ms, 0.0);
        assert_eq!(
            c.events()[0].message.as_deref(),
            Some("NegativeTokens: -1 tokens")
        );
        assert_eq!(
            *seen.lock().unwrap(),
            vec![PipelineStage::Classify, PipelineStage::Classify]
        );
    }

    #[test]
    fn default_hooks_and_the_diagnostic_collector_write_the_same_item_events() {
        /// Implements only the two recording methods, at Item level.
        struct Plain(Vec<TraceEvent>);
        impl TraceCollector for Plain {
            fn is_enabled(&self) -> bool {
                true
            }
            fn detail_level(&self) -> TraceDetailLevel {
                TraceDetailLevel::Item
            }
            fn record_item_event(&mut self, event: TraceEvent) {
                self.0.push(event);
            }
        }
        fn feed(c: &mut dyn TraceCollector, item: &ContextItem) {
            c.on_item_excluded(ExclusionRecord {
                stage: PipelineStage::Slice,
                index: 0,
                item,
                score: 0.5,
                reason: ExclusionReason::BudgetExceeded {
                    item_tokens: 400,
                    available_tokens: 50,
                },
            });
            c.on_item_included(InclusionRecord {
                index: 0,
                item,
                score: 0.25,
                reason: InclusionReason::Scored,
                variant: None,
            });
        }
        let item = ContextItem::new("a", 400).unwrap();
        let mut plain = Plain(Vec::new());
        feed(&mut plain, &item);
        let mut diag = DiagnosticTraceCollector::new(TraceDetailLevel::Item);
        feed(&mut diag, &item);
        let messages: Vec<Option<&str>> = plain.0.iter().map(|e| e.message.as_deref()).collect();
        assert_eq!(
            messages,
            [
                Some("BudgetExceeded: 400 tokens requested, 50 available"),
                Some("Scored: 400 tokens, score 0.25"),
            ]
        );
        assert_eq!(plain.0, diag.events());
    }

    proptest::proptest! {
        /// The report's row order against the definition: a stable sort by
        /// `score_cmp_desc` (scores drawn from a few values, so ties, `-0.0`
        /// against `0.0` and NaNs are common), whatever the runs the rows
        /// were recorded in (a pick's second flag starts a new one), with
        /// each run in score order, as the pipeline's stages mostly record
        /// them, or not (the third flag of its first pick, drawn more often
        /// true when `mostly_in_order`, so that both the merge of runs and
        /// the sort of every row are taken).
        #[test]
        fn excluded_rows_sort_like_a_stable_sort_by_score(
            mostly_in_order in proptest::bool::ANY,
            picks in proptest::collection::vec(
                (0usize..7, proptest::bool::weighted(0.05), proptest::bool::weighted(0.5)),
                0..300,
            ),
        ) {
            const SCORES: [f64; 7] = [0.5, 0.0, -0.0, 1.0, f64::NAN, -2.5, 0.25];
            let item = ContextItem::new("x", 1).unwrap();
            let mut starts: Vec<usize> = picks
                .iter()
                .enumerate()
                .filter(|&(k, &(_, new_run, _))| k == 0 || new_run)
                .map(|(k, _)| k)
                .collect();
            let mut scores: Vec<f64> = picks.iter().map(|&(p, _, _)| SCORES[p]).collect();
            let ends: Vec<usize> = starts.iter().skip(1).copied().chain([scores.len()]).collect();
            for (&a, &b) in starts.iter().zip(&ends) {
                // Half the runs in order, or (mostly_in_order) three in four.
                let (_, _, coin) = picks[a];
                let (_, _, other) = picks[b - 1];
                if coin || (mostly_in_order && other) {
                    scores[a..b].sort_by(|x, y| crate::score_cmp_desc(*x, *y));
                }
            }
            let mut rows: Vec<ExcludedItem> = scores
                .iter()
                .enumerate()
                .map(|(position, &score)| ExcludedItem {
                    item: item.clone(),
                    score,
                    reason: ExclusionReason::NegativeTokens { tokens: -1 },
                    position,
                    notes: Vec::new(),
                })
                .collect();
            let mut expected: Vec<usize> = (0..rows.len()).collect();
            expected.sort_by(|&a, &b| crate::score_cmp_desc(rows[a].score, rows[b].score));
            sort_excluded(&mut rows, &starts);
            let got: Vec<usize> = rows.iter().map(|r| r.position).collect();
            proptest::prop_assert_eq!(&got, &expected);
            // A driver that reported no runs at all gets the same order.
            starts.clear();
            rows.sort_by_key(|r| r.position);
            sort_excluded(&mut rows, &starts);
            let got: Vec<usize> = rows.iter().map(|r| r.position).collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn rows_beyond_the_reserved_counts_are_all_kept() {
        // The collector reserves one event per candidate and, at the first
        // inclusion, the candidates not yet excluded; a driver that reports
        // more rows, or inclusions before exclusions, still gets every row.
        let items: Vec<ContextItem> = ["a", "b"]
            .iter()
            .map(|s| ContextItem::new(*s, 1).unwrap())
            .collect();
        let budget = ContextBudget::new(10, 10).unwrap();
        let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Item);
        c.on_run_started(&items, &budget);
        for round in 0..3 {
            c.on_item_included(InclusionRecord {
                index: round % 2,
                item: &items[round % 2],
                score: 0.5,
                reason: InclusionReason::Scored,
                variant: None,
            });
            c.on_item_excluded(ExclusionRecord {
                stage: PipelineStage::Slice,
                index: round % 2,
                item: &items[round % 2],
                score: 0.1,
                reason: ExclusionReason::BudgetExceeded {
                    item_tokens: 1,
                    available_tokens: 0,
                },
            });
        }
        assert_eq!(c.events().len(), 6);
        let report = c.into_report();
        assert_eq!((report.included.len(), report.excluded.len()), (3, 3));
        assert_eq!(report.total_candidates, 2);
    }

    #[test]
    fn excluded_sorted_by_score_desc_stable_on_ties() {
        let items: Vec<ContextItem> = ["a", "b", "c", "d"]
            .iter()
            .map(|s| ContextItem::new(*s, 1).unwrap())
            .collect();
        let budget = ContextBudget::new(10, 10).unwrap();
        let mut c = DiagnosticTraceCollector::default();
        c.on_run_started(&items, &budget);
        for (i, score) in [0.2, 0.9, 0.2, 0.5].into_iter().enumerate() {
            c.on_item_excluded(ExclusionRecord {
                stage: PipelineStage::Slice,
                index: i,
                item: &items[i],
                score,
                reason: ExclusionReason::BudgetExceeded {
                    item_tokens: 1,
                    available_tokens: 0,
                },
            });
        }
        let report = c.into_report();
        let order: Vec<&str> = report.excluded.iter().map(|e| e.item.content()).collect();
        assert_eq!(order, ["b", "d", "a", "c"]);
    }

    /// Logs every hook it receives, by method name.
    struct Log {
        enabled: bool,
        level: TraceDetailLevel,
        calls: Vec<&'static str>,
    }

    impl Log {
        fn new(enabled: bool, level: TraceDetailLevel) -> Self {
            Self {
                enabled,
                level,
                calls: Vec::new(),
            }
        }
    }

    impl TraceCollector for Log {
        fn is_enabled(&self) -> bool {
            self.enabled
        }
        fn detail_level(&self) -> TraceDetailLevel {
            self.level
        }
        fn record_stage_event(&mut self, _: TraceEvent) {
            self.calls.push("record_stage_event");
        }
        fn record_item_event(&mut self, _: TraceEvent) {
            self.calls.push("record_item_event");
        }
        fn on_run_started(&mut self, _: &[ContextItem], _: &ContextBudget) {
            self.calls.push("on_run_started");
        }
        fn on_stage_completed(&mut self, _: &StageTrace) {
            self.calls.push("on_stage_completed");
        }
        fn on_item_excluded(&mut self, _: ExclusionRecord<'_>) {
            self.calls.push("on_item_excluded");
        }
        fn on_item_included(&mut self, _: InclusionRecord<'_>) {
            self.calls.push("on_item_included");
        }
        fn on_shortfalls(&mut self, _: &[CountRequirementShortfall]) {
            self.calls.push("on_shortfalls");
        }
        fn on_overflow(&mut self, _: &OverflowEvent) {
            self.calls.push("on_overflow");
        }
        fn on_run_completed(&mut self) {
            self.calls.push("on_run_completed");
        }
        fn on_run_failed(&mut self, _: &CupelError) {
            self.calls.push("on_run_failed");
        }
    }

    /// Calls every method of the trait once (the two accessors aside).
    fn call_every_hook(c: &mut dyn TraceCollector) {
        let item = ContextItem::new("a", 4).unwrap();
        let budget = ContextBudget::new(10, 8).unwrap();
        c.record_stage_event(stage(PipelineStage::Score, 1).to_event());
        c.record_item_event(item_event(PipelineStage::Slice, "x".into()));
        c.on_run_started(std::slice::from_ref(&item), &budget);
        c.on_stage_completed(&stage(PipelineStage::Classify, 1));
        c.on_item_excluded(ExclusionRecord {
            stage: PipelineStage::Slice,
            index: 0,
            item: &item,
            score: 0.5,
            reason: ExclusionReason::NegativeTokens { tokens: -1 },
        });
        c.on_item_included(InclusionRecord {
            index: 0,
            item: &item,
            score: 0.5,
            reason: InclusionReason::Scored,
            variant: None,
        });
        c.on_shortfalls(&[CountRequirementShortfall {
            kind: crate::ContextKind::MESSAGE,
            required_count: 2,
            satisfied_count: 1,
        }]);
        c.on_overflow(&OverflowEvent {
            tokens_over_budget: 1,
            overflowing_items: vec![item.clone()],
            budget: budget.clone(),
        });
        c.on_run_completed();
        c.on_run_failed(&CupelError::PipelineConfig("x".into()));
    }

    const EVERY_HOOK: [&str; 10] = [
        "record_stage_event",
        "record_item_event",
        "on_run_started",
        "on_stage_completed",
        "on_item_excluded",
        "on_item_included",
        "on_shortfalls",
        "on_overflow",
        "on_run_completed",
        "on_run_failed",
    ];

    #[test]
    fn fan_out_forwards_every_hook_to_both_sides() {
        let mut both = FanOut::new(
            Log::new(true, TraceDetailLevel::Item),
            Log::new(true, TraceDetailLevel::Item),
        );
        call_every_hook(&mut both);
        let (a, b) = both.into_inner();
        assert_eq!(a.calls, EVERY_HOOK);
        assert_eq!(b.calls, EVERY_HOOK);
    }

    #[test]
    fn fan_out_is_enabled_when_either_side_is_and_spares_a_disabled_side() {
        let off = || Log::new(false, TraceDetailLevel::Item);
        let on = |level| Log::new(true, level);
        assert!(!FanOut::new(off(), off()).is_enabled());
        assert!(FanOut::new(off(), on(TraceDetailLevel::Stage)).is_enabled());
        assert!(FanOut::new(on(TraceDetailLevel::Stage), off()).is_enabled());
        // The finer level among the enabled sides; a disabled side's level is ignored.
        assert_eq!(
            FanOut::new(off(), on(TraceDetailLevel::Stage)).detail_level(),
            TraceDetailLevel::Stage
        );
        assert_eq!(
            FanOut::new(on(TraceDetailLevel::Stage), on(TraceDetailLevel::Item)).detail_level(),
            TraceDetailLevel::Item
        );

        let mut mixed = FanOut::new(off(), on(TraceDetailLevel::Stage));
        call_every_hook(&mut mixed);
        let (disabled, stage_level) = mixed.into_inner();
        // Like a run of its own: a disabled collector only hears of an overflow.
        assert_eq!(disabled.calls, ["on_overflow"]);
        // A Stage-level side is not sent plain item events.
        let expected: Vec<&str> = EVERY_HOOK
            .into_iter()
            .filter(|&m| m != "record_item_event")
            .collect();
        assert_eq!(stage_level.calls, expected);
    }

    #[test]
    fn fan_out_of_two_diagnostic_collectors_builds_two_equal_reports() {
        let items: Vec<ContextItem> = ["a", "b"]
            .iter()
            .map(|s| ContextItem::new(*s, 3).unwrap())
            .collect();
        let mut both = FanOut::new(
            DiagnosticTraceCollector::new(TraceDetailLevel::Item),
            DiagnosticTraceCollector::new(TraceDetailLevel::Stage),
        );
        call_every_hook(&mut both);
        both.on_run_started(&items, &ContextBudget::new(10, 10).unwrap());
        both.on_item_included(InclusionRecord {
            index: 1,
            item: &items[1],
            score: 0.5,
            reason: InclusionReason::Scored,
            variant: None,
        });
        both.on_stage_completed(&stage(PipelineStage::Place, 1));
        let (item_level, stage_level) = both.into_inner();
        assert_eq!(item_level.events().len(), 2);
        assert_eq!(stage_level.events().len(), 1);
        let (a, b) = (item_level.into_report(), stage_level.into_report());
        assert_eq!(a.included, b.included);
        assert_eq!(a.total_candidates, 2);
        assert_eq!(b.total_tokens_considered, 6);
    }
}
