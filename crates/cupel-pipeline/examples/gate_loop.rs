//! The compaction loop around the context gate.
//!
//! gate -> Over -> the caller summarises its own context -> gate again, with a
//! loop guard (a maximum number of attempts) so the loop always ends. The
//! summariser here is a stand-in that keeps the first half of the words; a
//! real one would call a model. Token counts come from a word-counting
//! stand-in too; production code would use `TiktokenCounter` (feature
//! `tiktoken`).
//!
//! Run it with `cargo run -p cupel-rs-pipeline --example gate_loop`.

use cupel_core::{CodeLanguage, TokenCounter};
use cupel_pipeline::{
    CompactionRule, ContextGate, GateConfig, GateOutcome, GateState, InboxMessage, RetrievalNode,
};

/// Counts whitespace-separated words (a stand-in for a real tokenizer).
pub struct Words;

impl TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        i64::try_from(text.split_whitespace().count()).unwrap_or(i64::MAX)
    }
}

/// How the loop ended.
#[derive(Debug)]
pub enum Finished {
    /// The batch was admitted after `summaries` rounds of summarising.
    Admitted {
        /// How many times the context was summarised.
        summaries: usize,
        /// The final context.
        context: Vec<String>,
    },
    /// The loop guard stopped the loop: carry on without the new nodes.
    GaveUp {
        /// Attempts made (gate calls).
        attempts: usize,
        /// The state exactly as the last `Over` handed it back: the context
        /// after `attempts - 1` summaries (no summary is made once the guard
        /// has decided to stop) and the untouched buffer.
        state: GateState,
        /// The demand messages still pending.
        inbox: Vec<InboxMessage>,
    },
}

/// Stand-in summariser: the whole context becomes one block holding the
/// first half of its words.
pub fn summarise(context: &[String]) -> Vec<String> {
    let words: Vec<&str> = context.iter().flat_map(|b| b.split_whitespace()).collect();
    let keep = words.len() / 2;
    vec![format!("Summary: {}", words[..keep].join(" "))]
}

/// Runs the loop with at most `max_attempts` gate calls.
///
/// # Errors
/// A pipeline misconfiguration (the buffer alone cannot fit).
pub fn run(
    gate: &ContextGate,
    mut state: GateState,
    mut inbox: Vec<InboxMessage>,
    max_attempts: usize,
) -> Result<Finished, cupel_core::CupelError> {
    let mut attempts = 0;
    while attempts < max_attempts {
        attempts += 1;
        match gate.admit(state, &inbox)? {
            GateOutcome::Admitted(admitted) => {
                return Ok(Finished::Admitted {
                    summaries: attempts - 1,
                    context: admitted.into_context(),
                });
            }
            GateOutcome::Over(over) => {
                let (untouched, requeue) = over.into_parts();
                // Demand messages go back to the inbox so they hold on the retry.
                inbox = requeue;
                if attempts == max_attempts {
                    // The guard stops here: no summary that nobody would use.
                    state = untouched;
                    break;
                }
                state = GateState::new(summarise(&untouched.context), untouched.nodes);
            }
        }
    }
    Ok(Finished::GaveUp {
        attempts,
        state,
        inbox,
    })
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

fn main() -> Result<(), cupel_core::CupelError> {
    let (gate, state, inbox) = scenario();
    match run(&gate, state, inbox, 3)? {
        Finished::Admitted { summaries, context } => {
            println!("admitted after {summaries} summaries:\n");
            println!("{}", context.join("\n\n"));
        }
        Finished::GaveUp { attempts, .. } => {
            println!("gave up after {attempts} attempts; continuing without the new nodes");
        }
    }
    Ok(())
}
