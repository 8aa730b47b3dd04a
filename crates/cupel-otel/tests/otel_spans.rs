#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The span tree, attributes and events of real pipeline runs, read back from
//! the OpenTelemetry SDK's in-memory exporter.
//!
//! Expected values come from the scenario in `common/mod.rs`, worked by hand:
//!
//! * Classify: 7 in; `negative` (-5 tokens) excluded → 6 out (1 pinned + 5 scoreable).
//! * Score: 5 in, 5 out.
//! * Deduplicate: the two `alpha`s score 0.9 and 0.5; the 0.5 copy (Memory, 35
//!   tokens) goes → 4 out.
//! * Slice: effective target = 100 - 10 pinned = 90. Greedy by density: zero
//!   (0 tokens, taken), alpha 30/0.9, beta 40/0.8 → 70 tokens; gamma 50 > 90 - 70
//!   = 20 → BudgetExceeded. 4 in, 3 out.
//! * Place: 1 pinned + 3 sliced = 4 in; 10 + 30 + 40 + 0 = 80 <= 100, no
//!   overflow; 4 out.
//! * Totals: 7 candidates, 4 included, 3 excluded.

mod common;

use std::thread::sleep;
use std::time::{Duration, SystemTime};

use common::{HintScorer, ReversePlacer, budget, pipeline, scenario, take_all_pipeline};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ExclusionReason, ExclusionRecord,
    OverflowStrategy, PipelineStage, Scorer, StageTrace, TraceCollector,
};
use cupel_otel::{CupelVerbosity, OtelCollector, TRACER_NAME};
use cupel_pipeline::{Pipeline, RunOptions};
use cupel_slicers::GreedySlice;
use opentelemetry::trace::{SpanId, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider, SpanData};

const STAGES: [&str; 5] = [
    "cupel.stage.classify",
    "cupel.stage.score",
    "cupel.stage.deduplicate",
    "cupel.stage.slice",
    "cupel.stage.place",
];

fn sdk() -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (provider, exporter)
}

/// Runs the scenario at `verbosity` and returns the exported spans.
fn run_scenario(verbosity: CupelVerbosity) -> Vec<SpanData> {
    run_scenario_with(verbosity, false)
}

/// Runs the scenario at `verbosity`, with or without the extras.
fn run_scenario_with(verbosity: CupelVerbosity, extras: bool) -> Vec<SpanData> {
    let (provider, exporter) = sdk();
    let mut collector =
        OtelCollector::with_tracer_provider(&provider, verbosity).with_extras(extras);
    assert!(collector.is_enabled());
    let window = pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut collector))
        .map(|o| o.items)
        .unwrap();
    assert_eq!(window.len(), 4);
    exporter.get_finished_spans().unwrap()
}

fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "exactly one span named {name}");
    found[0]
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn int(v: i64) -> Option<Value> {
    Some(Value::I64(v))
}

fn string(v: &'static str) -> Option<Value> {
    Some(Value::from(v))
}

fn events_named<'a>(span: &'a SpanData, name: &str) -> Vec<&'a opentelemetry::trace::Event> {
    span.events.iter().filter(|e| e.name == name).collect()
}

/// (reason, item kind, item tokens) of one `cupel.exclusion` event.
type Exclusion = (Value, Value, Value);

/// Every `cupel.exclusion` event of a span, in order.
fn exclusions(span: &SpanData) -> Vec<Exclusion> {
    events_named(span, "cupel.exclusion")
        .iter()
        .map(|e| {
            (
                attr(&e.attributes, "cupel.exclusion.reason")
                    .unwrap()
                    .clone(),
                attr(&e.attributes, "cupel.exclusion.item_kind")
                    .unwrap()
                    .clone(),
                attr(&e.attributes, "cupel.exclusion.item_tokens")
                    .unwrap()
                    .clone(),
            )
        })
        .collect()
}

#[test]
fn one_root_and_five_stage_children_in_one_trace() {
    let spans = run_scenario(CupelVerbosity::StageOnly);
    assert_eq!(spans.len(), 6);
    let root = span(&spans, "cupel.pipeline");
    // No span was current, so the root starts a new trace.
    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert_eq!(root.instrumentation_scope.name(), TRACER_NAME);
    for name in STAGES {
        let s = span(&spans, name);
        assert_eq!(s.parent_span_id, root.span_context.span_id(), "{name}");
        assert_eq!(
            s.span_context.trace_id(),
            root.span_context.trace_id(),
            "{name}"
        );
        assert!(!s.parent_span_is_remote);
        assert_eq!(s.instrumentation_scope.name(), "cupel");
    }
    // No sort span, nothing else.
    assert!(
        spans
            .iter()
            .all(|s| s.name == "cupel.pipeline" || STAGES.contains(&s.name.as_ref()))
    );
}

