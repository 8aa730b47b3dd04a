//! Runs the `agent_budget` example and checks its story, number by number.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/agent_budget.rs"]
mod agent_budget;

use cupel_core::{BudgetDimension, BudgetPhase, TokenUsage};

#[test]
fn the_agent_loop_stops_at_the_output_ceiling() {
    let o = agent_budget::run_agent().unwrap();

    // Subagent (child cap 500 input; four 100-token articles; output reserve
    // 120, model answers 80):
    //   turn 1: window target min(900, 500) = 500 -> 4 articles = 400 in, 80 out
    //   turn 2: 500 - 400 = 100 left -> 1 article = 100 in (fits exactly), 80 out
    //   turn 3: 500 >= 500 -> pre-flight fails on the child's own cap.
    assert_eq!(o.subagent_turns, 2);
    let sub = &o.subagent_stopped_by;
    assert_eq!(
        (sub.phase(), sub.dimension(), sub.scope_depth(), sub.limit()),
        (BudgetPhase::Preflight, BudgetDimension::Input, 1, Some(500))
    );

    // Orchestrator, output ceiling 600, 160 used by the subagent; per turn the
    // model writes 80 (reserve 120) and the tool 45 (reserve 60):
    //   after turns 1..3: 160 + 3 * 125 = 535 out
    //   turn 4: 65 left -> model capped at 65 -> 600; the tool's reservation
    //   then meets the exhausted output ceiling.
    assert_eq!(o.turns, 4);
    let stop = &o.stopped_by;
    assert_eq!(
        (stop.phase(), stop.dimension(), stop.scope_depth()),
        (BudgetPhase::ToolExecution, BudgetDimension::Output, 0)
    );
    assert_eq!(stop.remaining(), Some(0));
    // Input: subagent 500, then the windows (history = 30 system + 40 question
    // + 80 summary, growing by the previous turn's 80 answer + 45 tool result):
    //   150, 275, 400, 525 -> 500 + 1350 = 1850.
    assert_eq!(o.usage, TokenUsage::new(1_850, 600).unwrap());
}
