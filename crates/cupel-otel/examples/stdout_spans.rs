//! Prints the spans of one pipeline run with OpenTelemetry's stdout exporter.
//!
//! A small support-chat scenario (10 candidates: a pinned system prompt, chat
//! turns, tool outputs, retrieved articles — one retrieved twice — a memory
//! and a broken item with a negative token count) competes for a 400-token
//! target.
//!
//! ```text
//! cargo run -p cupel-otel --example stdout_spans                       # Full
//! cargo run -p cupel-otel --example stdout_spans -- StageOnly
//! cargo run -p cupel-otel --example stdout_spans -- StageAndExclusions
//! ```

use std::error::Error;

use cupel_core::{ContextBudget, ContextItem, ContextKind, OverflowStrategy, parse_timestamp};
use cupel_otel::{CupelOtelTraceCollector, CupelVerbosity};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{CompositeScorer, KindScorer, ReflexiveScorer};
use cupel_slicers::GreedySlice;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

/// (kind, content, tokens, minute of 09:xx, relevance hint, pinned)
type Row = (
    ContextKind,
    &'static str,
    i64,
    Option<u32>,
    Option<f64>,
    bool,
);

fn scenario() -> Result<Vec<ContextItem>, Box<dyn Error>> {
    let rows: [Row; 10] = [
        (
            ContextKind::SYSTEM_PROMPT,
            "You are Ada, the support assistant for Lumen Home. Be concise.",
            16,
            None,
            None,
            true,
        ),
        (
            ContextKind::MESSAGE,
            "user: My T3 thermostat went offline after last night's update.",
            15,
            Some(30),
            Some(0.9),
            false,
        ),
        (
            ContextKind::MESSAGE,
            "assistant: Sorry about that! Which firmware version does it show?",
            14,
            Some(31),
            Some(0.7),
            false,
        ),
        (
            ContextKind::MESSAGE,
            "user: 4.2.0, and the Wi-Fi icon is blinking.",
            13,
            Some(33),
            Some(0.9),
            false,
        ),
        (
            ContextKind::TOOL_OUTPUT,
            "device_lookup: T3, living room, fw 4.2.0, last seen 02:14 UTC",
            20,
            Some(34),
            Some(0.95),
            false,
        ),
        (
            ContextKind::TOOL_OUTPUT,
            "release_notes 4.2.0: drops WPA2-TKIP; 5 GHz-only networks need 4.2.1",
            180,
            Some(35),
            Some(0.8),
            false,
        ),
        (
            ContextKind::DOCUMENT,
            "KB-112: Reconnecting a thermostat after a firmware update (full article)",
            240,
            Some(36),
            Some(0.6),
            false,
        ),
        (
            ContextKind::DOCUMENT,
            "KB-112: Reconnecting a thermostat after a firmware update (full article)",
            240,
            Some(37),
            Some(0.55),
            false,
        ),
        (
            ContextKind::MEMORY,
            "Priya's home Wi-Fi is a 5 GHz-only mesh network.",
            12,
            Some(2),
            Some(0.85),
            false,
        ),
        (
            ContextKind::DOCUMENT,
            "summary: (tokenizer failed)",
            -1,
            Some(38),
            None,
            false,
        ),
    ];
    let mut items = Vec::with_capacity(rows.len());
    for (kind, content, tokens, minute, hint, pinned) in rows {
        let mut b = ContextItem::builder(content, tokens)
            .kind(kind)
            .pinned(pinned)
            .future_relevance_hint_opt(hint);
        if let Some(m) = minute {
            let ts =
                parse_timestamp(&format!("2025-03-14T09:{m:02}:00Z")).ok_or("bad timestamp")?;
            b = b.timestamp(ts);
        }
        items.push(b.build()?);
    }
    Ok(items)
}

fn main() -> Result<(), Box<dyn Error>> {
    let verbosity = match std::env::args().nth(1).as_deref() {
        None | Some("Full") => CupelVerbosity::Full,
        Some("StageOnly") => CupelVerbosity::StageOnly,
        Some("StageAndExclusions") => CupelVerbosity::StageAndExclusions,
        Some(other) => {
            return Err(format!(
                "unknown verbosity {other:?}: StageOnly, StageAndExclusions or Full"
            )
            .into());
        }
    };

    // Spans go to stdout as each one ends.
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();

    let pipeline = Pipeline::builder()
        .scorer(
            CompositeScorer::builder()
                .add(ReflexiveScorer, 2.0)
                .add(KindScorer::default(), 1.0)
                .build()?,
        )
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Proceed)
        .budget(ContextBudget::new(600, 400)?)
        .build()?;
    let items = scenario()?;

    // The application's own span (say, the model call); Cupel's spans nest under it.
    let app = provider.tracer("support-bot");
    let call = app.start("llm.chat");
    let cx = opentelemetry::Context::current_with_span(call);
    let window = {
        let _guard = cx.clone().attach();
        let mut collector = CupelOtelTraceCollector::with_tracer_provider(&provider, verbosity);
        pipeline.run_traced(&items, &mut collector)?
    };
    cx.span().end();

    eprintln!(
        "\n{} of {} items selected ({} tokens) at {verbosity}:",
        window.len(),
        items.len(),
        window.iter().map(ContextItem::tokens).sum::<i64>()
    );
    for item in &window {
        eprintln!("  [{:>12}] {}", item.kind().as_str(), item.content());
    }
    provider.shutdown()?;
    Ok(())
}
