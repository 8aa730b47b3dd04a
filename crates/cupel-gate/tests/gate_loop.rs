//! The retry loop (`ContextGate::admit_with_retry`), driven by the
//! `gate_loop` example's caller-supplied summariser, and its loop guard
//! (issue 28 points 5 and 6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/gate_loop.rs"]
#[allow(dead_code, unreachable_pub)]
mod gate_loop;

use cupel_core::CupelError;
use cupel_gate::{
    ContextCompactor, GateState, GaveUp, InboxMessage, LoopGuard, LoopOutcome, SummarizeWith,
};
use gate_loop::{run, scenario};

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
        LoopOutcome::Admitted { admitted, attempts } => {
            assert_eq!(attempts, 3);
            let context = admitted.context();
            assert_eq!(context.len(), 3);
            assert!(context[0].starts_with("Summary: "));
            assert_eq!(context[1], "<<<New content");
            assert!(context[2].contains("compact: true"));
            assert!(!context[2].contains("per region"));
            assert_eq!(admitted.report().total_tokens, 47);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_loop_guard_ends_a_loop_that_cannot_finish() {
    let (gate, state, inbox) = scenario();
    let nodes = state.nodes.clone();
    match run(&gate, state, inbox, 2).unwrap() {
        LoopOutcome::GaveUp {
            over,
            inbox,
            attempts,
            reason,
        } => {
            assert_eq!(attempts, 2);
            assert_eq!(reason, GaveUp::MaxAttempts { max_attempts: 2 });
            // The context is what the second Over handed back: one summary
            // (the first 44 of 88 words: turns 1 to 4, 11 words each), not a
            // second one made after the guard had decided to stop.
            let turns: Vec<String> = (1..=4)
                .map(|i| {
                    format!("turn {i}: the user and the assistant discussed the quarterly report")
                })
                .collect();
            assert_eq!(
                over.state().context,
                [format!("Summary: {}", turns.join(" "))]
            );
            // The buffer is still the original one, and the demand is still pending.
            assert_eq!(over.state().nodes, nodes);
            assert_eq!(inbox, [InboxMessage::new("manage_budget", "compact_sql")]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_single_attempt_gives_back_the_original_context_and_zero_is_refused() {
    let (gate, state, inbox) = scenario();
    let original = state.clone();
    match run(&gate, state, inbox, 1).unwrap() {
        LoopOutcome::GaveUp { over, attempts, .. } => {
            assert_eq!(attempts, 1);
            assert_eq!(*over.state(), original);
        }
        other => panic!("{other:?}"),
    }
    // The seed's guard must let the gate be asked at least once.
    let (gate, state, inbox) = scenario();
    assert!(matches!(
        run(&gate, state, inbox, 0),
        Err(cupel_gate::GateFailure::Core(CupelError::InvalidArgument(m))) if m.contains("max_attempts must be >= 1 (got 0)")
    ));
}

/// A compaction that does not shrink the context ends the loop at once,
/// whatever the guard allows: another round would not do better.
#[test]
fn a_compaction_that_does_not_shrink_stops_the_loop() {
    // Keeps the context as it is: 88 words before, 88 after.
    let same = SummarizeWith(|ctx: &[String]| Ok(ctx.to_vec()));
    // Adds a block: 88 before, 88 + 2 ("note: x") = 90 after.
    let grows = SummarizeWith(|ctx: &[String]| {
        let mut v = ctx.to_vec();
        v.push("note: x".to_string());
        Ok(v)
    });
    let cases: [(&dyn ContextCompactor, i64); 2] = [(&same, 88), (&grows, 90)];
    for (compactor, after) in cases {
        let (gate, state, inbox) = scenario();
        let original = state.clone();
        let guard = LoopGuard::new(10).unwrap();
        match gate
            .admit_with_retry(state, inbox, compactor, guard)
            .unwrap()
        {
            LoopOutcome::GaveUp {
                over,
                attempts,
                reason,
                inbox,
            } => {
                assert_eq!(attempts, 1);
                assert_eq!(reason, GaveUp::NoProgress { before: 88, after });
                // The useless compaction is dropped: the state is the Over's.
                assert_eq!(*over.state(), original);
                assert_eq!(inbox.len(), 1);
                assert_eq!(
                    reason.to_string(),
                    format!(
                        "compaction did not shrink the context (88 tokens before, {after} after)"
                    )
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The running-summary hook (spec/22-variants.md, "Summaries") in the loop.
#[test]
fn a_running_summary_folds_the_oldest_blocks_until_the_batch_fits() {
    use cupel_gate::RunningSummary;
    let fold = RunningSummary::new(2, |previous: Option<&str>, old: &[String]| {
        assert!(previous.is_none(), "one compaction is enough here");
        Ok::<_, CupelError>(format!("{} turns", old.len()))
    });
    let (gate, state, inbox) = scenario();
    // Attempt 1: 88 + 24 > 60 -> over; the 6 oldest blocks fold into
    // "[summary] 6 turns" (3 words), the newest 2 stay (22): 25.
    // Attempt 2: 25 + 24 = 49 <= 60 -> admitted.
    let guard = LoopGuard::new(5).unwrap();
    match gate.admit_with_retry(state, inbox, &fold, guard).unwrap() {
        LoopOutcome::Admitted { admitted, attempts } => {
            assert_eq!(attempts, 2);
            let context = admitted.context();
            assert_eq!(context[0], "[summary] 6 turns");
            assert!(context[1].starts_with("turn 7:"));
            assert!(context[2].starts_with("turn 8:"));
            assert_eq!(admitted.report().total_tokens, 49);
        }
        other => panic!("{other:?}"),
    }
}

/// A compactor's own failure ends the loop with its error and the state.
#[test]
fn a_failing_compactor_hands_the_state_back() {
    struct ModelDown;
    impl ContextCompactor for ModelDown {
        fn compact_context(
            &self,
            _context: &[String],
            pending: &GateState,
        ) -> Result<Vec<String>, CupelError> {
            Err(CupelError::InvalidArgument(format!(
                "summariser unavailable ({} nodes waiting)",
                pending.nodes.len()
            )))
        }
    }
    let (gate, state, inbox) = scenario();
    let original = state.clone();
    let err = gate
        .admit_with_retry(state, inbox, &ModelDown, LoopGuard::new(3).unwrap())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: summariser unavailable (1 nodes waiting)"
    );
    assert_eq!(err.into_state(), original);
}
