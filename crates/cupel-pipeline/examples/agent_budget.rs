//! An agent loop and a subagent sharing one run budget.
//!
//! The orchestrator answers a support question with a (simulated) model and
//! a search tool. Every turn selects its context window with
//! `Pipeline::run_within`, so the window shrinks as the run's input
//! allowance runs down; tool calls reserve their projected cost first; a
//! subagent that summarises the retrieved articles runs on its own thread
//! with a child scope (a tighter input cap) that still charges the run. The
//! loop stops when the budget says so, and prints the error and its JSON.
//!
//! ```text
//! cargo run -p cupel-rs-pipeline --example agent_budget
//! ```

use std::error::Error;
use std::thread;

use chrono::{DateTime, TimeDelta, Utc};
use cupel_core::{
    BudgetExceededError, BudgetPhase, BudgetTracker, ContextBudget, ContextItem, ContextKind,
    CupelError, Deadline, ManualTimeProvider, RunBudget, TimeProvider, TokenLimit, TokenUsage,
};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::RecencyScorer;

use cupel_slicers::GreedySlice;

/// What the run did, for the caller (and the test that runs this example).
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Model turns completed by the orchestrator.
    pub(crate) turns: usize,
    /// Turns completed by the subagent before its own cap stopped it.
    pub(crate) subagent_turns: usize,
    /// The error that stopped the subagent (its own input cap).
    pub(crate) subagent_stopped_by: BudgetExceededError,
    /// The error that ended the run.
    pub(crate) stopped_by: BudgetExceededError,
    /// The run's total usage.
    pub(crate) usage: TokenUsage,
}

/// The simulated model: reads the whole window, answers with at most
/// `max_output` tokens (80 by default).
fn call_model(window: &[ContextItem], max_output: Option<i64>) -> Result<TokenUsage, CupelError> {
    let input: i64 = window.iter().map(ContextItem::tokens).sum();
    TokenUsage::new(input, max_output.unwrap_or(80).min(80))
}

fn item(
    text: String,
    tokens: i64,
    kind: ContextKind,
    at: DateTime<Utc>,
) -> Result<ContextItem, CupelError> {
    ContextItem::builder(text, tokens)
        .kind(kind)
        .timestamp(at)
        .build()
}

/// One agent turn: select, call, settle. Returns the model's answer usage.
fn turn(
    pipeline: &Pipeline,
    history: &[ContextItem],
    budget: &BudgetTracker,
) -> Result<TokenUsage, CupelError> {
    let window = pipeline.run_within(history, budget)?;
    let used = call_model(&window.items, window.max_output_tokens)?;
    window.reservation.settle(used);
    Ok(used)
}

/// The subagent: summarises until its own scope (or the run) says stop.
fn summariser(
    pipeline: &Pipeline,
    articles: &[ContextItem],
    scope: &BudgetTracker,
) -> (usize, BudgetExceededError) {
    let mut turns = 0;
    loop {
        match turn(pipeline, articles, scope) {
            Ok(_) => turns += 1,
            Err(CupelError::RunBudgetExceeded(e)) => return (turns, e),
            Err(other) => unreachable!("the example pipeline cannot fail otherwise: {other}"),
        }
    }
}

/// Runs the whole scenario on a manual clock (each model call takes 4 s).
pub(crate) fn run_agent() -> Result<Outcome, Box<dyn Error>> {
    let clock = ManualTimeProvider::new("2026-06-01T10:00:00Z".parse()?);
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(Some(2_000), Some(600))?)
        .build(&clock)?;
    let run = BudgetTracker::new(budget, clock.clone())?;
    run.preflight()?;

    let pipeline = Pipeline::builder()
        .scorer(RecencyScorer)
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(
            ContextBudget::builder(1_024, 900)
                .output_reserve(120)
                .build()?,
        )
        .build()?;

    let start = clock.now();
    let mut history = vec![
        ContextItem::builder("You are a support agent for thermostats.", 30)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .build()?,
        item(
            "My thermostat went offline after the update.".into(),
            40,
            ContextKind::MESSAGE,
            start,
        )?,
    ];

    // Delegate: a summariser with at most 500 input tokens of the run.
    let articles: Vec<ContextItem> = (0..4)
        .map(|i| {
            item(
                format!("Article {i} about firmware rollbacks."),
                100,
                ContextKind::DOCUMENT,
                start,
            )
        })
        .collect::<Result<_, _>>()?;
    let sub_scope = run.child(RunBudget::new(
        None,
        Some(TokenLimit::new(Some(500), None)?),
        &clock,
    )?)?;
    let (subagent_turns, sub_stop) = thread::scope(|s| {
        s.spawn(|| summariser(&pipeline, &articles, &sub_scope))
            .join()
    })
    .map_err(|_| "the subagent thread panicked")?;
    println!(
        "subagent: {subagent_turns} turns; run usage now {}",
        run.usage()
    );
    history.push(item(
        "Summary: roll the firmware back from the app's settings.".into(),
        80,
        ContextKind::DOCUMENT,
        start,
    )?);

    let mut turns = 0;
    let stopped_by = loop {
        clock.advance(TimeDelta::seconds(4));
        let answer = match turn(&pipeline, &history, &run) {
            Ok(answer) => answer,
            Err(CupelError::RunBudgetExceeded(e)) => break e,
            Err(other) => return Err(other.into()),
        };
        turns += 1;
        history.push(item(
            format!("Assistant turn {turns}."),
            answer.output(),
            ContextKind::MESSAGE,
            clock.now(),
        )?);

        // The assistant asks the search tool: projected 0 in / 60 out.
        let projected = TokenUsage::new(0, 60)?;
        match run.reserve(BudgetPhase::ToolExecution, projected) {
            Ok(reservation) => {
                let actual = TokenUsage::new(0, 45)?;
                reservation.settle(actual);
                history.push(item(
                    format!("Search result {turns}."),
                    actual.output(),
                    ContextKind::TOOL_OUTPUT,
                    clock.now(),
                )?);
            }
            Err(e) => break e,
        }
        let s = run.snapshot();
        println!(
            "turn {turns}: usage {}, remaining {:?}, {:?} ms left",
            s.usage,
            s.remaining_tokens,
            s.remaining_time_ms()
        );
    };
    Ok(Outcome {
        turns,
        subagent_turns,
        subagent_stopped_by: sub_stop,
        stopped_by,
        usage: run.usage(),
    })
}

#[allow(dead_code)] // the example's entry point; the test calls `run_agent`
fn main() -> Result<(), Box<dyn Error>> {
    let outcome = run_agent()?;
    println!("subagent stopped: {}", outcome.subagent_stopped_by);
    println!(
        "run stopped: {}\n  state: {}",
        outcome.stopped_by,
        outcome.stopped_by.budget_json()
    );
    println!(
        "{} turns (+{} by the subagent), total usage {}",
        outcome.turns, outcome.subagent_turns, outcome.usage
    );
    Ok(())
}