/// The attribute keys of a span, sorted.
fn keys(span: &SpanData) -> Vec<&str> {
    let mut k: Vec<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
    k.sort_unstable();
    k
}

#[test]
fn root_attributes_are_exactly_the_spec_table_by_default() {
    // The specification's table for the root span, every tier:
    // cupel.budget.max_tokens and cupel.verbosity, nothing else.
    for verbosity in CupelVerbosity::ALL {
        let spans = run_scenario(verbosity);
        let root = span(&spans, "cupel.pipeline");
        let a = &root.attributes;
        assert_eq!(keys(root), ["cupel.budget.max_tokens", "cupel.verbosity"]);
        assert_eq!(attr(a, "cupel.budget.max_tokens").cloned(), int(200));
        assert_eq!(
            attr(a, "cupel.verbosity").cloned(),
            Some(Value::from(verbosity.name()))
        );
        assert_eq!(root.status, Status::Unset);
        assert!(root.events.is_empty());
    }
}

#[test]
fn extras_add_the_budget_target_and_counts_to_the_root() {
    for verbosity in CupelVerbosity::ALL {
        let spans = run_scenario_with(verbosity, true);
        let root = span(&spans, "cupel.pipeline");
        let a = &root.attributes;
        assert_eq!(attr(a, "cupel.budget.max_tokens").cloned(), int(200));
        assert_eq!(attr(a, "cupel.budget.target_tokens").cloned(), int(100));
        assert_eq!(
            attr(a, "cupel.verbosity").cloned(),
            Some(Value::from(verbosity.name()))
        );
        // 7 candidates = 4 included + 3 excluded (see the module docs).
        assert_eq!(attr(a, "cupel.candidate_count").cloned(), int(7));
        assert_eq!(attr(a, "cupel.included_count").cloned(), int(4));
        assert_eq!(attr(a, "cupel.excluded_count").cloned(), int(3));
        // Stage spans are unchanged by the extras.
        let slice = span(&spans, "cupel.stage.slice");
        let mut expected = vec![
            "cupel.stage.item_count_in",
            "cupel.stage.item_count_out",
            "cupel.stage.name",
        ];
        if verbosity.records_exclusions() {
            expected.insert(0, "cupel.exclusion.count");
        }
        assert_eq!(keys(slice), expected, "{verbosity}");
    }
}

#[test]
fn each_tier_records_exactly_the_spec_names_by_default() {
    // Every span, attribute and event name of a run (with an overflow under
    // Proceed, so the rare events would show if they leaked) against the
    // specification's attribute reference for the tier.
    for verbosity in CupelVerbosity::ALL {
        let (provider, exporter) = sdk();
        let mut c = OtelCollector::with_tracer_provider(&provider, verbosity);
        take_all_pipeline(OverflowStrategy::Proceed)
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        let mut span_attrs: Vec<&str> = spans
            .iter()
            .flat_map(|s| s.attributes.iter().map(|kv| kv.key.as_str()))
            .collect();
        span_attrs.sort_unstable();
        span_attrs.dedup();
        let mut expected = vec![
            "cupel.budget.max_tokens",
            "cupel.stage.item_count_in",
            "cupel.stage.item_count_out",
            "cupel.stage.name",
            "cupel.verbosity",
        ];
        if verbosity.records_exclusions() {
            expected.push("cupel.exclusion.count");
            expected.sort_unstable();
        }
        assert_eq!(span_attrs, expected, "{verbosity}");
        let mut events: Vec<(&str, Vec<&str>)> = spans
            .iter()
            .flat_map(|s| s.events.iter())
            .map(|e| {
                let mut k: Vec<&str> = e.attributes.iter().map(|kv| kv.key.as_str()).collect();
                k.sort_unstable();
                (e.name.as_ref(), k)
            })
            .collect();
        events.sort();
        events.dedup();
        let mut expected: Vec<(&str, Vec<&str>)> = Vec::new();
        if verbosity.records_exclusions() {
            expected.push((
                "cupel.exclusion",
                vec![
                    "cupel.exclusion.item_kind",
                    "cupel.exclusion.item_tokens",
                    "cupel.exclusion.reason",
                ],
            ));
        }
        if verbosity.records_inclusions() {
            expected.push((
                "cupel.item.included",
                vec!["cupel.item.kind", "cupel.item.score", "cupel.item.tokens"],
            ));
        }
        assert_eq!(events, expected, "{verbosity}");
    }
}

