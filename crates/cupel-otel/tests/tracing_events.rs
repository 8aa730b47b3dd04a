#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `TracingCollector` seen through a capturing `tracing-subscriber` layer.
//!
//! Expected counts come from the scenario in `common/mod.rs` (worked in
//! `otel_spans.rs`): stages 7→6, 5→5, 5→4, 4→3, 4→4; 3 exclusions
//! (NegativeTokens at classify, Deduplicated, BudgetExceeded at slice); 4
//! included items.

mod common;

use cupel_pipeline::RunOptions;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::{pipeline, scenario, take_all_pipeline};
use cupel_core::{OverflowStrategy, TraceCollector};
use cupel_otel::{TracingCollector, names};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    target: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
}

/// A captured span: name, parent span name, fields (updated by `record`).
type CapturedSpan = (String, Option<String>, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
    /// Every span, in creation order.
    spans: Arc<Mutex<Vec<CapturedSpan>>>,
}

struct SpanIndex(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let parent = ctx
            .span_scope(id)
            .and_then(|mut scope| scope.nth(1))
            .map(|p| p.name().to_owned());
        let mut spans = self.spans.lock().unwrap();
        spans.push((attrs.metadata().name().to_owned(), parent, fields.0));
        let index = spans.len() - 1;
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanIndex(index));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(span) = ctx.span(id)
            && let Some(SpanIndex(i)) = span.extensions().get::<SpanIndex>()
        {
            self.spans.lock().unwrap()[*i].2.extend(fields.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let parent = ctx.event_span(event).map(|s| s.name().to_owned());
        self.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            parent,
            fields: fields.0,
        });
    }
}

