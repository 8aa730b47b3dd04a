//! The shapes real agents produce (issue 49): one-task agent loops,
//! Anthropic user turns carrying tool results and new text, malformed and
//! reused tool call ids, legacy function calls, and byte-faithful output.
//!
//! Tokens come from a counter that reads them off the messages (`t` on a
//! message is its framing, `t` on a content part that part's tokens), so
//! every expected window below is derived by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cupel_chat::{
    ChatError, Decision, Format, InputNote, Message, MessageCounter, Transcript, Trim, TurnHalf,
    trim, trim_transcript,
};
use serde_json::{Value, json};

/// Tokens read off the message: its own `t` plus each part's `t`.
struct Marked;

impl MessageCounter for Marked {
    fn count_message(&self, m: &Message) -> i64 {
        let t = |v: Option<&Value>| v.and_then(Value::as_i64).unwrap_or(0);
        let own = t(m.extra.get("t"));
        let parts: i64 = m
            .content
            .parts()
            .iter()
            .map(|p| match p {
                cupel_chat::Part::Text { extra, .. } => t(extra.get("t")),
                cupel_chat::Part::ToolCall(c) => t(c.extra.get("t")),
                cupel_chat::Part::ToolResult(r) => t(r.extra.get("t")),
                _ => 0,
            })
            .sum();
        own + parts
    }
    fn describe(&self) -> String {
        "marked".into()
    }
}

fn doc(v: Value) -> Transcript {
    Transcript::parse(&v.to_string()).unwrap()
}

fn openai(max: i64) -> Trim {
    Trim::openai(max).counter(Marked)
}

fn anthropic(max: i64) -> Trim {
    Trim::anthropic(max).counter(Marked)
}

/// A one-task agent loop: system (10), the task (20), four tool groups of
/// a call (5) and a result (50), then the answer (15).
fn agent_loop() -> Transcript {
    let mut m = vec![
        json!({"role": "system", "content": "You fix bugs.", "t": 10}),
        json!({"role": "user", "content": "Make tests/parse.rs pass.", "t": 20}),
    ];
    for k in 0..4 {
        let id = format!("call_{k}");
        m.push(
            json!({"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}),
        );
        m.push(json!({"role": "tool", "tool_call_id": id, "content": "log", "t": 50}));
    }
    m.push(json!({"role": "assistant", "content": "Fixed.", "t": 15}));
    doc(Value::Array(m))
}

#[test]
fn a_one_task_loop_keeps_its_task_and_the_newest_tool_traffic() {
    let d = agent_loop();
    // Pinned: system 10 + task 20 = 30; 150 - 30 = 120 for the rest.
    // Newest first: #10 (15) -> 105 left; group #8-#9 (55) -> 50 left;
    // group #6-#7 (55) > 50: cut there.
    let out = trim(d.messages(), &openai(150)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 8, 9, 10]);
    assert_eq!(out.tokens.window, 30 + 55 + 15);
    assert_eq!(
        out.rows[1].decision,
        Decision::PinnedTask { automatic: true }
    );
    assert_eq!(
        out.rows[1].reason(),
        "kept: pinned as the task (the only user message of a tool-using agent, pinned \
         automatically; any unit may follow it)"
    );
    // Asked for explicitly: the same window, said so.
    let asked = trim(d.messages(), &openai(150).pin_first_user(true)).unwrap();
    assert_eq!(asked.positions, out.positions);
    assert_eq!(
        asked.rows[1].decision,
        Decision::PinnedTask { automatic: false }
    );
    // Turned off: the window must start with a user message, and the only
    // one is the task, which does not fit with the rest: no window.
    let e = trim(d.messages(), &openai(150).pin_first_user(false)).unwrap_err();
    assert!(matches!(e, ChatError::NoConversation { .. }), "{e}");
}

#[test]
fn a_pinned_tasks_tail_moves_by_tool_group_at_every_granularity() {
    use cupel_chat::Granularity;
    let d = agent_loop();
    // After the pinned task nothing is on the user's side, so the task's
    // exchange (and the assistant's turn answering it) is its tail: were it
    // one unit, it would need 4 * 55 + 15 = 235 > 120 and the window would
    // be the pins alone. Each tool group and the answer are units of their
    // own instead, and the window is the message-granularity window above:
    // #10 (15) -> 105 left; #8-#9 (55) -> 50 left; #6-#7 (55) > 50.
    for g in [Granularity::Exchange, Granularity::Turn] {
        let out = trim(d.messages(), &openai(150).granularity(g)).unwrap();
        assert_eq!(out.positions, vec![0, 1, 8, 9, 10], "{g:?}");
        assert_eq!(out.tokens.window, 30 + 55 + 15);
    }
}

#[test]
fn a_pinned_tasks_tail_ends_at_the_next_user_message() {
    use cupel_chat::Granularity;
    // The task pinned on request, then a tool group (5 + 50), a user
    // message (8), a tool group (5 + 50) and an answer (15). At exchange
    // granularity the tail is the first tool group alone; the second user
    // message starts an exchange of 8 + 55 + 15 = 78 that moves whole.
    let d = doc(json!([
        {"role": "system", "content": "s", "t": 10},
        {"role": "user", "content": "task", "t": 20},
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r", "t": 50},
        {"role": "user", "content": "more", "t": 8},
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "r", "t": 50},
        {"role": "assistant", "content": "done", "t": 15}
    ]));
    let opts = |max| {
        openai(max)
            .pin_first_user(true)
            .granularity(Granularity::Exchange)
    };
    // 30 pinned; 100 - 30 = 70 < 78: the newest exchange does not fit and
    // nothing older may follow a gap: the window is the pins alone.
    let out = trim(d.messages(), &opts(100)).unwrap();
    assert_eq!(out.positions, vec![0, 1]);
    // 30 + 78 = 108: the newest exchange; the tail's group (55) does not
    // fit the 0 left.
    let out = trim(d.messages(), &opts(108)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 4, 5, 6, 7]);
    // 30 + 78 + 55 = 163: everything.
    let out = trim(d.messages(), &opts(163)).unwrap();
    assert_eq!(out.positions, (0..8).collect::<Vec<_>>());
}

