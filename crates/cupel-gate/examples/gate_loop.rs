//! The compaction loop around the context gate.
//!
//! gate -> Over -> the caller summarises its own context -> gate again, with a
//! loop guard (a maximum number of attempts, and a stop when a summary does
//! not shrink the context) so the loop always ends: the library's
//! `ContextGate::admit_with_retry` with a caller-supplied summarising
//! `ContextCompactor`. The summariser here is a stand-in that keeps the first
//! half of the words; a real one would call a model. Token counts come from a word-counting
//! stand-in too; production code would use `TiktokenCounter` (feature
//! `tiktoken`).
//!
//! Run it with `cargo run -p cupel-rs-pipeline --example gate_loop`.

use cupel_core::{CupelError, TokenCounter};
use cupel_gate::CodeLanguage;
use cupel_gate::{
    CompactionRule, ContextCompactor, ContextGate, GateConfig, GateFailure, GateState,
    InboxMessage, LoopGuard, LoopOutcome, RetrievalNode,
};

/// Counts whitespace-separated words (a stand-in for a real tokenizer).
pub struct Words;

impl TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        i64::try_from(text.split_whitespace().count()).unwrap_or(i64::MAX)
    }
}

/// Stand-in summariser: the whole context becomes one block holding the
/// first half of its words.
pub fn summarise(context: &[String]) -> Vec<String> {
    let words: Vec<&str> = context.iter().flat_map(|b| b.split_whitespace()).collect();
    let keep = words.len() / 2;
    vec![format!("Summary: {}", words[..keep].join(" "))]
}

/// The caller's summarising compactor: what the seed does with a
/// `call_model` step (prompt "summarise this context") followed by
/// `set_variables` (the summary becomes the context). A real one would call
/// a model here; this stand-in keeps the first half of the words.
pub struct HalfSummary;

impl ContextCompactor for HalfSummary {
    fn compact_context(
        &self,
        context: &[String],
        _pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        Ok(summarise(context))
    }
}

/// Runs the library's retry loop with at most `max_attempts` gate calls.
///
/// # Errors
/// A guard of 0 attempts, or a pipeline misconfiguration (the buffer alone
/// cannot fit).
pub fn run(
    gate: &ContextGate,
    state: GateState,
    inbox: Vec<InboxMessage>,
    max_attempts: usize,
) -> Result<LoopOutcome, GateFailure> {
    let guard = LoopGuard::new(max_attempts)?;
    Ok(gate.admit_with_retry(state, inbox, &HalfSummary, guard)?)
}

/// The scenario: a long chat history and one SQL snippet to add.
pub fn scenario() -> (ContextGate, GateState, Vec<InboxMessage>) {
    let config = GateConfig::builder("manage_budget", 60)
        .divide_new_content("<<<New content")
        .rule(CompactionRule::demand(CodeLanguage::Sql, "compact_sql"))
        .build()
        .unwrap_or_else(|e| unreachable!("the example's configuration is valid: {e}"));
    let gate = ContextGate::new(config, Words);
    let history = (1..=8)
        .map(|i| format!("turn {i}: the user and the assistant discussed the quarterly report"))
        .collect();
    let nodes = vec![
        RetrievalNode::new(
            "SELECT region, SUM(total) AS revenue -- per region\nFROM sales\nGROUP BY region;",
        )
        .with_id("q1")
        .with_path("reports/revenue.sql"),
    ];
    let inbox = vec![InboxMessage::new("manage_budget", "compact_sql")];
    (gate, GateState::new(history, nodes), inbox)
}

fn main() -> Result<(), GateFailure> {
    let (gate, state, inbox) = scenario();
    match run(&gate, state, inbox, 3)? {
        LoopOutcome::Admitted { admitted, attempts } => {
            println!("admitted after {} summaries:\n", attempts - 1);
            println!("{}", admitted.context().join("\n\n"));
        }
        LoopOutcome::GaveUp {
            attempts, reason, ..
        } => {
            println!(
                "gave up after {attempts} attempts ({reason}); continuing without the new nodes"
            );
        }
        other => println!("{other:?}"),
    }
    Ok(())
}