#[test]
fn stage_attributes_carry_counts_in_and_out() {
    let spans = run_scenario(CupelVerbosity::StageOnly);
    // (span, name attribute, in, out) from the hand-worked table in the module docs.
    let expected = [
        ("cupel.stage.classify", "classify", 7, 6),
        ("cupel.stage.score", "score", 5, 5),
        ("cupel.stage.deduplicate", "deduplicate", 5, 4),
        ("cupel.stage.slice", "slice", 4, 3),
        ("cupel.stage.place", "place", 4, 4),
    ];
    for (name, stage, count_in, count_out) in expected {
        let s = span(&spans, name);
        assert_eq!(
            attr(&s.attributes, "cupel.stage.name").cloned(),
            string(stage)
        );
        assert_eq!(
            attr(&s.attributes, "cupel.stage.item_count_in").cloned(),
            int(count_in),
            "{name}"
        );
        assert_eq!(
            attr(&s.attributes, "cupel.stage.item_count_out").cloned(),
            int(count_out),
            "{name}"
        );
        // StageOnly: no per-item detail anywhere.
        assert_eq!(attr(&s.attributes, "cupel.exclusion.count"), None);
        assert!(s.events.is_empty(), "{name} has events at StageOnly");
        assert_eq!(s.status, Status::Unset);
    }
}

#[test]
fn stage_and_exclusions_puts_each_exclusion_on_its_stage_span() {
    let spans = run_scenario(CupelVerbosity::StageAndExclusions);
    let budget_exceeded = Value::from("BudgetExceeded");
    // One exclusion per stage that excluded anything (module docs):
    let expected: [(&str, Vec<Exclusion>); 5] = [
        (
            "cupel.stage.classify",
            vec![(
                Value::from("NegativeTokens"),
                Value::from("Message"),
                Value::I64(-5),
            )],
        ),
        ("cupel.stage.score", vec![]),
        (
            "cupel.stage.deduplicate",
            vec![(
                Value::from("Deduplicated"),
                Value::from("Memory"),
                Value::I64(35),
            )],
        ),
        (
            "cupel.stage.slice",
            vec![(budget_exceeded, Value::from("ToolOutput"), Value::I64(50))],
        ),
        ("cupel.stage.place", vec![]),
    ];
    for (name, events) in expected {
        let s = span(&spans, name);
        let count = events.len() as i64;
        assert_eq!(exclusions(s), events, "{name}");
        // The count attribute is only on spans where items were excluded.
        let want = if count > 0 { int(count) } else { None };
        assert_eq!(
            attr(&s.attributes, "cupel.exclusion.count").cloned(),
            want,
            "{name}"
        );
        // No included-item events below Full.
        assert!(events_named(s, "cupel.item.included").is_empty());
    }
}

#[test]
fn full_adds_included_items_on_the_place_span_in_placed_order() {
    let spans = run_scenario(CupelVerbosity::Full);
    let place = span(&spans, "cupel.stage.place");
    // Merged list: sys (pinned, 1.0), then sliced by score: alpha 0.9, beta 0.8,
    // zero 0.3. ReversePlacer reverses it, so the window is zero, beta, alpha, sys.
    let got: Vec<(Value, Value, Value)> = events_named(place, "cupel.item.included")
        .iter()
        .map(|e| {
            (
                attr(&e.attributes, "cupel.item.kind").unwrap().clone(),
                attr(&e.attributes, "cupel.item.tokens").unwrap().clone(),
                attr(&e.attributes, "cupel.item.score").unwrap().clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Value::from("Message"), Value::I64(0), Value::F64(0.3)),
            (Value::from("Document"), Value::I64(40), Value::F64(0.8)),
            (Value::from("Message"), Value::I64(30), Value::F64(0.9)),
            (Value::from("SystemPrompt"), Value::I64(10), Value::F64(1.0)),
        ]
    );
    // No position attribute.
    assert!(
        events_named(place, "cupel.item.included")
            .iter()
            .all(|e| e.attributes.len() == 3)
    );
    // Included events appear nowhere else; exclusions as in the previous tier.
    for name in &STAGES[..4] {
        assert!(events_named(span(&spans, name), "cupel.item.included").is_empty());
    }
    let total_exclusions: usize = STAGES
        .iter()
        .map(|n| events_named(span(&spans, n), "cupel.exclusion").len())
        .sum();
    assert_eq!(total_exclusions, 3);
}