#[test]
fn a_pinned_task_still_fits_alone() {
    // 35 = 30 pinned + 5: no unit fits (the answer needs 15), and the
    // window is the system prompt and the task: valid, not an error.
    let d = agent_loop();
    let out = trim(d.messages(), &openai(35)).unwrap();
    assert_eq!(out.positions, vec![0, 1]);
}

/// An Anthropic conversation whose user turns carry tool results and then
/// new text. Tokens (framing 2 each): #1 user 2+8 = 10; #2 and #4
/// assistant tool_use 2+6 = 8; #3 and #5 user [result 40, text 7] = 49,
/// their text half 2+7 = 9, their results half 40; #6 assistant 2+5 = 7.
fn mixed() -> Transcript {
    doc(json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be helpful.", "t": 10}],
        "messages": [
            {"role": "user", "t": 2, "content": [{"type": "text", "text": "Where is order 7?", "t": 8}]},
            {"role": "assistant", "t": 2, "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "track", "input": {"order": 7}, "t": 6}]},
            {"role": "user", "t": 2, "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "In transit.", "t": 40},
                {"type": "text", "text": "And order 8?", "t": 7}]},
            {"role": "assistant", "t": 2, "content": [
                {"type": "tool_use", "id": "toolu_2", "name": "track", "input": {"order": 8}, "t": 6}]},
            {"role": "user", "t": 2, "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Delivered.", "t": 40},
                {"type": "text", "text": "Thanks!", "t": 7}]},
            {"role": "assistant", "t": 2, "content": [{"type": "text", "text": "Glad to help.", "t": 5}]}
        ]
    }))
}

