//! Runs the `agent_budget` example and checks its story, number by number.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/agent_budget.rs"]
mod agent_budget;

use cupel_run::{BudgetDimension, BudgetPhase, TokenUsage};

// The numbers, by hand. Run: 2000 input / 600 output, 60 s; pipeline max
// 1024, target 900, output reserve 120 (so the clamp starts below 904 input
// tokens left). The model answers 80 tokens (or its cap), the search tool
// writes 45 (projected 60). The subagent's scope caps input at 500; its
// articles are four of 100 tokens. Each round is 4 s.
//
// round 1: agent window 30 system + 40 question = 70 -> 70 in, 80 out; tool 45.
//          summariser: target min(900, 500) = 500 -> 4 articles = 400 in, 80 out.
//          run: 70 + 400 = 470 in, 80 + 45 + 80 = 205 out; 1530 / 395 left; 56 s.
// round 2: history 70 + answer 80 + tool 45 + summary 80 = 275 -> 275 in, 80 out; tool 45.
//          summariser: 500 - 400 = 100 left -> 1 article = 100 in, 80 out.
//          run: 845 in, 410 out; 1155 / 190 left; 52 s.
// round 3: history 275 + 80 + 45 + 80 = 480 -> 480 in, 80 out; tool 45.
//          summariser: 500 >= 500 -> pre-flight fails on its own cap.
//          run: 1325 in, 535 out; 675 / 65 left; 48 s.
// round 4: 675 < 904 left: clamp to max 795, target 675; history 480 + 125 =
//          605 fits -> 605 in; output cap min(120, 65) = 65 -> 600 out; the
//          tool's reservation meets the exhausted output ceiling.
//
// Within a round the two threads race, but no request depends on the
// other's in-flight tokens (the agent never clamps before round 4, output
// never binds before round 4), so these numbers hold for every interleaving.
#[test]
fn the_agent_loop_and_its_concurrent_subagent_stop_where_the_numbers_say() {
    let o = agent_budget::run_agent().unwrap();

    assert_eq!(o.subagent_turns, 2);
    let sub = o.subagent_stopped_by.as_ref().unwrap();
    assert_eq!(
        (sub.phase(), sub.dimension(), sub.scope_depth(), sub.limit()),
        (BudgetPhase::Preflight, BudgetDimension::Input, 1, Some(500))
    );
    assert_eq!(sub.scope_label(), Some("summariser"));
    assert_eq!(sub.usage(), TokenUsage::new(500, 160).unwrap());

    assert_eq!(o.turns, 4);
    let stop = &o.stopped_by;
    assert_eq!(
        (stop.phase(), stop.dimension(), stop.scope_depth()),
        (BudgetPhase::ToolExecution, BudgetDimension::Output, 0)
    );
    assert_eq!(stop.remaining(), Some(0));
    // 470 + 275 + 100 + 480 + 605 = 1930 in; 600 out.
    assert_eq!(o.usage, TokenUsage::new(1_930, 600).unwrap());

    assert_eq!(
        o.log,
        [
            "round 1: agent input 70, output 80; search tool input 0, output 45",
            "round 1: summariser input 400, output 80",
            "round 1: run used input 470, output 205; left input 1530, output 395, 56000 ms",
            "round 2: agent input 275, output 80; search tool input 0, output 45",
            "round 2: summariser input 100, output 80",
            "round 2: run used input 845, output 410; left input 1155, output 190, 52000 ms",
            "round 3: agent input 480, output 80; search tool input 0, output 45",
            "round 3: summariser stopped after 2 turns: run budget (child scope \"summariser\", \
             depth 1) exceeded at preflight: input tokens used 500 + reserved 0 meet or exceed \
             the limit of 500 (remaining 0)",
            "round 3: run used input 1325, output 535; left input 675, output 65, 48000 ms",
            "round 4: agent input 605, output 65; search tool refused",
        ]
    );
}

#[test]
fn the_example_is_the_same_on_every_run() {
    // The threads interleave differently from run to run; the outcome may not.
    let first = agent_budget::run_agent().unwrap();
    for _ in 0..20 {
        let again = agent_budget::run_agent().unwrap();
        assert_eq!(again.log, first.log);
        assert_eq!(again.usage, first.usage);
        assert_eq!(again.stopped_by, first.stopped_by);
    }
}