#[test]
fn event_counts_per_tier() {
    // (tier, exclusion events, included events): 3 exclusions and 4 included items.
    for (verbosity, excl, incl) in [
        (CupelVerbosity::StageOnly, 0, 0),
        (CupelVerbosity::StageAndExclusions, 3, 0),
        (CupelVerbosity::Full, 3, 4),
    ] {
        let spans = run_scenario(verbosity);
        let count =
            |name: &str| -> usize { spans.iter().map(|s| events_named(s, name).len()).sum() };
        assert_eq!(count("cupel.exclusion"), excl, "{verbosity}");
        assert_eq!(count("cupel.item.included"), incl, "{verbosity}");
        let all: usize = spans.iter().map(|s| s.events.len()).sum();
        assert_eq!(all, excl + incl, "{verbosity}: no other events");
    }
}

#[test]
fn stage_spans_nest_in_the_root_in_stage_order() {
    let spans = run_scenario(CupelVerbosity::Full);
    let root = span(&spans, "cupel.pipeline");
    assert!(root.end_time >= root.start_time);
    let mut previous_start = root.start_time;
    for name in STAGES {
        let s = span(&spans, name);
        assert!(s.end_time >= s.start_time, "{name}: negative duration");
        assert!(s.start_time >= root.start_time, "{name} starts before root");
        assert!(s.end_time <= root.end_time, "{name} ends after root");
        assert!(s.start_time >= previous_start, "{name} out of order");
        previous_start = s.start_time;
        for e in s.events.iter() {
            assert!(e.timestamp >= s.start_time && e.timestamp <= s.end_time);
        }
    }
}

/// Scores like [`HintScorer`] after sleeping 30 ms, so the Score stage has a known minimum length.
struct SlowScorer;

impl Scorer for SlowScorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        HintScorer.score(index, items)
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        sleep(Duration::from_millis(30));
        (0..items.len()).map(|i| self.score(i, items)).collect()
    }
}

#[test]
fn stage_spans_carry_the_time_the_stage_really_took() {
    let (provider, exporter) = sdk();
    let pipeline = Pipeline::builder()
        .scorer(SlowScorer)
        .slicer(GreedySlice)
        .placer(ReversePlacer)
        .budget(budget())
        .build()
        .unwrap();
    let mut collector = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    pipeline
        .run_with(&scenario(), RunOptions::new().collector(&mut collector))
        .map(|o| o.items)
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let score = span(&spans, "cupel.stage.score");
    let took = score.end_time.duration_since(score.start_time).unwrap();
    assert!(
        took >= Duration::from_millis(30),
        "score span lasted {took:?}"
    );
    // The 30 ms sit in Score, not in the stages around it (which take microseconds).
    let dedup = span(&spans, "cupel.stage.deduplicate");
    assert!(dedup.start_time >= score.start_time + Duration::from_millis(30));
    let root = span(&spans, "cupel.pipeline");
    assert!(root.end_time.duration_since(root.start_time).unwrap() >= Duration::from_millis(30));
}

#[test]
fn stage_span_times_are_exactly_the_stage_trace_times() {
    // Driven by hand, so the times are known: a stage that started 5 ms after
    // the run and lasted 7 ms must be exported as [start, start + 7 ms].
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    let items = [ContextItem::new("a", 1).unwrap()];
    c.on_run_started(&items, &ContextBudget::new(10, 10).unwrap());
    let started_at = SystemTime::now() + Duration::from_millis(5);
    c.on_stage_completed(&StageTrace::new(
        PipelineStage::Score,
        started_at,
        Duration::from_millis(7),
        1,
        1,
    ));
    c.on_run_completed();
    let spans = exporter.get_finished_spans().unwrap();
    let score = span(&spans, "cupel.stage.score");
    assert_eq!(score.start_time, started_at);
    assert_eq!(score.end_time, started_at + Duration::from_millis(7));
    // The root was stretched to cover the stage that ended in the future.
    let root = span(&spans, "cupel.pipeline");
    assert!(root.end_time >= started_at + Duration::from_millis(7));
}