#[test]
fn a_mixed_turn_splits_at_the_cut_and_is_the_one_message_rewritten() {
    let d = mixed();
    // 100 - system 10 = 90. Units newest first: {#6} 7 -> 83; {#5 text} 9
    // -> 74; {#4, #5 results} 48 -> 26; {#3 text} 9 -> 17; {#2, #3
    // results} 48 > 17: cut at #2. The window starts at #3's text: a user
    // message, so the start rule holds.
    let (window, out) = trim_transcript(&d, &anthropic(100)).unwrap();
    assert_eq!(out.positions, vec![0, 3, 4, 5, 6]);
    assert_eq!(out.tokens.window, 10 + 9 + 48 + 9 + 7);
    match &out.rows[3].decision {
        Decision::Partial {
            kept: TurnHalf::Text,
            tokens: 9,
            call_ids,
            dropped,
        } => {
            assert_eq!(call_ids, &["toolu_1"]);
            assert!(matches!(
                **dropped,
                Decision::DoesNotFit {
                    unit_tokens: 48,
                    available_tokens: 17,
                    ..
                }
            ));
        }
        other => panic!("{other:?}"),
    }
    // Only #3 is rewritten; everything else is copied as read.
    assert_eq!(out.shortened.keys().copied().collect::<Vec<_>>(), vec![3]);
    let text = d.window_json(&out);
    let back = Transcript::parse(&text).unwrap();
    assert_eq!(back.messages()[1].text(), "And order 8?");
    assert!(back.messages()[1].answered_ids().next().is_none());
    for (k, p) in [(2, 4), (3, 5), (4, 6)] {
        assert_eq!(back.message_json(k), d.message_json(p));
    }
    assert_eq!(window.to_json(), text);
    // The rewritten message keeps its own key order and the text part as read.
    assert_eq!(
        back.message_json(1),
        Some(r#"{"role":"user","t":2,"content":[{"type":"text","text":"And order 8?","t":7}]}"#)
    );
}

#[test]
fn the_start_rule_can_leave_only_a_text_half() {
    // 80 - 10 = 70: {#6} 7 -> 63; {#5 text} 9 -> 54; {#4, #5 results} 48
    // -> 6; {#3 text} 9 > 6: cut. The oldest kept unit starts with the
    // assistant's tool_use (#4): the start rule drops it, and #5 goes out
    // as its text alone.
    let d = mixed();
    let out = trim(d.messages(), &anthropic(80)).unwrap();
    assert_eq!(out.positions, vec![0, 5, 6]);
    assert!(matches!(out.rows[4].decision, Decision::StartRule { .. }));
    assert!(matches!(
        &out.rows[5].decision,
        Decision::Partial { kept: TurnHalf::Text, dropped, .. }
            if matches!(**dropped, Decision::StartRule { .. })
    ));
}

#[test]
fn exchanges_of_mixed_turns_are_not_one_unit() {
    use cupel_chat::Granularity;
    // Exchanges: {#1, #2, #3 results} 10+8+40 = 58; {#3 text, #4, #5
    // results} 9+8+40 = 57; {#5 text, #6} 9+7 = 16. 90 left: 16 -> 74;
    // 57 -> 17; 58 > 17: cut. Before, the whole conversation was one unit.
    let opts = anthropic(100).granularity(Granularity::Exchange);
    let d = mixed();
    let out = trim(d.messages(), &opts).unwrap();
    assert_eq!(out.positions, vec![0, 3, 4, 5, 6]);
    assert!(matches!(
        out.rows[3].decision,
        Decision::Partial {
            kept: TurnHalf::Text,
            ..
        }
    ));
}

#[test]
fn malformed_tool_call_ids_are_orphans_named_by_what_was_found() {
    let d = doc(json!([
        {"role": "system", "content": "s", "t": 5},
        {"role": "user", "content": "go", "t": 5},
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "no id", "t": 5},
        {"role": "tool", "tool_call_id": null, "content": "null id", "t": 5},
        {"role": "tool", "tool_call_id": 42, "content": "numeric id", "t": 5},
        {"role": "tool", "tool_call_ids": ["call_a"], "content": "SWE-agent's list", "t": 5},
        {"role": "user", "content": "and?", "t": 5}
    ]));
    let out = trim(d.messages(), &openai(1_000)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 7]);
    let reasons: Vec<String> = out.rows[2..7].iter().map(|r| r.to_string()).collect();
    assert_eq!(
        reasons,
        [
            "#2 assistant tool call f (call_a) dropped: call call_a is never answered (orphan call)",
            "#3 tool result without a tool_call_id dropped: a tool result must name the call it \
             answers, and it has no `tool_call_id` (orphan result)",
            "#4 tool result without a tool_call_id dropped: a tool result must name the call it \
             answers, and its `tool_call_id` is null (orphan result)",
            "#5 tool result without a tool_call_id dropped: a tool result must name the call it \
             answers, and its `tool_call_id` is a number (42) (orphan result)",
            "#6 tool result without a tool_call_id dropped: a tool result must name the call it \
             answers, and it has `tool_call_ids` (a list) but no `tool_call_id`, the only field \
             OpenAI reads (orphan result)",
        ]
    );
}