fn capture<T>(level: LevelFilter, f: impl FnOnce() -> T) -> (T, Capture) {
    let capture = Capture::default();
    let subscriber = Registry::default().with(level).with(capture.clone());
    let out = tracing::subscriber::with_default(subscriber, || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    (out, capture)
}

#[test]
fn debug_shows_one_span_per_run_and_one_event_per_stage() {
    let (window, cap) = capture(LevelFilter::DEBUG, || {
        let mut c = TracingCollector::new();
        assert!(c.is_enabled());
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap()
    });
    assert_eq!(window.len(), 4);
    let events = cap.events.lock().unwrap().clone();
    assert!(events.iter().all(|e| e.target == "cupel"));
    // Each stage event sits in its stage's span; the completion in the run's.
    for e in &events {
        let expected = match e.field("message") {
            "stage completed" => format!("cupel.stage.{}", e.field("stage")),
            _ => "cupel.pipeline".to_owned(),
        };
        assert_eq!(e.parent.as_deref(), Some(expected.as_str()));
    }
    // DEBUG: five stage events and the completion, no per-item events.
    let stages: Vec<(String, String, String)> = events
        .iter()
        .filter(|e| e.field("message") == "stage completed")
        .map(|e| {
            assert_eq!(e.level, Level::DEBUG);
            assert!(e.field("duration_ms").parse::<f64>().unwrap() >= 0.0);
            (
                e.field("stage").to_owned(),
                e.field("item_count_in").to_owned(),
                e.field("item_count_out").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("classify", "7", "6"),
        ("score", "5", "5"),
        ("deduplicate", "5", "4"),
        ("slice", "4", "3"),
        ("place", "4", "4"),
    ]
    .iter()
    .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(stages, expected);
    assert_eq!(events.len(), 6);
    let done = events.last().unwrap();
    assert_eq!(done.field("message"), "run completed");
    assert_eq!((done.field("included"), done.field("excluded")), ("4", "3"));
    assert!(events.iter().all(|e| e.level == Level::DEBUG));

    let spans = cap.spans.lock().unwrap().clone();
    // The run span, then one span per stage under it, in stage order.
    let tree: Vec<(&str, Option<&str>)> = spans
        .iter()
        .map(|(name, parent, _)| (name.as_str(), parent.as_deref()))
        .collect();
    assert_eq!(
        tree,
        [
            (names::PIPELINE_SPAN, None),
            (names::STAGE_CLASSIFY_SPAN, Some(names::PIPELINE_SPAN)),
            (names::STAGE_SCORE_SPAN, Some(names::PIPELINE_SPAN)),
            (names::STAGE_DEDUPLICATE_SPAN, Some(names::PIPELINE_SPAN)),
            (names::STAGE_SLICE_SPAN, Some(names::PIPELINE_SPAN)),
            (names::STAGE_PLACE_SPAN, Some(names::PIPELINE_SPAN)),
        ]
    );
    // Stage spans carry the measured counts.
    let slice = &spans[4].2;
    assert_eq!(slice.get("stage").map(String::as_str), Some("slice"));
    assert_eq!(slice.get("item_count_in").map(String::as_str), Some("4"));
    assert_eq!(slice.get("item_count_out").map(String::as_str), Some("3"));
    assert!(slice["duration_ms"].parse::<f64>().unwrap() >= 0.0);
    let (name, parent, fields) = &spans[0];
    assert_eq!(name, "cupel.pipeline");
    assert_eq!(parent, &None);
    assert_eq!(fields.get("candidates").map(String::as_str), Some("7"));
    assert_eq!(fields.get("max_tokens").map(String::as_str), Some("200"));
    assert_eq!(fields.get("target_tokens").map(String::as_str), Some("100"));
    assert_eq!(fields.get("included").map(String::as_str), Some("4"));
    assert_eq!(fields.get("excluded").map(String::as_str), Some("3"));
}

#[test]
fn trace_adds_one_event_per_excluded_and_included_item() {
    let (_, cap) = capture(LevelFilter::TRACE, || {
        let mut c = TracingCollector::new();
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap()
    });
    let events = cap.events.lock().unwrap().clone();
    let excluded: Vec<(String, String, String, String)> = events
        .iter()
        .filter(|e| e.field("message") == "item excluded")
        .map(|e| {
            assert_eq!(e.level, Level::TRACE);
            (
                e.field("stage").to_owned(),
                e.field("reason").to_owned(),
                e.field("item_kind").to_owned(),
                e.field("item_tokens").to_owned(),
            )
        })
        .collect();
    let expected = [
        ("classify", "NegativeTokens", "Message", "-5"),
        ("deduplicate", "Deduplicated", "Memory", "35"),
        ("slice", "BudgetExceeded", "ToolOutput", "50"),
    ]
    .map(|(a, b, c, d)| (a.to_owned(), b.to_owned(), c.to_owned(), d.to_owned()));
    assert_eq!(excluded, expected);
    // Each item event sits in the span of the stage that decided it.
    for e in &events {
        match e.field("message") {
            "item excluded" => assert_eq!(
                e.parent.as_deref(),
                Some(format!("cupel.stage.{}", e.field("stage")).as_str())
            ),
            "item included" => assert_eq!(e.parent.as_deref(), Some(names::STAGE_PLACE_SPAN)),
            _ => {}
        }
    }
    let included = events
        .iter()
        .filter(|e| e.field("message") == "item included")
        .count();
    assert_eq!(included, 4);
    // 5 stages + 1 completion + 3 exclusions + 4 inclusions.
    assert_eq!(events.len(), 13);
}

#[test]
fn overflow_is_a_debug_event() {
    // TakeAll under Proceed: 10 + 30 + 40 + 0 + 50 = 130 > 100, 30 over, 5 items.
    let (_, cap) = capture(LevelFilter::DEBUG, || {
        let mut c = TracingCollector::new();
        take_all_pipeline(OverflowStrategy::Proceed)
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap()
    });
    let events = cap.events.lock().unwrap().clone();
    let overflow: Vec<&Captured> = events
        .iter()
        .filter(|e| e.field("message") == "budget overflow")
        .collect();
    assert_eq!(overflow.len(), 1);
    assert_eq!(overflow[0].field("tokens_over_budget"), "30");
    assert_eq!(overflow[0].field("item_count"), "5");
    assert_eq!(overflow[0].parent.as_deref(), Some(names::STAGE_PLACE_SPAN));
}

#[test]
fn a_failed_run_says_so() {
    let (err, cap) = capture(LevelFilter::DEBUG, || {
        let mut c = TracingCollector::new();
        take_all_pipeline(OverflowStrategy::Throw)
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap_err()
    });
    let events = cap.events.lock().unwrap().clone();
    let last = events.last().unwrap();
    assert_eq!(last.field("message"), "run failed");
    assert_eq!(last.field("error"), err.to_string());
    assert_eq!(last.parent.as_deref(), Some(names::PIPELINE_SPAN));
    // Four stages completed before Place failed.
    let stages = events
        .iter()
        .filter(|e| e.field("message") == "stage completed")
        .count();
    assert_eq!(stages, 4);
    // Place still gets a span, carrying the error and no counts.
    let spans = cap.spans.lock().unwrap().clone();
    let names_only: Vec<&str> = spans.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names_only.len(), 6);
    let place = spans.last().unwrap();
    assert_eq!(place.0, names::STAGE_PLACE_SPAN);
    assert_eq!(place.1.as_deref(), Some(names::PIPELINE_SPAN));
    assert_eq!(place.2.get("error"), Some(&err.to_string()));
    assert_eq!(place.2.get("item_count_in"), None);
}

#[test]
fn the_run_span_nests_under_the_current_span() {
    let (_, cap) = capture(LevelFilter::DEBUG, || {
        let outer = tracing::info_span!("request");
        let _entered = outer.enter();
        let mut c = TracingCollector::new();
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap()
    });
    let spans = cap.spans.lock().unwrap().clone();
    let run = spans.iter().find(|s| s.0 == "cupel.pipeline").unwrap();
    assert_eq!(run.1.as_deref(), Some("request"));
}

#[test]
fn below_debug_the_collector_is_disabled() {
    let (window, cap) = capture(LevelFilter::INFO, || {
        let mut c = TracingCollector::new();
        assert!(!c.is_enabled());
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut c))
            .map(|o| o.items)
            .unwrap()
    });
    assert_eq!(window.len(), 4);
    assert!(cap.events.lock().unwrap().is_empty());
    assert!(cap.spans.lock().unwrap().is_empty());
}