#[test]
fn truncate_exclusions_land_on_the_place_span() {
    // TakeAll slices alpha 30, beta 40, zero 0, gamma 50 (score order 0.9, 0.8,
    // 0.3, 0.1). Merged = sys 10 + those = 130 > target 100. Truncate keeps sys
    // (10), alpha (40), beta (80), zero (80); gamma: 80 + 50 = 130 > 100, removed.
    // Without pinned tokens it would still not fit (70 + 50 = 120 > 100), so the
    // reason is BudgetExceeded.
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions);
    let window = take_all_pipeline(OverflowStrategy::Truncate)
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    assert_eq!(window.len(), 4);
    let spans = exporter.get_finished_spans().unwrap();
    let slice = span(&spans, "cupel.stage.slice");
    assert!(exclusions(slice).is_empty());
    let place = span(&spans, "cupel.stage.place");
    assert_eq!(
        exclusions(place),
        vec![(
            Value::from("BudgetExceeded"),
            Value::from("ToolOutput"),
            Value::I64(50)
        )]
    );
    assert_eq!(
        attr(&place.attributes, "cupel.exclusion.count").cloned(),
        int(1)
    );
    // Place: 5 in (sys + 4 sliced), 4 out.
    assert_eq!(
        attr(&place.attributes, "cupel.stage.item_count_in").cloned(),
        int(5)
    );
    assert_eq!(
        attr(&place.attributes, "cupel.stage.item_count_out").cloned(),
        int(4)
    );
}

#[test]
fn proceed_overflow_is_an_extra_event_on_the_place_span_at_every_tier() {
    // Merged = 10 + 30 + 40 + 0 + 50 = 130 tokens, target 100: 30 over, 5 items.
    for verbosity in CupelVerbosity::ALL {
        let (provider, exporter) = sdk();
        let mut c = OtelCollector::with_tracer_provider(&provider, verbosity).with_extras(true);
        let window = take_all_pipeline(OverflowStrategy::Proceed)
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap();
        assert_eq!(window.len(), 5);
        let spans = exporter.get_finished_spans().unwrap();
        let place = span(&spans, "cupel.stage.place");
        let overflow = events_named(place, "cupel.overflow");
        assert_eq!(overflow.len(), 1, "{verbosity}");
        assert_eq!(
            attr(&overflow[0].attributes, "cupel.overflow.tokens_over_budget").cloned(),
            int(30)
        );
        assert_eq!(
            attr(&overflow[0].attributes, "cupel.overflow.item_count").cloned(),
            int(5)
        );
        let elsewhere: usize = spans
            .iter()
            .filter(|s| s.name != "cupel.stage.place")
            .map(|s| events_named(s, "cupel.overflow").len())
            .sum();
        assert_eq!(elsewhere, 0);
    }
}

#[test]
fn a_failure_in_classify_marks_that_stage_and_the_root_as_errors() {
    // Pinned 300 tokens > max 200 - reserve 0: PinnedBudgetExceeded inside Classify,
    // after the negative item was already excluded there.
    let (provider, exporter) = sdk();
    let mut items = scenario();
    items[0] = ContextItem::builder("sys", 300)
        .pinned(true)
        .build()
        .unwrap();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions)
        .with_extras(true);
    let err = pipeline()
        .run_with(&items, RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap_err();
    assert!(matches!(err, CupelError::PinnedBudgetExceeded { .. }));
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["cupel.stage.classify", "cupel.pipeline"]);
    let root = span(&spans, "cupel.pipeline");
    let classify = span(&spans, "cupel.stage.classify");
    let message = err.to_string();
    assert_eq!(root.status, Status::error(message.clone()));
    assert_eq!(classify.status, Status::error(message));
    assert_eq!(classify.parent_span_id, root.span_context.span_id());
    // The unfinished stage has no counts, but keeps what it recorded.
    assert_eq!(
        attr(&classify.attributes, "cupel.stage.item_count_in"),
        None
    );
    assert_eq!(exclusions(classify).len(), 1);
    assert_eq!(
        attr(&root.attributes, "cupel.included_count").cloned(),
        int(0)
    );
    assert_eq!(
        attr(&root.attributes, "cupel.excluded_count").cloned(),
        int(1)
    );
    assert!(classify.start_time >= root.start_time && classify.end_time <= root.end_time);
}