#[test]
fn legacy_function_calls_pair_with_their_function_results() {
    let d = doc(json!([
        {"role": "user", "content": "Weather?", "t": 5},
        {"role": "assistant", "content": null, "t": 5,
         "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
        {"role": "function", "name": "get_weather", "content": "sunny", "t": 5},
        {"role": "assistant", "content": "Sunny.", "t": 5},
        {"role": "user", "content": "Thanks", "t": 5}
    ]));
    assert_eq!(d.format(), Format::OpenAi);
    // 12: {#4} 5 -> 7; {#3} 5 -> 2; {#1, #2} 10 > 2: cut. #3 (assistant)
    // cannot start the window: only #4 stays.
    let out = trim(d.messages(), &openai(12)).unwrap();
    assert_eq!(out.positions, vec![4]);
    assert_eq!(
        out.rows[1].to_string(),
        "#1 assistant function call get_weather dropped with its results: the group needs 10 \
         tokens, 2 left"
    );
    assert_eq!(
        out.rows[2].to_string(),
        "#2 function result for get_weather dropped with its call: the group needs 10 tokens, \
         2 left"
    );
    // Everything fits at 100: no orphan.
    let all = trim(d.messages(), &openai(100)).unwrap();
    assert_eq!(all.positions, vec![0, 1, 2, 3, 4]);
}

#[test]
fn reused_ids_still_pair_and_are_noted() {
    // tau-bench reuses call ids across turns: each result answers the
    // latest call before it, and the note says the id is used twice.
    let call = |id: &str| {
        json!({"role": "assistant", "content": null, "t": 5, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    };
    let d = doc(json!([
        {"role": "user", "content": "a", "t": 5},
        call("call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": "r1", "t": 5},
        {"role": "user", "content": "b", "t": 5},
        call("call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": "r2", "t": 5}
    ]));
    let out = trim(d.messages(), &openai(100)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(
        out.notes,
        vec![InputNote::ReusedCallId {
            call_id: "call_1".into(),
            first_position: 1,
            second_position: 4
        }]
    );
    // 12: {#4, #5} 10 -> 2; {#3} 5 > 2: cut. The second call pairs with
    // the second result only.
    let out = trim(d.messages(), &openai(12)).unwrap_err();
    assert!(matches!(out, ChatError::NoConversation { .. }));
    let out = trim(d.messages(), &openai(15)).unwrap();
    assert_eq!(out.positions, vec![3, 4, 5]);
}

#[test]
fn a_result_far_from_its_call_is_noted() {
    let d = doc(json!([
        {"role": "user", "content": "a", "t": 5},
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "user", "content": "still there?", "t": 5},
        {"role": "tool", "tool_call_id": "call_x", "content": "late", "t": 5}
    ]));
    let out = trim(d.messages(), &openai(100)).unwrap();
    assert_eq!(
        out.notes,
        vec![InputNote::DistantResult {
            call_id: "call_x".into(),
            call_position: 1,
            result_position: 3
        }]
    );
    assert!(out.report.included[1].item.metadata().get("note").is_some());
}

/// Every literal and escape serde would rewrite, and fields a model might
/// spell out.
const ODD: &str = r#"{ "model":"gpt-4o" ,"temperature":1.50,"seed":12345678901234567890,
  "messages":[
    {"role":"system","content":"caf\u00e9 \/ \"q\"","n":-0.0,"t":1},
    {"role":"user","content":"one","x":1e2,"t":50},
    {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","function":{"name":"f"}}],"t":5},
    {"role":"tool","tool_call_id":"call_1","content":"r","big":123456789012345678901234567890,"t":5},
    {"role":"user","content":"two","t":1}
  ],"z":[1.0, 2.50]}
"#;

#[test]
fn kept_messages_and_untouched_fields_are_written_byte_for_byte() {
    let d = Transcript::parse(ODD).unwrap();
    // Nothing dropped: the same bytes, trailing newline included.
    let (window, out) = trim_transcript(&d, &openai(1_000)).unwrap();
    assert_eq!(out.positions.len(), 5);
    assert_eq!(window.to_json(), ODD);
    assert_eq!(d.window_json(&out), ODD);
    // 10 - system 1 = 9: {#4} 1 -> 8; {#2, #3} 10 > 8: cut. Every kept
    // message is its input text, and so is every other field of the body.
    let out = trim(d.messages(), &openai(10)).unwrap();
    assert_eq!(out.positions, [0, 4]);
    let text = d.window_json(&out);
    assert_eq!(
        text,
        "{ \"model\":\"gpt-4o\" ,\"temperature\":1.50,\"seed\":12345678901234567890,\n  \
         \"messages\":[\n    {\"role\":\"system\",\"content\":\"caf\\u00e9 \\/ \\\"q\\\"\",\"n\":-0.0,\"t\":1},\n    \
         {\"role\":\"user\",\"content\":\"two\",\"t\":1}\n  ],\"z\":[1.0, 2.50]}\n"
    );
    // One line: whitespace outside strings goes, nothing else.
    assert_eq!(
        cupel_chat::compact_json(&text),
        "{\"model\":\"gpt-4o\",\"temperature\":1.50,\"seed\":12345678901234567890,\"messages\":[\
         {\"role\":\"system\",\"content\":\"caf\\u00e9 \\/ \\\"q\\\"\",\"n\":-0.0,\"t\":1},\
         {\"role\":\"user\",\"content\":\"two\",\"t\":1}],\"z\":[1.0,2.50]}"
    );
}

#[test]
fn an_anthropic_body_keeps_its_system_and_fields_as_read() {
    let text = r#"{"system": "S\u00e9", "messages": [
 {"role": "user", "content": [{"type": "image", "source": {"url": "https://x/y.png"}}, {"type": "text", "text": "hi"}]},
 {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f"}]},
 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}
], "max_tokens": 1e3}"#;
    let d = Transcript::parse(text).unwrap();
    assert_eq!(d.format(), Format::Anthropic);
    let (window, _) = trim_transcript(&d, &Trim::anthropic(100_000)).unwrap();
    assert_eq!(window.to_json(), text);
    assert_eq!(d.message_json(0), Some(r#""S\u00e9""#));
}

#[test]
fn a_system_message_inside_an_anthropic_body_stays_where_it_was() {
    // pydantic-ai sends instructions mid-conversation as a `system` message
    // in `messages`; it is written back there, not moved to `system`.
    let text = r#"{"system": "Be brief.", "messages": [
  {"role": "user", "content": "Hi"},
  {"role": "system", "content": "Answer in French."},
  {"role": "user", "content": "Bye"}]}"#;
    let d = Transcript::parse(text).unwrap();
    let (window, _) = trim_transcript(&d, &Trim::anthropic(100_000)).unwrap();
    assert_eq!(window.to_json(), text);
    assert_eq!(window.to_value()["messages"][1]["role"], "system");
    assert_eq!(window.to_value()["system"], "Be brief.");
}
