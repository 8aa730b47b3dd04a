//! Properties of windows over the shapes real agents produce (issue 49):
//! generated one-task agent loops (OpenAI) and conversations whose user
//! turns carry tool results and new text (Anthropic). Every window is
//! valid for its provider, holds the budget, keeps the pinned task, and
//! rewrites at most the one message at its front; every other kept message
//! is written byte for byte as read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;

use cupel_chat::{
    ChatError, Decision, Granularity, Message, MessageCounter, Part, Role, Transcript, Trim, trim,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Tokens read off the message: its own `t` plus each part's `t`.
struct Marked;

impl MessageCounter for Marked {
    fn count_message(&self, m: &Message) -> i64 {
        let t = |v: Option<&Value>| v.and_then(Value::as_i64).unwrap_or(0);
        let parts: i64 = m
            .content
            .parts()
            .iter()
            .map(|p| match p {
                Part::Text { extra, .. } => t(extra.get("t")),
                Part::ToolCall(c) => t(c.extra.get("t")),
                Part::ToolResult(r) => t(r.extra.get("t")),
                _ => 0,
            })
            .sum();
        t(m.extra.get("t")) + parts
    }
    fn count_request(&self, _tools: Option<&Value>) -> i64 {
        3
    }
    fn describe(&self) -> String {
        "marked".into()
    }
}

/// One step of an agent: a call's tokens, its parallel results' tokens,
/// and (Anthropic) the tokens of the text the user adds after the results.
type Step = (i64, Vec<i64>, Option<i64>);

fn step() -> impl Strategy<Value = Step> {
    (
        1i64..20,
        prop::collection::vec(1i64..80, 1..3),
        prop::option::of(1i64..30),
    )
}

fn granularity() -> impl Strategy<Value = Granularity> {
    prop_oneof![
        Just(Granularity::Message),
        Just(Granularity::Exchange),
        Just(Granularity::Turn)
    ]
}

fn openai_loop(system: i64, task: i64, steps: &[Step], answer: Option<i64>) -> String {
    let mut m = vec![
        json!({"role": "system", "content": "You fix bugs.", "t": system}),
        json!({"role": "user", "content": "Fix it.", "t": task}),
    ];
    let mut id = 0;
    for (call, results, _) in steps {
        let ids: Vec<String> = results
            .iter()
            .map(|_| {
                id += 1;
                format!("call_{id}")
            })
            .collect();
        let calls: Vec<Value> = ids
            .iter()
            .map(|i| json!({"id": i, "type": "function", "function": {"name": "sh", "arguments": "{}"}}))
            .collect();
        m.push(json!({"role": "assistant", "content": null, "tool_calls": calls, "t": call}));
        for (i, r) in ids.iter().zip(results) {
            m.push(json!({"role": "tool", "tool_call_id": i, "content": "out", "t": r}));
        }
    }
    if let Some(a) = answer {
        m.push(json!({"role": "assistant", "content": "Done.", "t": a}));
    }
    Value::Array(m).to_string()
}

fn anthropic_mixed(system: i64, first: i64, steps: &[Step], answer: Option<i64>) -> String {
    let mut m = vec![json!({"role": "user", "t": 1,
        "content": [{"type": "text", "text": "Help me.", "t": first}]})];
    let mut id = 0;
    for (call, results, text) in steps {
        let ids: Vec<String> = results
            .iter()
            .map(|_| {
                id += 1;
                format!("toolu_{id}")
            })
            .collect();
        let uses: Vec<Value> = ids
            .iter()
            .map(|i| json!({"type": "tool_use", "id": i, "name": "f", "input": {}, "t": call}))
            .collect();
        m.push(json!({"role": "assistant", "t": 1, "content": uses}));
        let mut blocks: Vec<Value> = ids
            .iter()
            .zip(results)
            .map(|(i, r)| json!({"type": "tool_result", "tool_use_id": i, "content": "ok", "t": r}))
            .collect();
        if let Some(t) = text {
            blocks.push(json!({"type": "text", "text": "And next?", "t": t}));
        }
        m.push(json!({"role": "user", "t": 1, "content": blocks}));
    }
    if let Some(a) = answer {
        m.push(json!({"role": "assistant", "t": 1, "content": [{"type": "text", "text": "Done.", "t": a}]}));
    }
    json!({"model": "claude", "max_tokens": 100, "system": [{"type": "text", "text": "S", "t": system}],
           "messages": m})
    .to_string()
}

/// Tool calls and results in the window pair up as the provider requires:
/// OpenAI, every call answered after it and every result's call before
/// it; Anthropic, every tool_use answered in the very next message, whose
/// tool_result blocks answer exactly the calls of the message before it.
fn assert_valid(kept: &[&Message], anthropic: bool) -> Result<(), TestCaseError> {
    for (k, m) in kept.iter().enumerate() {
        let calls: BTreeSet<&str> = m.calls().map(|c| c.id.as_str()).collect();
        if anthropic {
            let next: BTreeSet<&str> = kept
                .get(k + 1)
                .map(|n| n.answered_ids().collect())
                .unwrap_or_default();
            prop_assert_eq!(
                &calls,
                &next,
                "#{} calls not answered by the next message",
                k
            );
            let answers: BTreeSet<&str> = m.answered_ids().collect();
            if !answers.is_empty() {
                let prev: BTreeSet<&str> = k
                    .checked_sub(1)
                    .map(|p| kept[p].calls().map(|c| c.id.as_str()).collect())
                    .unwrap_or_default();
                prop_assert_eq!(&answers, &prev, "#{} answers calls not just before", k);
                // tool_result blocks come first.
                let parts = m.content.parts();
                let first_other = parts
                    .iter()
                    .position(|p| !matches!(p, Part::ToolResult(_)))
                    .unwrap_or(parts.len());
                prop_assert!(
                    parts[first_other..]
                        .iter()
                        .all(|p| !matches!(p, Part::ToolResult(_)))
                );
            }
        } else {
            for c in &calls {
                prop_assert!(
                    kept[k + 1..]
                        .iter()
                        .any(|r| r.answered_ids().any(|a| a == *c))
                );
            }
            for a in m.answered_ids() {
                prop_assert!(kept[..k].iter().any(|c| c.calls().any(|c| c.id == a)));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn one_task_loops_keep_the_task_and_valid_newest_traffic(
        system in 1i64..20,
        task in 1i64..40,
        steps in prop::collection::vec(step(), 1..12),
        answer in prop::option::of(1i64..30),
        max in 1i64..1_500,
        g in granularity(),
    ) {
        let text = openai_loop(system, task, &steps, answer);
        let doc = Transcript::parse(&text).unwrap();
        let opts = Trim::openai(max).counter(Marked).granularity(g);
        let out = match trim(doc.messages(), &opts) {
            Ok(out) => out,
            // Only the pins and the overhead can be over the budget: with
            // the task pinned there is always a window.
            Err(ChatError::PinnedOverBudget { total, .. }) => {
                prop_assert!(total > max);
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        prop_assert_eq!(&out.positions[..2], &[0, 1]);
        prop_assert_eq!(&out.rows[1].decision, &Decision::PinnedTask { automatic: true });
        prop_assert!(out.tokens.window <= max);
        assert_valid(&out.messages, false)?;
        // Contiguous after the task, ending with the last message, or
        // nothing after the task at all.
        let rest = &out.positions[2..];
        prop_assert!(rest.windows(2).all(|w| w[1] == w[0] + 1));
        if let Some(&last) = rest.last() {
            prop_assert_eq!(last, doc.messages().len() - 1);
        }
        prop_assert!(out.shortened.is_empty());
        // The loop is all the task's tail, where every granularity moves
        // single messages and tool groups: the message-granularity window.
        let by_message = trim(doc.messages(), &opts.clone().granularity(Granularity::Message));
        prop_assert_eq!(by_message.map(|m| m.positions).ok(), Some(out.positions.clone()));
        // Written byte for byte.
        let back = Transcript::parse(&doc.window_json(&out)).unwrap();
        for (k, &p) in out.positions.iter().enumerate() {
            prop_assert_eq!(back.message_json(k), doc.message_json(p));
        }
    }

    #[test]
    fn mixed_turns_rewrite_only_the_front_message(
        system in 1i64..20,
        first in 1i64..30,
        steps in prop::collection::vec(step(), 1..12),
        answer in prop::option::of(1i64..30),
        max in 1i64..1_500,
        g in granularity(),
    ) {
        let text = anthropic_mixed(system, first, &steps, answer);
        let doc = Transcript::parse(&text).unwrap();
        let opts = Trim::anthropic(max).counter(Marked).granularity(g);
        let out = match trim(doc.messages(), &opts) {
            Ok(out) => out,
            Err(
                ChatError::PinnedOverBudget { .. }
                | ChatError::NothingFits { .. }
                | ChatError::NoConversation { .. },
            ) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        prop_assert!(out.tokens.window <= max);
        let sent = out.cloned_messages();
        let kept: Vec<&Message> = sent.iter().collect();
        assert_valid(&kept, true)?;
        // After the system prompt: a user message that answers nothing.
        prop_assert_eq!(&kept[1].role, &Role::User);
        prop_assert!(kept[1].answered_ids().next().is_none());
        // At most one message rewritten: the window's first after the
        // system prompt, a mixed turn sent as its text alone.
        prop_assert!(out.shortened.len() <= 1);
        if let Some((&p, form)) = out.shortened.iter().next() {
            prop_assert_eq!(p, out.positions[1]);
            prop_assert!(doc.messages()[p].is_mixed_turn());
            prop_assert!(form.answered_ids().next().is_none());
        }
        // Contiguous from the front to the last message (after the task,
        // when the only user message is pinned as one: then nothing else
        // may fit).
        let conv: Vec<usize> = out
            .positions
            .iter()
            .copied()
            .filter(|&p| !out.rows[p].decision.is_pinned())
            .collect();
        prop_assert!(conv.windows(2).all(|w| w[1] == w[0] + 1));
        let task = matches!(out.rows[1].decision, Decision::PinnedTask { .. });
        prop_assert!(task || !conv.is_empty());
        if let Some(&last) = conv.last() {
            prop_assert_eq!(last, doc.messages().len() - 1);
        }
        // Every other kept message is written byte for byte.
        let back = Transcript::parse(&doc.window_json(&out)).unwrap();
        prop_assert_eq!(back.messages(), &sent[..]);
        for (k, &p) in out.positions.iter().enumerate() {
            if !out.shortened.contains_key(&p) {
                prop_assert_eq!(back.message_json(k), doc.message_json(p));
            }
        }
    }
}

// OpenAI Responses and Gemini (issue 53): generated conversations of
// exchanges with tool steps; every window is valid for its provider.

/// One exchange: the user's tokens, its tool steps (with whether a
/// reasoning item comes first), and the answer's tokens.
type Exchange = (i64, Vec<(Step, bool)>, i64);

fn exchange() -> impl Strategy<Value = Exchange> {
    (
        1i64..30,
        prop::collection::vec((step(), any::<bool>()), 0..4),
        1i64..30,
    )
}

fn responses_doc(exchanges: &[Exchange], reasoning_at_end: bool) -> String {
    let mut items = vec![];
    let mut id = 0;
    for (user, steps, answer) in exchanges {
        items.push(json!({"role": "user", "content": "q", "t": user}));
        for ((call, results, _), reasoning) in steps {
            if *reasoning {
                items.push(
                    json!({"type": "reasoning", "summary": [], "encrypted_content": "x", "t": 2}),
                );
            }
            let ids: Vec<String> = results
                .iter()
                .map(|_| {
                    id += 1;
                    format!("call_{id}")
                })
                .collect();
            for i in &ids {
                items.push(json!({"type": "function_call", "call_id": i, "name": "sh", "arguments": "{}", "t": call}));
            }
            for (i, r) in ids.iter().zip(results) {
                items.push(
                    json!({"type": "function_call_output", "call_id": i, "output": "ok", "t": r}),
                );
            }
        }
        items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}], "t": answer}));
    }
    if reasoning_at_end {
        items.push(json!({"type": "reasoning", "summary": [], "t": 1}));
    }
    serde_json::to_string_pretty(&json!({"instructions": "Be brief.", "input": items})).unwrap()
}

fn gemini_doc(exchanges: &[Exchange], broken: bool) -> String {
    let mut contents = vec![];
    for (k, (user, steps, answer)) in exchanges.iter().enumerate() {
        contents.push(json!({"role": "user", "parts": [{"text": "q", "t": user}]}));
        for (s, ((call, results, _), _)) in steps.iter().enumerate() {
            let calls: Vec<Value> = results
                .iter()
                .enumerate()
                .map(|(i, _)| json!({"functionCall": {"name": format!("f{i}"), "args": {}}, "thoughtSignature": "c2ln", "t": call}))
                .collect();
            // A broken step (the first of the first exchange): one response too few.
            let skip = usize::from(broken && k == 0 && s == 0 && results.len() > 1);
            let responses: Vec<Value> = results
                .iter()
                .enumerate()
                .skip(skip)
                .map(|(i, r)| json!({"functionResponse": {"name": format!("f{i}"), "response": {"ok": true}}, "t": r}))
                .collect();
            contents.push(json!({"role": "model", "parts": calls}));
            // A broken step of the second exchange: no response turn at all,
            // which leaves two user turns together once the call is dropped.
            if !(broken && k == 1 && s == 0) {
                contents.push(json!({"role": "user", "parts": responses}));
            }
        }
        contents.push(json!({"role": "model", "parts": [{"text": "a", "t": answer}]}));
    }
    serde_json::to_string_pretty(&json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": contents,
        "generationConfig": {"temperature": 0.5}
    }))
    .unwrap()
}