#[test]
fn a_failure_in_place_keeps_the_four_finished_stages() {
    // TakeAll under Throw: 130 > 100 at Place → BudgetOverflow.
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    let err = take_all_pipeline(OverflowStrategy::Throw)
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap_err();
    assert!(matches!(
        err,
        CupelError::BudgetOverflow {
            selected_tokens: 130,
            target_tokens: 100
        }
    ));
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 6);
    for name in &STAGES[..4] {
        assert_eq!(span(&spans, name).status, Status::Unset, "{name}");
    }
    let place = span(&spans, "cupel.stage.place");
    assert!(matches!(place.status, Status::Error { .. }));
    let slice = span(&spans, "cupel.stage.slice");
    assert!(place.start_time >= slice.end_time);
    assert!(matches!(
        span(&spans, "cupel.pipeline").status,
        Status::Error { .. }
    ));
}

#[test]
fn the_root_nests_under_the_callers_span() {
    let (provider, exporter) = sdk();
    let tracer = provider.tracer("app");
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    let outer = tracer.start("llm.call");
    let outer_cx = Context::current_with_span(outer);
    {
        let _guard = outer_cx.clone().attach();
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap();
    }
    outer_cx.span().end();
    let spans = exporter.get_finished_spans().unwrap();
    let outer = span(&spans, "llm.call");
    let root = span(&spans, "cupel.pipeline");
    assert_eq!(root.parent_span_id, outer.span_context.span_id());
    assert_eq!(root.span_context.trace_id(), outer.span_context.trace_id());
    for name in STAGES {
        assert_eq!(
            span(&spans, name).span_context.trace_id(),
            outer.span_context.trace_id()
        );
    }
}

#[test]
fn an_explicit_parent_context_wins_over_the_current_one() {
    let (provider, exporter) = sdk();
    let tracer = provider.tracer("app");
    let parent = tracer.start("request");
    let parent_cx = Context::new().with_span(parent);
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly)
        .with_parent_context(parent_cx.clone());
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    parent_cx.span().end();
    let spans = exporter.get_finished_spans().unwrap();
    let request = span(&spans, "request");
    let root = span(&spans, "cupel.pipeline");
    assert_eq!(root.parent_span_id, request.span_context.span_id());
}

#[test]
fn a_collector_is_reusable_and_each_run_is_its_own_trace() {
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 12);
    let roots: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "cupel.pipeline")
        .collect();
    assert_eq!(roots.len(), 2);
    assert_ne!(
        roots[0].span_context.trace_id(),
        roots[1].span_context.trace_id()
    );
    for root in roots {
        let children = spans
            .iter()
            .filter(|s| s.parent_span_id == root.span_context.span_id())
            .count();
        assert_eq!(children, 5);
    }
}

#[test]
fn sampled_out_runs_export_nothing() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .with_sampler(Sampler::AlwaysOff)
        .build();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::Full);
    // A real SDK tracer: enabled (a later run could be sampled in).
    assert!(c.is_enabled());
    let window = pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    assert_eq!(window.len(), 4);
    assert!(exporter.get_finished_spans().unwrap().is_empty());
}

#[test]
fn an_abandoned_run_is_closed_with_an_error_by_the_next_one() {
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions)
        .with_extras(true);
    let items = [ContextItem::new("a", 1).unwrap()];
    let budget = ContextBudget::new(10, 10).unwrap();
    c.on_run_started(&items, &budget);
    c.on_item_excluded(ExclusionRecord::new(
        PipelineStage::Slice,
        0,
        &items[0],
        0.5,
        ExclusionReason::Unknown {
            reason: "SomethingNew".into(),
        },
    ));
    // No completion: the next run closes the first.
    c.on_run_started(&items, &budget);
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].name, "cupel.pipeline");
    assert!(matches!(spans[0].status, Status::Error { .. }));
    assert_eq!(
        attr(&spans[0].attributes, "cupel.excluded_count").cloned(),
        int(1)
    );
    drop(c);
    // Dropping the collector closes the second.
    assert_eq!(exporter.get_finished_spans().unwrap().len(), 2);
}

/// Completes a hand-driven run: a Slice stage of one item in, none out, then the end.
fn finish_slice_run<C: TraceCollector>(c: &mut C) {
    c.on_stage_completed(&StageTrace::new(
        PipelineStage::Slice,
        SystemTime::now(),
        Duration::ZERO,
        1,
        0,
    ));
    c.on_run_completed();
}

