//! Runs the `gate_loop` example's loop and checks how it ends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/gate_loop.rs"]
#[allow(dead_code, unreachable_pub)]
mod gate_loop;

use cupel_pipeline::InboxMessage;
use gate_loop::{Finished, run, scenario};

#[test]
fn the_loop_summarises_until_the_batch_fits() {
    // Words: the history is 8 blocks × 11 words = 88. The SQL node block is
    // 8 + 2 (id) + 2 (path) + 13 words of text = 25 raw; the demand compacts
    // away the 3 comment words (22); the divider adds 2: the batch is 24.
    // Attempt 1: 88 + 24 > 60 -> over; summary keeps 44 words + "Summary:" = 45.
    // Attempt 2: 45 + 24 = 69 > 60 -> over; summary of 45 keeps 22 + 1 = 23.
    // Attempt 3: 23 + 24 = 47 <= 60 -> admitted after 2 summaries.
    let (gate, state, inbox) = scenario();
    match run(&gate, state, inbox, 5).unwrap() {
        Finished::Admitted { summaries, context } => {
            assert_eq!(summaries, 2);
            assert_eq!(context.len(), 3);
            assert!(context[0].starts_with("Summary: "));
            assert_eq!(context[1], "<<<New content");
            assert!(context[2].contains("compact: true"));
            assert!(!context[2].contains("per region"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_loop_guard_ends_a_loop_that_cannot_finish() {
    let (gate, state, inbox) = scenario();
    let nodes = state.nodes.clone();
    match run(&gate, state, inbox, 2).unwrap() {
        Finished::GaveUp {
            attempts,
            state,
            inbox,
        } => {
            assert_eq!(attempts, 2);
            // The context is what the second Over handed back: one summary
            // (the first 44 of 88 words: turns 1 to 4, 11 words each), not a
            // second one made after the guard had decided to stop.
            let turns: Vec<String> = (1..=4)
                .map(|i| {
                    format!("turn {i}: the user and the assistant discussed the quarterly report")
                })
                .collect();
            assert_eq!(state.context, [format!("Summary: {}", turns.join(" "))]);
            // The buffer is still the original one, and the demand is still pending.
            assert_eq!(state.nodes, nodes);
            assert_eq!(inbox, [InboxMessage::new("manage_budget", "compact_sql")]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_single_attempt_gives_back_the_original_context() {
    let (gate, state, inbox) = scenario();
    let original = state.clone();
    match run(&gate, state, inbox, 1).unwrap() {
        Finished::GaveUp {
            attempts, state, ..
        } => {
            assert_eq!(attempts, 1);
            assert_eq!(state, original);
        }
        other => panic!("{other:?}"),
    }
    // No attempt at all: nothing is called and nothing changes.
    let (gate, state, inbox) = scenario();
    let original = state.clone();
    match run(&gate, state, inbox.clone(), 0).unwrap() {
        Finished::GaveUp {
            attempts,
            state,
            inbox: left,
        } => {
            assert_eq!(attempts, 0);
            assert_eq!(state, original);
            assert_eq!(left, inbox);
        }
        other => panic!("{other:?}"),
    }
}
