//! Property tests over random transcripts: the window is always one the
//! provider accepts, within budget, and contiguous.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{ChatError, Decision, Granularity, Message, MessageCounter, Role, Trim, trim};
use proptest::prelude::*;
use serde_json::{Value, json};

struct Fixed;

impl MessageCounter for Fixed {
    fn count_message(&self, m: &Message) -> i64 {
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn count_request(&self, _tools: Option<&Value>) -> i64 {
        3
    }
    fn describe(&self) -> String {
        "fixed".into()
    }
}

#[derive(Debug, Clone)]
enum Op {
    User(i64),
    Assistant(i64),
    /// One assistant message with `results.len()` parallel calls, then the results.
    Tools(i64, Vec<i64>),
    OrphanResult(i64),
    UnansweredCall(i64),
    System(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1i64..60).prop_map(Op::User),
        4 => (1i64..60).prop_map(Op::Assistant),
        3 => (1i64..20, prop::collection::vec(1i64..200, 1..4)).prop_map(|(c, r)| Op::Tools(c, r)),
        1 => (1i64..30).prop_map(Op::OrphanResult),
        1 => (1i64..30).prop_map(Op::UnansweredCall),
        1 => (1i64..20).prop_map(Op::System),
    ]
}

fn build(ops: &[Op]) -> Vec<Message> {
    let mut v = Vec::new();
    let mut id = 0;
    let parse =
        |j: Value| cupel_chat::message_from_value(j, cupel_chat::Format::OpenAi, "m").unwrap();
    for o in ops {
        match o {
            Op::User(t) => v.push(parse(json!({"role": "user", "content": "u", "t": t}))),
            Op::Assistant(t) => v.push(parse(json!({"role": "assistant", "content": "a", "t": t}))),
            Op::System(t) => v.push(parse(json!({"role": "system", "content": "s", "t": t}))),
            Op::Tools(c, results) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        id += 1;
                        format!("call_{id}")
                    })
                    .collect();
                let calls: Vec<Value> = ids
                    .iter()
                    .map(|i| json!({"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}))
                    .collect();
                v.push(parse(
                    json!({"role": "assistant", "content": null, "tool_calls": calls, "t": c}),
                ));
                for (i, t) in ids.iter().zip(results) {
                    v.push(parse(
                        json!({"role": "tool", "tool_call_id": i, "content": "r", "t": t}),
                    ));
                }
            }
            Op::OrphanResult(t) => {
                id += 1;
                v.push(parse(json!({"role": "tool", "tool_call_id": format!("ghost_{id}"), "content": "r", "t": t})));
            }
            Op::UnansweredCall(t) => {
                id += 1;
                v.push(parse(json!({"role": "assistant", "content": null, "t": t, "tool_calls": [
                    {"id": format!("lost_{id}"), "type": "function", "function": {"name": "f", "arguments": "{}"}}]})));
            }
        }
    }
    v
}

fn granularity() -> impl Strategy<Value = Granularity> {
    prop_oneof![
        Just(Granularity::Message),
        Just(Granularity::Exchange),
        Just(Granularity::Turn)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn windows_are_valid_within_budget_and_contiguous(
        ops in prop::collection::vec(op(), 0..40),
        max in 1i64..800,
        g in granularity(),
    ) {
        let messages = build(&ops);
        let opts = Trim::openai(max).counter(Fixed).granularity(g);
        let out = match trim(&messages, &opts) {
            Ok(out) => out,
            Err(ChatError::NothingFits { .. } | ChatError::PinnedOverBudget { .. }) => return Ok(()),
            Err(ChatError::NoConversation { messages: m, orphans, provider_rules, budget }) => {
                // Refused only when every conversation message went for one
                // of the three reasons (the counts are taken separately).
                let conversation = messages.iter().filter(|x| !x.role.is_prompt()).count();
                prop_assert_eq!(m, conversation);
                prop_assert_eq!(orphans + provider_rules + budget, conversation);
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        };
        // A conversation in, a conversation out (providers refuse none).
        if messages.iter().any(|m| !m.role.is_prompt()) {
            prop_assert!(out.messages.iter().any(|m| !m.role.is_prompt()), "a window without conversation");
        }
        // Never over budget.
        prop_assert!(out.tokens.window <= max);
        prop_assert_eq!(out.rows.len(), messages.len());
        let kept = &out.messages;
        // Never an orphan: every kept call is answered in the window, every kept result's call is in it (before it).
        for (k, m) in kept.iter().enumerate() {
            for c in m.calls() {
                prop_assert!(kept[k + 1..].iter().any(|r| r.answered_ids().any(|a| a == c.id)), "unanswered {}", c.id);
            }
            for a in m.answered_ids() {
                prop_assert!(kept[..k].iter().any(|c| c.calls().any(|c| c.id == a)), "orphan result {}", a);
            }
        }
        // After the pinned prompts the window starts with a user message (not a tool result).
        if let Some(first) = kept.iter().find(|m| !m.role.is_prompt()) {
            prop_assert_eq!(&first.role, &Role::User);
            prop_assert!(!first.is_tool_result());
        }
        // Contiguous: every message dropped for the budget (or to start on a user
        // message) is older than every kept conversation message.
        let oldest_kept = out.rows.iter().filter(|r| r.decision == Decision::Kept).map(|r| r.position).min();
        if let Some(oldest) = oldest_kept {
            for r in &out.rows {
                if matches!(r.decision, Decision::DoesNotFit { .. } | Decision::OlderThanCut { .. } | Decision::StartRule { .. }) {
                    prop_assert!(r.position < oldest, "{} dropped inside the window starting at #{}", r, oldest);
                }
            }
        }
        // Every pinned prompt is kept; the report covers every message.
        prop_assert!(out.rows.iter().all(|r| !r.role().is_prompt() || r.decision == Decision::Pinned));
        prop_assert_eq!(out.report.total_candidates, messages.len());
        prop_assert_eq!(out.report.included.len(), out.positions.len());
    }

    #[test]
    fn a_larger_budget_never_keeps_fewer_messages_newest_first(
        ops in prop::collection::vec(op(), 0..30),
        max in 1i64..600,
        extra in 0i64..300,
    ) {
        let messages = build(&ops);
        let a = trim(&messages, &Trim::openai(max).counter(Fixed));
        let b = trim(&messages, &Trim::openai(max + extra).counter(Fixed));
        if let (Ok(a), Ok(b)) = (a, b) {
            // The smaller window is a suffix of the larger one (after the pinned prompts).
            // (The pinned task, when there is one, stays at any budget.)
            let conv = |p: &[usize], rows: &[cupel_chat::MessageRow<'_>]| p
                .iter()
                .copied()
                .filter(|&i| !rows[i].decision.is_pinned())
                .collect::<Vec<_>>();
            let (sa, sb) = (conv(&a.positions, &a.rows), conv(&b.positions, &b.rows));
            prop_assert!(sa.len() <= sb.len());
            prop_assert_eq!(&sb[sb.len() - sa.len()..], &sa[..]);
        }
    }
}