#[test]
fn foreign_reasons_are_recorded_as_unknown() {
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions);
    let item = ContextItem::builder("x", 3)
        .kind(ContextKind::new("Custom").unwrap())
        .build()
        .unwrap();
    c.on_run_started(
        std::slice::from_ref(&item),
        &ContextBudget::new(10, 10).unwrap(),
    );
    c.on_item_excluded(ExclusionRecord::new(
        PipelineStage::Slice,
        0,
        &item,
        0.5,
        ExclusionReason::Unknown {
            reason: "SomethingNew".into(),
        },
    ));
    finish_slice_run(&mut c);
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(
        exclusions(span(&spans, "cupel.stage.slice")),
        vec![(Value::from("Unknown"), Value::from("Custom"), Value::I64(3))]
    );
}

#[test]
fn reasons_outside_the_spec_set_are_unknown_with_the_variant_as_an_extra() {
    // CountCapExceeded is this implementation's reason, not one of the spec's
    // eight: "Unknown" by default. With extras the event also names the variant;
    // a spec reason never gets that extra attribute.
    for extras in [false, true] {
        let (provider, exporter) = sdk();
        let mut c =
            OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions)
                .with_extras(extras);
        let item = ContextItem::builder("t", 4)
            .kind(ContextKind::TOOL_OUTPUT)
            .build()
            .unwrap();
        c.on_run_started(
            std::slice::from_ref(&item),
            &ContextBudget::new(10, 10).unwrap(),
        );
        for reason in [
            ExclusionReason::CountCapExceeded {
                kind: "ToolOutput".into(),
                cap: 1,
                count: 1,
            },
            ExclusionReason::BudgetExceeded {
                item_tokens: 4,
                available_tokens: 2,
            },
        ] {
            c.on_item_excluded(ExclusionRecord::new(
                PipelineStage::Slice,
                0,
                &item,
                0.5,
                reason,
            ));
        }
        finish_slice_run(&mut c);
        let spans = exporter.get_finished_spans().unwrap();
        let slice = span(&spans, "cupel.stage.slice");
        assert_eq!(
            exclusions(slice),
            vec![
                (
                    Value::from("Unknown"),
                    Value::from("ToolOutput"),
                    Value::I64(4)
                ),
                (
                    Value::from("BudgetExceeded"),
                    Value::from("ToolOutput"),
                    Value::I64(4)
                ),
            ]
        );
        let variants: Vec<Option<Value>> = events_named(slice, "cupel.exclusion")
            .iter()
            .map(|e| attr(&e.attributes, "cupel.exclusion.variant").cloned())
            .collect();
        let expected = if extras {
            vec![string("CountCapExceeded"), None]
        } else {
            vec![None, None]
        };
        assert_eq!(variants, expected, "extras = {extras}");
    }
}

#[test]
fn full_reports_the_zero_token_items_computed_score_like_the_report() {
    // D-6: `zero` (0 tokens, hint 0.3) is included with reason ZeroToken and its
    // computed score 0.3; pinned `sys` with 1.0. The OTel event, run_traced's
    // report and dry_run agree item by item.
    let spans = run_scenario(CupelVerbosity::Full);
    let place = span(&spans, "cupel.stage.place");
    let otel: Vec<(Value, f64)> = events_named(place, "cupel.item.included")
        .iter()
        .map(|e| {
            let kind = attr(&e.attributes, "cupel.item.kind").unwrap().clone();
            let score = match attr(&e.attributes, "cupel.item.score") {
                Some(Value::F64(f)) => *f,
                other => panic!("score {other:?}"),
            };
            (kind, score)
        })
        .collect();
    let mut diag = cupel_core::DiagnosticTraceCollector::new(cupel_core::TraceDetailLevel::Item);
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut diag))
        .map(|o| o.items)
        .unwrap();
    let traced = diag.into_report();
    let dry = pipeline().dry_run(&scenario()).unwrap();
    for report in [&traced, &dry] {
        let from_report: Vec<(Value, f64)> = report
            .included
            .iter()
            .map(|i| (Value::from(i.item.kind().as_str().to_owned()), i.score))
            .collect();
        assert_eq!(otel, from_report);
    }
    let zero = dry
        .included
        .iter()
        .find(|i| i.item.content() == "zero")
        .unwrap();
    assert_eq!(
        (zero.score, &zero.reason),
        (0.3, &cupel_core::InclusionReason::ZeroToken)
    );
}

