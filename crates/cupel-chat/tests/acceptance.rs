//! Issue 25's acceptance scenario: 41 OpenAI messages to 2,000 tokens, in
//! the handful of lines of `examples/trim_agent.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{Decision, Transcript, Trim, trim_transcript};
use serde_json::Value;

#[test]
fn the_41_message_agent_transcript_trims_to_2000_tokens() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_41.json"
    ))
    .unwrap();
    let doc = Transcript::parse(&text).unwrap();
    assert_eq!(doc.messages().len(), 41);
    let (window, out) = trim_transcript(&doc, &Trim::openai(2_000)).unwrap();

    // The fetch_logs group {#19 call, #20 log} holds a log of over 15,000
    // tokens (see count.rs), so it cannot fit in 2,000 and is the cut:
    // nothing older enters. #21 (assistant) would open the conversation, so
    // the start rule drops it. Window: the system prompt and #22..#40.
    let mut expected = vec![0];
    expected.extend(22..=40);
    assert_eq!(out.positions, expected);
    assert!(matches!(
        out.rows[19].decision,
        Decision::DoesNotFit { unit_len: 2, .. }
    ));
    assert!(
        out.rows[20]
            .to_string()
            .starts_with("#20 tool result for call_4 dropped with its call: the group needs ")
    );
    assert!(out.rows[21].decision.is_provider_rule());
    assert!(out.tokens.window <= 2_000);

    // The written document is the input's body with the kept messages, each
    // exactly as it came.
    let original: Value = serde_json::from_str(&text).unwrap();
    let written = window.to_value();
    assert_eq!(written["tools"], original["tools"]);
    assert_eq!(written["model"], original["model"]);
    let kept = written["messages"].as_array().unwrap();
    for (k, &p) in out.positions.iter().enumerate() {
        assert_eq!(kept[k], original["messages"][p], "message #{p}");
    }
}

#[test]
fn with_room_for_the_log_every_group_stays_whole() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_41.json"
    ))
    .unwrap();
    let doc = Transcript::parse(&text).unwrap();
    for max in [20_000, 28_000, 40_000] {
        let (_, out) = trim_transcript(&doc, &Trim::openai(max)).unwrap();
        let has = |p: usize| out.positions.contains(&p);
        // Tool groups: {6,7}, {12,13,14} (parallel), {19,20}.
        for group in [&[6, 7][..], &[12, 13, 14], &[19, 20]] {
            assert!(
                group.iter().all(|&p| has(p)) || group.iter().all(|&p| !has(p)),
                "max {max}: {group:?}"
            );
        }
        assert!(out.tokens.window <= max);
    }
    // 40,000 holds everything.
    let (w, out) = trim_transcript(&doc, &Trim::openai(40_000)).unwrap();
    assert_eq!(out.positions.len(), 41);
    assert_eq!(w.to_value(), serde_json::from_str::<Value>(&text).unwrap());
}
