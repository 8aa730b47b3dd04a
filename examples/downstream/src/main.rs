//! Runs the support-desk example: one pipeline, two models' budgets, and a
//! traced run that both prints its stages and returns its report.

use cupel_core::{DiagnosticTraceCollector, FanOut, StageTrace, TraceCollector, TraceDetailLevel};
use cupel_downstream_example::{
    LARGE, SMALL, SUPPORT_POLICY, billing_conversation, pipeline_from_policy, select_for,
    support_pipeline, traced_select,
};
use cupel_pipeline::RunOptions;

/// Prints one line per completed stage: a collector of the application's own.
struct StagePrinter;

impl TraceCollector for StagePrinter {
    fn is_enabled(&self) -> bool {
        true
    }

    fn on_stage_completed(&mut self, trace: &StageTrace) {
        println!(
            "  stage {:<11} {} -> {} items",
            trace.stage.lowercase_name(),
            trace.item_count_in,
            trace.item_count_out
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pipeline = support_pipeline("refund")?;
    let items = billing_conversation()?;

    // Per-request budgets: one pipeline, each model's budget.
    for model in [SMALL, LARGE] {
        let window = select_for(&pipeline, &items, model)?;
        let tokens = window
            .iter()
            .fold(0i64, |sum, i| sum.saturating_add(i.tokens()));
        println!(
            "{} model: {} items, {tokens} tokens",
            model.name,
            window.len()
        );
        for item in &window {
            println!("  {}", item.content());
        }
    }

    // Custom components in config: the same pipeline from a TOML policy
    // naming our scorer (`type = "keyword"`) through a ComponentRegistry.
    let configured = pipeline_from_policy(SUPPORT_POLICY)?;
    let same = select_for(&configured, &items, LARGE)? == select_for(&pipeline, &items, LARGE)?;
    println!("configured pipeline (type = \"keyword\"): same window: {same}");

    // One run, two collectors: our printer, and the report from the same run.
    println!("traced run ({} model):", SMALL.name);
    let (window, report) = traced_select(&pipeline, &items, SMALL, &mut StagePrinter)?;
    println!(
        "  window {} items; excluded: {}",
        window.len(),
        report
            .excluded
            .iter()
            .map(|e| format!("{:?} ({})", e.item.content(), e.reason))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // The same with the building blocks: any two collectors, item-level report.
    let mut both = FanOut::new(
        DiagnosticTraceCollector::new(TraceDetailLevel::Item),
        StagePrinter,
    );
    println!("fan-out run ({} model):", LARGE.name);
    let large = LARGE.budget()?;
    pipeline.run_with(
        &items,
        RunOptions::new().budget(&large).collector(&mut both),
    )?;
    let (diagnostics, _) = both.into_inner();
    println!("  {} events recorded", diagnostics.events().len());
    Ok(())
}
