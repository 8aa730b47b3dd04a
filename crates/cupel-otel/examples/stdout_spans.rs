//! Prints the spans of one pipeline run with OpenTelemetry's stdout exporter.
//!
//! The run is the `cupel demo` scenario (`cupel_pipeline::samples::support_chat`):
//! a support chat about a thermostat that went offline after a firmware update,
//! 31 candidates (a pinned system prompt, chat turns, tool outputs, retrieved
//! articles — one retrieved twice — memories and a broken item with a negative
//! token count) for a 1536-token window.
//!
//! ```text
//! cargo run -p cupel-rs-otel --example stdout_spans                       # Full
//! cargo run -p cupel-rs-otel --example stdout_spans -- StageOnly
//! cargo run -p cupel-rs-otel --example stdout_spans -- StageAndExclusions
//! ```

use std::error::Error;

use cupel_core::ContextItem;
use cupel_otel::{CupelVerbosity, OtelCollector};
use cupel_pipeline::{Pipeline, RunOptions, samples};
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

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

    let sample = samples::support_chat()?;
    let pipeline = Pipeline::new(sample.policy.build()?, sample.budget);
    let items = sample.items;

    // The application's own span (say, the model call); Cupel's spans nest under it.
    let app = provider.tracer("support-bot");
    let call = app.start("llm.chat");
    let cx = opentelemetry::Context::current_with_span(call);
    let window = {
        let _guard = cx.clone().attach();
        let mut collector = OtelCollector::with_tracer_provider(&provider, verbosity);
        pipeline
            .run_with(&items, RunOptions::new().collector(&mut collector))?
            .items
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