/// What every trim of a generated document must give: within the budget,
/// no orphan, a valid start, each kept message written byte for byte.
fn check_window(
    doc: &Transcript,
    out: &cupel_chat::Trimmed<'_>,
    max: i64,
    strict: bool,
) -> Result<(), TestCaseError> {
    prop_assert!(out.tokens.window <= max);
    assert_valid(&out.messages, strict)?;
    if let Some(first) = out.messages.iter().find(|m| m.role != Role::System) {
        prop_assert_eq!(&first.role, &Role::User);
        prop_assert!(!first.is_tool_result());
    }
    prop_assert!(out.shortened.is_empty());
    let text = doc.window_json(out);
    let back = Transcript::parse(&text).unwrap();
    prop_assert_eq!(back.format(), doc.format());
    for (k, &p) in out.positions.iter().enumerate() {
        prop_assert_eq!(back.message_json(k), doc.message_json(p));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn responses_windows_keep_units_whole(
        exchanges in prop::collection::vec(exchange(), 1..6),
        reasoning_at_end in any::<bool>(),
        max in 1i64..1_500,
        g in granularity(),
    ) {
        let text = responses_doc(&exchanges, reasoning_at_end);
        let doc = Transcript::parse(&text).unwrap();
        prop_assert_eq!(doc.to_json(), text.clone());
        let opts = Trim::new(cupel_chat::Format::Responses, max).counter(Marked).granularity(g);
        let out = match trim(doc.messages(), &opts) {
            Ok(out) => out,
            Err(ChatError::PinnedOverBudget { .. } | ChatError::NothingFits { .. } | ChatError::NoConversation { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        check_window(&doc, &out, max, false)?;
        // A kept reasoning item is followed by the item that followed it.
        let m = doc.messages();
        for &p in &out.positions {
            if m[p].role == Role::Other("reasoning".into()) {
                prop_assert!(out.positions.contains(&(p + 1)), "reasoning #{} kept without #{}", p, p + 1);
            }
        }
        if reasoning_at_end {
            prop_assert!(!out.positions.contains(&(m.len() - 1)));
        }
    }

    #[test]
    fn gemini_windows_keep_call_turns_with_their_responses(
        exchanges in prop::collection::vec(exchange(), 1..6),
        broken in any::<bool>(),
        max in 1i64..1_500,
        g in granularity(),
    ) {
        let text = gemini_doc(&exchanges, broken);
        let doc = Transcript::parse(&text).unwrap();
        prop_assert_eq!(doc.to_json(), text.clone());
        let opts = Trim::new(cupel_chat::Format::Gemini, max).counter(Marked).granularity(g);
        let out = match trim(doc.messages(), &opts) {
            Ok(out) => out,
            Err(ChatError::PinnedOverBudget { .. } | ChatError::NothingFits { .. } | ChatError::NoConversation { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        check_window(&doc, &out, max, true)?;
        // Turns alternate after the system instruction, and Cupel's call
        // names are never written.
        let roles: Vec<&Role> = out.messages.iter().map(|m| &m.role).filter(|r| **r != Role::System).collect();
        prop_assert!(roles.windows(2).all(|w| w[0] != w[1]), "{:?}", roles);
        prop_assert!(!doc.window_json(&out).contains('~'));
    }
}