#[test]
fn a_noop_provider_disables_the_collector_and_the_run_is_unchanged() {
    let noop = opentelemetry::trace::noop::NoopTracerProvider::new();
    let mut c = OtelCollector::with_tracer_provider(&noop, CupelVerbosity::Full);
    assert!(!c.is_enabled());
    let traced = pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    let plain = pipeline().run(&scenario()).unwrap();
    assert_eq!(traced, plain);
}

#[test]
fn a_shut_down_provider_records_nothing() {
    let (provider, exporter) = sdk();
    let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageOnly);
    provider.shutdown().unwrap();
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    assert!(exporter.get_finished_spans().unwrap_or_default().is_empty());
}

#[test]
fn shortfall_events_appear_only_with_extras() {
    // The scenario under a count-quota slicer requiring 3 Documents: after
    // Deduplicate the only Document is beta (40 tokens), which phase 1 commits
    // (40 <= effective target 90), so the requirement ends 1 of 3 under
    // Degrade: one shortfall { Document, required 3, satisfied 1 }.
    use cupel_slicers::{CountQuotaEntry, CountQuotaSlice, ScarcityBehavior};
    let slicer = CountQuotaSlice::new(
        vec![CountQuotaEntry::new(ContextKind::DOCUMENT, 3, 5).unwrap()],
        std::sync::Arc::new(GreedySlice),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let p = Pipeline::builder()
        .scorer(HintScorer)
        .slicer(slicer)
        .placer(ReversePlacer)
        .budget(budget())
        .build()
        .unwrap();
    for extras in [false, true] {
        let (provider, exporter) = sdk();
        let mut c = OtelCollector::with_tracer_provider(&provider, CupelVerbosity::Full)
            .with_extras(extras);
        p.run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        let shortfalls: Vec<_> = spans
            .iter()
            .flat_map(|s| s.events.iter().map(move |e| (s.name.as_ref(), e)))
            .filter(|(_, e)| e.name == "cupel.shortfall")
            .collect();
        if !extras {
            assert!(shortfalls.is_empty(), "no shortfall event by default");
            continue;
        }
        assert_eq!(shortfalls.len(), 1);
        let (span_name, e) = shortfalls[0];
        assert_eq!(span_name, "cupel.stage.slice");
        let a = &e.attributes;
        assert_eq!(
            attr(a, "cupel.shortfall.kind").cloned(),
            Some(Value::from("Document"))
        );
        assert_eq!(attr(a, "cupel.shortfall.required_count").cloned(), int(3));
        assert_eq!(attr(a, "cupel.shortfall.satisfied_count").cloned(), int(1));
    }
}

#[test]
fn group_exclusions_are_unknown_by_default_and_name_the_group_with_extras() {
    // GroupExcluded (the atomic-group extension) is outside the spec's eight:
    // "Unknown" by default. With extras the event also carries the variant
    // and the item's group id.
    for extras in [false, true] {
        let (provider, exporter) = sdk();
        let mut c =
            OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions)
                .with_extras(extras);
        let item = ContextItem::builder("result", 4)
            .kind(ContextKind::TOOL_OUTPUT)
            .group("call-1")
            .build()
            .unwrap();
        c.on_run_started(
            std::slice::from_ref(&item),
            &ContextBudget::new(10, 10).unwrap(),
        );
        c.on_item_excluded(ExclusionRecord::new(
            PipelineStage::Slice,
            0,
            &item,
            0.5,
            ExclusionReason::GroupExcluded {
                group: "call-1".into(),
                group_tokens: 9,
                available_tokens: 2,
            },
        ));
        finish_slice_run(&mut c);
        let spans = exporter.get_finished_spans().unwrap();
        let slice = span(&spans, "cupel.stage.slice");
        assert_eq!(
            exclusions(slice),
            vec![(
                Value::from("Unknown"),
                Value::from("ToolOutput"),
                Value::I64(4)
            )]
        );
        let events = events_named(slice, "cupel.exclusion");
        let got = (
            attr(&events[0].attributes, "cupel.exclusion.variant").cloned(),
            attr(&events[0].attributes, "cupel.exclusion.group").cloned(),
        );
        let want = if extras {
            (string("GroupExcluded"), string("call-1"))
        } else {
            (None, None)
        };
        assert_eq!(got, want, "extras = {extras}");
    }
}
