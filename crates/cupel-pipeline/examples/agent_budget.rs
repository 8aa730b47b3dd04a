//! An agent loop and a subagent sharing one run budget, on two threads.
//!
//! The orchestrator answers a support question with a (simulated) model and
//! a search tool. Every turn selects its context window with
//! `RunOptions::run_budget`, so the window shrinks as the run's input
//! allowance runs down; tool calls reserve their projected cost first. A
//! summariser subagent works on its own thread *at the same time*, in a
//! child scope named `"summariser"` with a tighter input cap that still
//! charges the run. Both model sessions report running totals, which a
//! `UsageMeter` turns into per-call usage. The loop stops when the budget
//! says so, and prints the error and its JSON.
//!
//! The two threads work in rounds: each round the orchestrator moves the
//! (manual) clock by one model call, opens the round for the subagent, takes
//! its own turn while the subagent takes one, then waits for the subagent's
//! report. Within a round the threads race for the shared budget, but the
//! numbers are chosen so every request fits whatever the interleaving, and
//! the log is written in a fixed order after each round, so the output is
//! the same on every run.
//!
//! ```text
//! cargo run -p cupel-rs-pipeline --example agent_budget
//! ```

use std::error::Error;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread;

use chrono::{DateTime, TimeDelta, Utc};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ManualTimeProvider, TimeProvider,
};
use cupel_pipeline::{Pipeline, RunOptions, SelectWithinError};
use cupel_placers::ChronologicalPlacer;
use cupel_run::{
    BudgetExceededError, BudgetPhase, Deadline, LocalTracker, RunBudget, RunError, TokenLimit,
    TokenUsage, UsageMeter,
};
use cupel_scorers::RecencyScorer;
use cupel_slicers::GreedySlice;

/// What the run did, for the caller (and the test that runs this example).
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Model turns completed by the orchestrator.
    pub(crate) turns: usize,
    /// Turns completed by the subagent.
    pub(crate) subagent_turns: usize,
    /// The error that stopped the subagent, if the budget stopped it.
    pub(crate) subagent_stopped_by: Option<BudgetExceededError>,
    /// The error that ended the run.
    pub(crate) stopped_by: BudgetExceededError,
    /// The run's total usage.
    pub(crate) usage: TokenUsage,
    /// What happened, round by round (the lines `main` prints).
    pub(crate) log: Vec<String>,
}

/// A simulated model session. It reads the whole window and answers with at
/// most `max_output` tokens (80 by default); like real provider sessions it
/// reports the session's *running total*, not the call's usage.
#[derive(Default)]
struct ModelSession {
    total: TokenUsage,
}

impl ModelSession {
    fn call(
        &mut self,
        window: &[ContextItem],
        max_output: Option<i64>,
    ) -> Result<TokenUsage, RunError> {
        let input: i64 = window.iter().map(ContextItem::tokens).sum();
        let this_call = TokenUsage::new(input, max_output.unwrap_or(80).min(80))?;
        self.total = self.total.saturating_add(this_call);
        Ok(self.total)
    }
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

/// One model turn: select under the meter's scope, call, settle the
/// reservation with the increase of the session's running total. Returns
/// the call's usage.
fn model_turn(
    pipeline: &Pipeline,
    history: &[ContextItem],
    session: &mut ModelSession,
    meter: &mut UsageMeter,
) -> Result<TokenUsage, SelectWithinError> {
    let out = pipeline.run_with(history, RunOptions::new().run_budget(meter.tracker()))?;
    let Some(hold) = out.hold else {
        return Err(CupelError::PipelineConfig("a run budget was given".into()).into());
    };
    let running_total = session.call(&out.items, hold.max_output_tokens)?;
    Ok(meter.settle_total(hold.reservation, running_total)?)
}

/// What the subagent tells the orchestrator at the end of a round.
enum Report {
    /// A completed turn and its usage.
    Turn(TokenUsage),
    /// The budget stopped the subagent after this many turns.
    Stopped(usize, BudgetExceededError),
}

/// The subagent: one summarising turn per round the orchestrator opens,
/// until its scope (or the run) says stop or the orchestrator is done.
fn summariser(
    pipeline: &Pipeline,
    articles: &[ContextItem],
    scope: &LocalTracker,
    rounds: Receiver<()>,
    reports: Sender<Report>,
) -> Result<(), SelectWithinError> {
    let mut session = ModelSession::default();
    let mut meter = scope.meter();
    let mut turns = 0;
    for () in rounds {
        let report = match model_turn(pipeline, articles, &mut session, &mut meter) {
            Ok(used) => {
                turns += 1;
                Report::Turn(used)
            }
            Err(SelectWithinError::Run(RunError::Exceeded(e))) => Report::Stopped(turns, e),
            Err(other) => return Err(other),
        };
        let stopped = matches!(report, Report::Stopped(..));
        // The orchestrator hung up: nothing left to report to.
        if reports.send(report).is_err() || stopped {
            break;
        }
    }
    Ok(())
}

/// The run's tracker: 60 s, 2,000 input and 600 output tokens, checked
/// before the first round.
fn tracker(clock: &ManualTimeProvider) -> Result<LocalTracker, RunError> {
    let budget = RunBudget::builder()
        .deadline(Deadline::after(clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(Some(2_000), Some(600))?)
        .build(clock)?;
    let run = LocalTracker::new(budget, clock.clone())?;
    run.preflight()?;
    Ok(run)
}

/// The agent's context pipeline: newest first, within 900 of 1,024 tokens.
fn pipeline() -> Result<Pipeline, CupelError> {
    Pipeline::builder()
        .scorer(RecencyScorer)
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(
            ContextBudget::builder(1_024, 900)
                .output_reserve(120)
                .build()?,
        )
        .build()
}

/// The conversation so far (a pinned system prompt, the user's problem)
/// and the four articles the summariser is given.
fn conversation(start: DateTime<Utc>) -> Result<(Vec<ContextItem>, Vec<ContextItem>), CupelError> {
    let history = vec![
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
    let articles = (0..4)
        .map(|i| {
            item(
                format!("Article {i} about firmware rollbacks."),
                100,
                ContextKind::DOCUMENT,
                start,
            )
        })
        .collect::<Result<_, _>>()?;
    Ok((history, articles))
}

/// The log line of the run's use and what is left after round `round`.
fn usage_line(round: usize, s: &cupel_run::RunSnapshot) -> String {
    let (input, output) = s
        .remaining_tokens
        .map_or((None, None), |r| (r.input(), r.output()));
    format!(
        "round {round}: run used {}; left input {}, output {}, {} ms",
        s.usage,
        shown(input),
        shown(output),
        shown(s.remaining_time_ms())
    )
}

/// Runs the whole scenario on a manual clock (each round takes 4 s).
pub(crate) fn run_agent() -> Result<Outcome, Box<dyn Error>> {
    let clock = ManualTimeProvider::new("2026-06-01T10:00:00Z".parse()?);
    let run = tracker(&clock)?;

    let pipeline = pipeline()?;
    let start = clock.now();
    let (mut history, articles) = conversation(start)?;
    let sub_scope = run.child_named(
        "summariser",
        RunBudget::new(None, Some(TokenLimit::new(Some(500), None)?), &clock)?,
    )?;

    thread::scope(|s| {
        let (open_round, rounds) = channel();
        let (report, reports) = channel();
        let subagent = s.spawn(|| summariser(&pipeline, &articles, &sub_scope, rounds, report));

        let mut agent = ModelSession::default();
        let mut meter = run.meter();
        let mut open_round = Some(open_round);
        let (mut turns, mut subagent_turns, mut subagent_stopped_by) = (0, 0, None);
        let mut log = Vec::new();
        let mut round = 0;
        let stopped_by = loop {
            round += 1;
            clock.advance(TimeDelta::seconds(4));
            // Open the round: the subagent takes its turn while we take ours.
            let subagent_working = open_round.as_ref().is_some_and(|tx| tx.send(()).is_ok());

            let mut line = format!("round {round}: agent");
            let mut stop = None;
            match model_turn(&pipeline, &history, &mut agent, &mut meter) {
                Ok(answer) => {
                    turns += 1;
                    line.push_str(&format!(" {answer}"));
                    history.push(item(
                        format!("Assistant turn {turns}."),
                        answer.output(),
                        ContextKind::MESSAGE,
                        clock.now(),
                    )?);
                    // The assistant asks the search tool: projected 0 in / 60 out.
                    match run.reserve(BudgetPhase::ToolExecution, TokenUsage::new(0, 60)?) {
                        Ok(reservation) => {
                            let actual = TokenUsage::new(0, 45)?;
                            reservation.settle(actual);
                            line.push_str(&format!("; search tool {actual}"));
                            history.push(item(
                                format!("Search result {turns}."),
                                actual.output(),
                                ContextKind::TOOL_OUTPUT,
                                clock.now(),
                            )?);
                        }
                        Err(e) => {
                            line.push_str("; search tool refused");
                            stop = Some(e);
                        }
                    }
                }
                Err(SelectWithinError::Run(RunError::Exceeded(e))) => {
                    line.push_str(" refused");
                    stop = Some(e);
                }
                Err(other) => return Err(other.into()),
            }
            log.push(line);

            // Close the round: wait for the subagent's report.
            if subagent_working {
                match reports.recv() {
                    Ok(Report::Turn(used)) => {
                        subagent_turns += 1;
                        log.push(format!("round {round}: summariser {used}"));
                        history.push(item(
                            format!("Summary {subagent_turns} of the rollback articles."),
                            used.output(),
                            ContextKind::DOCUMENT,
                            clock.now(),
                        )?);
                    }
                    Ok(Report::Stopped(turns, e)) => {
                        log.push(format!(
                            "round {round}: summariser stopped after {turns} turns: {e}"
                        ));
                        subagent_stopped_by = Some(e);
                        open_round = None;
                    }
                    // The subagent ended on an error: joining it reports it.
                    Err(_) => open_round = None,
                }
            }
            if let Some(e) = stop {
                break e;
            }
            log.push(usage_line(round, &run.snapshot()));
        };
        // Done: hang up, so a subagent still waiting for a round returns.
        drop(open_round);
        subagent
            .join()
            .map_err(|_| "the subagent thread panicked")??;
        Ok(Outcome {
            turns,
            subagent_turns,
            subagent_stopped_by,
            stopped_by,
            usage: run.usage(),
            log,
        })
    })
}

/// A bounded amount, or `unbounded`.
fn shown(value: Option<i64>) -> String {
    value.map_or_else(|| "unbounded".to_owned(), |v| v.to_string())
}

#[allow(dead_code)] // the example's entry point; the test calls `run_agent`
fn main() -> Result<(), Box<dyn Error>> {
    let outcome = run_agent()?;
    for line in &outcome.log {
        println!("{line}");
    }
    if let Some(e) = &outcome.subagent_stopped_by {
        println!("subagent state: {}", e.budget_json());
    }
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
