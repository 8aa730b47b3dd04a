//! Hand-derived trims. Token counts are set per message (field `t`, read by
//! a test counter) so every expected value follows from the arithmetic in
//! the comments.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    ChatError, Decision, Format, Granularity, Message, MessageCounter, Role, Transcript, Trim, trim,
};
use serde_json::{Value, json};

/// Counts a message as its `t` field; a request costs `overhead`.
struct Fixed {
    overhead: i64,
}

impl MessageCounter for Fixed {
    fn count_message(&self, m: &Message) -> i64 {
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn count_request(&self, _tools: Option<&Value>) -> i64 {
        self.overhead
    }
    fn describe(&self) -> String {
        "fixed".into()
    }
}

fn doc(messages: Value) -> Vec<Message> {
    Transcript::from_value(messages, None)
        .unwrap()
        .into_messages()
}

fn opts(max: i64) -> Trim {
    Trim::openai(max).counter(Fixed { overhead: 0 })
}

fn call(id: &str, t: i64) -> Value {
    json!({"role": "assistant", "content": null, "t": t, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]})
}

fn result(id: &str, t: i64) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok", "t": t})
}

fn msg(role: &str, t: i64) -> Value {
    json!({"role": role, "content": format!("{role} says something"), "t": t})
}

/// system 10 | user 20 | assistant 30 | user 15 | call c1 5 | result c1 100 | assistant 25 | user 10
fn agent() -> Vec<Message> {
    doc(json!([
        msg("system", 10),
        msg("user", 20),
        msg("assistant", 30),
        msg("user", 15),
        call("c1", 5),
        result("c1", 100),
        msg("assistant", 25),
        msg("user", 10)
    ]))
}

#[test]
fn newest_first_contiguous_with_the_tool_group_whole() {
    // Budget 100, pinned system 10: 90 left.
    // #7 user 10 -> 80 left; #6 assistant 25 -> 55 left;
    // group {#4, #5} = 5 + 100 = 105 > 55: the cut; #3, #2, #1 are older: dropped.
    // The window would start with #6 (assistant): dropped by the start rule.
    let m = agent();
    let out = trim(&m, &opts(100)).unwrap();
    assert_eq!(out.positions, vec![0, 7]);
    assert_eq!(out.tokens.kept, 10 + 10);
    assert_eq!(out.tokens.dropped, 20 + 30 + 15 + 5 + 100 + 25);
    assert_eq!(out.tokens.window, 20);
    let lines: Vec<String> = out.rows.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "#0 system kept: pinned",
            "#1 user dropped: older than #4, which did not fit (no holes)",
            "#2 assistant dropped: older than #4, which did not fit (no holes)",
            "#3 user dropped: older than #4, which did not fit (no holes)",
            "#4 assistant tool call lookup (c1) dropped with its results: the group needs 105 tokens, 55 left",
            "#5 tool result for c1 dropped with its call: the group needs 105 tokens, 55 left",
            "#6 assistant dropped only so the conversation starts with a user message (provider rule)",
            "#7 user kept",
        ]
    );
    assert!(out.rows[6].decision.is_provider_rule());
}

#[test]
fn everything_fits_and_nothing_changes() {
    // 10 + 20 + 30 + 15 + 5 + 100 + 25 + 10 = 215 <= 250.
    let m = agent();
    let out = trim(&m, &opts(250)).unwrap();
    assert_eq!(out.positions, (0..8).collect::<Vec<_>>());
    assert_eq!(out.tokens.window, 215);
}

#[test]
fn the_report_explains_every_message_with_its_position() {
    let m = agent();
    let out = trim(&m, &opts(100)).unwrap();
    let r = &out.report;
    assert_eq!(r.total_candidates, 8);
    assert_eq!(r.included.len(), 2);
    let positions: Vec<&str> = r
        .included
        .iter()
        .map(|i| i.item.metadata()["position"].as_str())
        .collect();
    assert_eq!(positions, ["0", "7"]);
    // The rows' own input positions (the report field) say the same, for
    // included and excluded rows alike.
    let fields: Vec<usize> = r.included.iter().map(|i| i.position).collect();
    assert_eq!(fields, [0, 7]);
    for e in &r.excluded {
        assert_eq!(e.item.metadata()["position"], e.position.to_string());
    }
    // The group's two members carry GroupExcluded with the numbers of the row.
    let group: Vec<_> = r
        .excluded
        .iter()
        .filter(|e| e.reason.variant_name() == "GroupExcluded")
        .map(|e| (e.item.metadata()["position"].clone(), e.reason.to_string()))
        .collect();
    assert_eq!(group.len(), 2);
    assert!(
        group
            .iter()
            .all(|(_, r)| r.contains("(105 tokens)") && r.contains("55 available"))
    );
    assert!(r.excluded.iter().any(|e| matches!(
        &e.reason,
        cupel_core::ExclusionReason::Filtered { filter_name } if filter_name == "chat:start-on"
    )));
    // Excluded rows, newest first (score = (position + 1) / 8).
    let order: Vec<&str> = r
        .excluded
        .iter()
        .map(|e| e.item.metadata()["position"].as_str())
        .collect();
    assert_eq!(order, ["6", "5", "4", "3", "2", "1"]);
}

#[test]
fn parallel_calls_form_one_group() {
    // user 10 | call c1+c2 5 | result c1 40 | result c2 40 | assistant 10 | user 10
    let mut m = doc(json!([
        msg("user", 10),
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]},
        result("c1", 40),
        result("c2", 40),
        msg("assistant", 10),
        msg("user", 10)
    ]));
    // Budget 100: #5 10 -> 90, #4 10 -> 80, group {1,2,3} = 85 > 80: cut; #0 dropped.
    // Kept #4, #5: starts with an assistant -> dropped by the start rule; window [#5].
    let out = trim(&m, &opts(100)).unwrap();
    assert_eq!(out.positions, vec![5]);
    assert_eq!(
        out.rows[2].decision,
        Decision::DoesNotFit {
            unit_tokens: 85,
            available_tokens: 80,
            unit_len: 3
        }
    );
    // Budget 115: 115 - 20 = 95 >= 85 -> group kept, 10 left; #0 10 -> 0: everything.
    let out = trim(&m, &opts(115)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
    // Results that come in reverse order still join their call.
    m.swap(2, 3);
    let out = trim(&m, &opts(115)).unwrap();
    assert_eq!(out.positions.len(), 6);
}

#[test]
fn orphans_are_dropped_with_their_own_reason_or_kept_on_request() {
    // user 5 | result for "ghost" 7 | call c9 never answered 4 | assistant 6 | user 5
    let m = doc(json!([
        msg("user", 5),
        result("ghost", 7),
        call("c9", 4),
        msg("assistant", 6),
        msg("user", 5)
    ]));
    let out = trim(&m, &opts(100)).unwrap();
    assert_eq!(out.positions, vec![0, 3, 4]);
    assert_eq!(
        out.rows[1].decision,
        Decision::OrphanResult {
            call_id: "ghost".into()
        }
    );
    assert_eq!(
        out.rows[2].decision,
        Decision::UnansweredCall {
            call_id: "c9".into()
        }
    );
    assert_eq!(
        out.rows[1].to_string(),
        "#1 tool result for ghost dropped: no earlier message makes call ghost (orphan result)"
    );
    assert_eq!(
        out.rows[2].to_string(),
        "#2 assistant tool call lookup (c9) dropped: call c9 is never answered (orphan call)"
    );
    let out = trim(&m, &opts(100).keep_orphans(true)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 2, 3, 4]);
    assert_eq!(
        out.rows[1].decision,
        Decision::KeptOrphan {
            call_id: "ghost".into()
        }
    );
}

#[test]
fn a_half_answered_parallel_call_takes_its_answered_result_with_it() {
    let m = doc(json!([
        msg("user", 5),
        {"role": "assistant", "content": null, "t": 5, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]},
        result("c1", 5),
        msg("user", 5)
    ]));
    let out = trim(&m, &opts(100)).unwrap();
    assert_eq!(out.positions, vec![0, 3]);
    assert_eq!(
        out.rows[1].decision,
        Decision::UnansweredCall {
            call_id: "c2".into()
        }
    );
    assert_eq!(out.rows[2].decision, Decision::WithOrphan { position: 1 });
}

#[test]
fn exchanges_move_as_one() {
    // system 10 | user 20 asst 30 | user 15 asst 25 | user 10
    // Exchanges: {1,2} = 50, {3,4} = 40, {5} = 10. Budget 70: 60 left after the system.
    // {5} -> 50 left; {3,4} -> 10 left; {1,2} = 50 > 10: dropped.
    let m = doc(json!([
        msg("system", 10),
        msg("user", 20),
        msg("assistant", 30),
        msg("user", 15),
        msg("assistant", 25),
        msg("user", 10)
    ]));
    let out = trim(&m, &opts(70).granularity(Granularity::Exchange)).unwrap();
    assert_eq!(out.positions, vec![0, 3, 4, 5]);
    assert_eq!(
        out.rows[2].to_string(),
        "#2 assistant dropped with its exchange: the exchange needs 50 tokens, 10 left"
    );
}

#[test]
fn turns_group_one_sides_messages_with_their_tool_traffic() {
    // user 5 user 5 | asst 10, call c1 3, result c1 7, asst 10 | user 8
    // Turns: {0,1} = 10, {2,3,4,5} = 30, {6} = 8.
    let m = doc(json!([
        msg("user", 5),
        msg("user", 5),
        msg("assistant", 10),
        call("c1", 3),
        result("c1", 7),
        msg("assistant", 10),
        msg("user", 8)
    ]));
    // Budget 48: {6} -> 40 left, {2..5} -> 10 left, {0,1} -> 0 left: all kept.
    let out = trim(&m, &opts(48).granularity(Granularity::Turn)).unwrap();
    assert_eq!(out.positions, (0..7).collect::<Vec<_>>());
    // Budget 47: {0,1} = 10 > 9: dropped; the window would start with the
    // assistant's turn, which the start rule drops too: only #6 remains.
    let out = trim(&m, &opts(47).granularity(Granularity::Turn)).unwrap();
    assert_eq!(out.positions, vec![6]);
    assert!(out.rows[2].decision.is_provider_rule());
}

#[test]
fn end_on_drops_from_the_newest_end() {
    let m = doc(json!([msg("user", 5), msg("assistant", 5)]));
    let out = trim(&m, &opts(100).end_on([Role::User])).unwrap();
    assert_eq!(out.positions, vec![0]);
    assert_eq!(out.rows[1].decision, Decision::EndRule);
}

#[test]
fn anthropic_windows_start_with_a_user_turn_even_without_start_on() {
    let m = doc(json!([
        msg("user", 50),
        msg("assistant", 5),
        msg("user", 5)
    ]));
    // Budget 20: #2 -> 15, #1 -> 10, #0 50 > 10: cut. Starts with assistant: dropped.
    let out = trim(
        &m,
        &Trim::anthropic(20)
            .counter(Fixed { overhead: 0 })
            .start_on(None),
    )
    .unwrap();
    assert_eq!(out.positions, vec![2]);
    // OpenAI without a start rule keeps the assistant.
    let out = trim(&m, &opts(20).start_on(None)).unwrap();
    assert_eq!(out.positions, vec![1, 2]);
    assert_eq!(Trim::anthropic(1).format(), Format::Anthropic);
}

#[test]
fn unpinned_system_is_an_ordinary_unit() {
    let m = doc(json!([msg("system", 30), msg("user", 5)]));
    let out = trim(&m, &opts(20).pin_system(false).start_on(None)).unwrap();
    assert_eq!(out.positions, vec![1]);
}

#[test]
fn errors_carry_the_numbers() {
    let m = doc(json!([msg("system", 90), msg("user", 50)]));
    let e = trim(&m, &Trim::openai(100).counter(Fixed { overhead: 20 })).unwrap_err();
    assert_eq!(
        e,
        ChatError::PinnedOverBudget {
            pinned_tokens: 90,
            overhead_tokens: 20,
            total: 110,
            max_tokens: 100
        }
    );
    // 100 - 90 = 10 left; the newest unit needs 50.
    let e = trim(&m, &opts(100)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "nothing fits: the only message (#1 user) needs 50 tokens, 10 left after the pinned messages and the request overhead"
    );
    assert_eq!(
        trim(&m, &opts(0)).unwrap_err(),
        ChatError::InvalidBudget { max_tokens: 0 }
    );
    let e = trim(&m, &Trim::openai(10).encoding("bogus")).unwrap_err();
    assert!(matches!(e, ChatError::UnknownEncoding { .. }));
}

#[test]
fn tool_definitions_that_are_not_an_array_of_objects_fail_the_trim() {
    let m = doc(json!([msg("user", 5)]));
    // A string where the array belongs: an error naming `tools`, not a
    // silent count of zero tool tokens.
    let e = trim(&m, &Trim::anthropic(100).tools(json!("lookup"))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tools: `tools` must be an array of tool definitions, not a string"
    );
    // The same from a request body read by `Transcript`.
    let body = Transcript::from_value(
        json!({"model": "m", "tools": {"name": "lookup"}, "messages": [msg("user", 5)]}),
        Some(Format::OpenAi),
    )
    .unwrap();
    let e = cupel_chat::trim_transcript(&body, &opts(100)).unwrap_err();
    assert_eq!(
        e,
        ChatError::Shape {
            path: "tools".into(),
            message: "`tools` must be an array of tool definitions, not an object".into(),
        }
    );
    // An element that is not an object is named by its position.
    let tools = json!([{"name": "a", "input_schema": {}}, 7]);
    let e = trim(&m, &Trim::anthropic(100).tools(tools)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tools[1]: a tool definition must be an object, not a number"
    );
    // `null` and an empty array are no tools: the same window as none.
    let none = trim(&m, &opts(100)).unwrap();
    for tools in [Value::Null, json!([])] {
        let out = trim(&m, &opts(100).tools(tools)).unwrap();
        assert_eq!(out.positions, none.positions);
        assert_eq!(out.tokens.tools, 0);
    }
}

#[test]
fn anthropic_tool_results_in_user_messages_join_their_call() {
    let m = doc(json!({"system": "s", "messages": [
        {"role": "user", "content": "q", "t": 5},
        {"role": "assistant", "t": 5, "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
        {"role": "user", "t": 50, "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "y"}]},
        {"role": "assistant", "content": "done", "t": 5},
        {"role": "user", "content": "thanks", "t": 5}
    ]}));
    // #0 is the system (t absent: 0). Budget 30: #5 -> 25, #4 -> 20,
    // group {2,3} = 55 > 20: cut; #1 dropped. #4 is an assistant: start rule.
    let out = trim(&m, &Trim::anthropic(30).counter(Fixed { overhead: 0 })).unwrap();
    assert_eq!(out.positions, vec![0, 5]);
    assert_eq!(
        out.rows[3].to_string(),
        "#3 tool result for t1, t2 dropped with its call: the group needs 55 tokens, 20 left"
    );
}

// ----- ageing old tool results (spec/22-variants.md, "Chat") -----

mod aging {
    use cupel_chat::{AgeToolResults, Decision, Message, MessageCounter, Trim, trim};

    /// One token per message plus one per whitespace-separated word.
    struct Words;
    impl MessageCounter for Words {
        fn count_message(&self, m: &Message) -> i64 {
            1 + m.text().split_whitespace().count() as i64
        }
        fn describe(&self) -> String {
            "words".into()
        }
    }

    fn transcript() -> Vec<Message> {
        let log: Vec<String> = (1..=100).map(|i| format!("w{i}")).collect();
        vec![
            Message::system("be brief"), // 1 + 2 = 3, pinned
            Message::user("why failed"), // 3
            Message::assistant_calls([("call_1", "lookup_logs", "{}")]), // 1 (no text)
            Message::tool("call_1", log.join(" ")), // 1 + 100 = 101
            Message::assistant("disk full"), // 3
            Message::user("fixed now"),  // 3
        ]
    }

    #[test]
    fn an_old_result_goes_in_as_head_and_tail_before_its_unit_is_dropped() {
        let messages = transcript();
        let opts = Trim::openai(40)
            .counter(Words)
            .age_tool_results(AgeToolResults::new(1).truncate_to(20).unwrap());
        let out = trim(&messages, &opts).unwrap();
        // The result has one user message after it: aged. Its message costs
        // 1 without text, so the text gets 20 - 1 = 19 tokens; the widest
        // marker "[… 100 tokens omitted …]" is 5 words: 14 kept, head
        // floor(14 * 0.6) = 8 words, tail 6; omitted w9..=w94 = 86 words.
        // Form 1: 1 + 8 + 5 + 6 = 20 tokens.
        // Available 40 - 3 (pinned) = 37. Newest first: #5 3 (34 left),
        // #4 3 (31), the tool group 1 + 101 = 102 > 31, shortened 1 + 20 =
        // 21 <= 31 (10 left), #1 3 (7 left): everything kept.
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
        let head: Vec<String> = (1..=8).map(|i| format!("w{i}")).collect();
        let tail: Vec<String> = (95..=100).map(|i| format!("w{i}")).collect();
        let want = format!(
            "{} \n[… 86 tokens omitted …]\n {}",
            head.join(" "),
            tail.join(" ")
        );
        assert_eq!(out.shortened[&3].text(), want);
        assert_eq!(
            out.rows[3].decision,
            Decision::Shortened {
                form: 1,
                tokens: 20,
                tokens_saved: 81
            }
        );
        // The call is untouched and the shortened result answers it.
        assert_eq!(out.cloned_messages()[2], messages[2]);
        assert_eq!(
            out.cloned_messages()[3].tool_call_id.as_deref(),
            Some("call_1")
        );
        // Window: 3 + 3 + 1 + 20 + 3 + 3 = 33.
        assert_eq!(out.tokens.window, 33);
        let row = out
            .report
            .included
            .iter()
            .find(|r| r.position == 3)
            .unwrap();
        assert_eq!(
            row.variant.map(|v| (v.variant, v.tokens_saved)),
            Some((1, 81))
        );
        assert!(
            out.rows[3]
                .to_string()
                .contains("kept as head and tail: 20 tokens instead of 101")
        );
    }

    #[test]
    fn then_as_a_placeholder() {
        let messages = transcript();
        let opts = Trim::openai(26)
            .counter(Words)
            .age_tool_results(AgeToolResults::new(1).truncate_to(20).unwrap());
        let out = trim(&messages, &opts).unwrap();
        // Available 26 - 3 = 23: #5 (20 left), #4 (17), the group 102 > 17,
        // head+tail 21 > 17, placeholder "[tool result of 101 tokens
        // omitted]" 1 + 6 = 7 -> 1 + 7 = 8 <= 17 (9 left), #1 3 (6 left).
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(
            out.shortened[&3].text(),
            "[tool result of 101 tokens omitted]"
        );
        assert_eq!(
            out.rows[3].decision,
            Decision::Shortened {
                form: 2,
                tokens: 7,
                tokens_saved: 94
            }
        );
    }

    #[test]
    fn an_anthropic_tool_result_block_is_shortened_in_place() {
        use cupel_chat::{Transcript, trim_transcript};
        let log: Vec<String> = (1..=100).map(|i| format!("w{i}")).collect();
        let doc = serde_json::json!({
            "model": "claude",
            "system": "be brief",
            "messages": [
                {"role": "user", "content": "why failed"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup_logs", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": log.join(" ")}]},
                {"role": "assistant", "content": "disk full"},
                {"role": "user", "content": "fixed now"}
            ]
        })
        .to_string();
        let t = Transcript::parse(&doc).unwrap();
        // Placeholder only (a head+tail of 200 would not be smaller): the
        // result block's content becomes the placeholder text; the block
        // keeps its type and tool_use_id.
        let aging = AgeToolResults::new(1)
            .truncate_to(500)
            .unwrap()
            .placeholder("[{meta:tool} output omitted]")
            .unwrap();
        let opts = Trim::anthropic(20).counter(Words).age_tool_results(aging);
        let (window, out) = trim_transcript(&t, &opts).unwrap();
        // Pinned system 1 + 2 = 3; available 17. #5 3 (14), #4 3 (11),
        // the group 1 (no text) + 101 > 11; placeholder "[lookup_logs output
        // omitted]" 1 + 3 = 4 -> 1 + 4 = 5 <= 11 (6 left), #1 3 (3 left).
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
        let v = window.to_value();
        let block = &v["messages"][2]["content"][0];
        assert_eq!(block["type"], "tool_result");
        assert_eq!(block["tool_use_id"], "toolu_1");
        assert_eq!(block["content"], "[lookup_logs output omitted]");
        assert_eq!(
            v["messages"][1],
            serde_json::to_value(&doc_value(&doc)["messages"][1]).unwrap()
        );
    }

    fn doc_value(doc: &str) -> serde_json::Value {
        serde_json::from_str(doc).unwrap()
    }

    /// Parallel tool use: one Anthropic user message answers two calls. Both
    /// results are shortened together, each in its own block.
    #[test]
    fn parallel_results_in_one_message_are_shortened_together() {
        use cupel_chat::{Transcript, trim_transcript};
        let log: Vec<String> = (1..=100).map(|i| format!("w{i}")).collect();
        let trace: Vec<String> = (1..=50).map(|i| format!("v{i}")).collect();
        let doc = serde_json::json!({
            "system": "be brief",
            "messages": [
                {"role": "user", "content": "why failed"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup_logs", "input": {}},
                    {"type": "tool_use", "id": "toolu_2", "name": "lookup_trace", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": log.join(" ")},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": trace.join(" ")}]},
                {"role": "assistant", "content": "disk full"},
                {"role": "user", "content": "fixed now"}
            ]
        })
        .to_string();
        let t = Transcript::parse(&doc).unwrap();
        let words = |v: &serde_json::Value| v.as_str().unwrap().split_whitespace().count();
        // The results' message: 1 + 100 + 50 = 151 tokens; 1 with both empty.
        // Head and tail of 20: each text gets (20 - 1) / 2 = 9 tokens: the
        // widest marker "[… 100 tokens omitted …]" is 5 words, 4 left, head
        // floor(4 * 0.6) = 2 words and tail 2: 9 words each; form 1 is
        // 1 + 9 + 9 = 19 tokens. The placeholders count each result's own
        // text: "[tool result of 100 tokens omitted]" and "... 50 ...", 6
        // words each: form 2 is 1 + 6 + 6 = 13 tokens.
        let aging = || AgeToolResults::new(1).truncate_to(20).unwrap();
        // Budget 33: pinned 3, 30 left. #5 3 (27), #4 3 (24), the group
        // 1 + 151 > 24, at form 1 1 + 19 = 20 <= 24 (4 left), #1 3 (1 left).
        let opts = Trim::anthropic(33).counter(Words).age_tool_results(aging());
        let (window, out) = trim_transcript(&t, &opts).unwrap();
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
        let v = window.to_value();
        let blocks = v["messages"][2]["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            (
                blocks[0]["tool_use_id"].as_str(),
                blocks[1]["tool_use_id"].as_str()
            ),
            (Some("toolu_1"), Some("toolu_2"))
        );
        assert_eq!(
            (words(&blocks[0]["content"]), words(&blocks[1]["content"])),
            (9, 9)
        );
        assert!(blocks[0]["content"].as_str().unwrap().starts_with("w1 w2"));
        assert!(blocks[1]["content"].as_str().unwrap().ends_with("v49 v50"));
        // Budget 27: 24 left. #5 (21), #4 (18); form 1 20 > 18, form 2
        // 1 + 13 = 14 <= 18 (4 left), #1 3 (1 left).
        let opts = Trim::anthropic(27).counter(Words).age_tool_results(aging());
        let (window, out) = trim_transcript(&t, &opts).unwrap();
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(
            out.rows[3].decision,
            Decision::Shortened {
                form: 2,
                tokens: 13,
                tokens_saved: 138
            }
        );
        let v = window.to_value();
        let blocks = v["messages"][2]["content"].as_array().unwrap();
        assert_eq!(blocks[0]["content"], "[tool result of 100 tokens omitted]");
        assert_eq!(blocks[1]["content"], "[tool result of 50 tokens omitted]");
    }

    #[test]
    fn a_result_younger_than_k_exchanges_is_never_shortened() {
        let messages = transcript();
        // K = 2: only one user message follows the result: not aged, so the
        // group (102) is dropped as before, and #1 with it (no holes).
        let opts = Trim::openai(40)
            .counter(Words)
            .age_tool_results(AgeToolResults::new(2));
        let out = trim(&messages, &opts).unwrap();
        assert!(out.shortened.is_empty());
        assert_eq!(out.positions, vec![0, 5]);
    }
}

/// Found by the `chat_transcript` fuzz target: a developer message carrying
/// a `tool_call_id` (it "answers" call_a, which no message makes), a tool
/// result for a call nobody makes, then an assistant reply.
fn stray_tool_ids() -> Vec<Message> {
    doc(json!([
        {"role": "developer", "tool_call_id": "call_a", "content": "2°C", "t": 8},
        {"role": "tool", "tool_call_id": "call_b", "content": "-4°C", "t": 12},
        {"role": "assistant", "content": "Cold in both.", "t": 8},
    ]))
}

#[test]
fn a_pinned_prompt_in_tool_traffic_is_refused() {
    // Pinned, #0 would be sent whatever happens to its call: it used to be
    // kept as the window's only message, a result without its call.
    let opts = Trim::openai(1_000).counter(Fixed { overhead: 0 });
    let err = trim(&stray_tool_ids(), &opts).unwrap_err();
    assert_eq!(
        err,
        ChatError::PinnedToolTraffic {
            position: 0,
            label: "developer".into(),
            action: "answers",
            call_id: "call_a".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "message #0 (developer) is a pinned prompt but answers tool call call_a"
    );
    // An assistant message makes calls; a pinned system message making one is refused too.
    let makes = doc(json!([
        {"role": "system", "content": "x", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ], "t": 1},
        {"role": "user", "content": "hi", "t": 1},
    ]));
    assert!(matches!(
        trim(&makes, &opts),
        Err(ChatError::PinnedToolTraffic {
            position: 0,
            action: "makes",
            ..
        })
    ));
}

#[test]
fn a_transcript_with_no_sendable_conversation_is_refused() {
    // Unpinned: #0 answers call_a and #1 call_b, neither made by anyone
    // (2 orphans); #2, an assistant reply, would open the conversation and
    // is dropped by the start rule (1). Nothing is left to send, which a
    // provider refuses: an error instead of an empty window.
    let opts = Trim::openai(1_000)
        .counter(Fixed { overhead: 0 })
        .pin_system(false);
    assert_eq!(
        trim(&stray_tool_ids(), &opts).unwrap_err(),
        ChatError::NoConversation {
            messages: 3,
            orphans: 2,
            provider_rules: 1,
            budget: 0,
        }
    );
    // With a user question after them, that question is the conversation.
    let mut asked = stray_tool_ids();
    asked.extend(doc(
        json!([{"role": "user", "content": "And tomorrow?", "t": 5}]),
    ));
    assert_eq!(trim(&asked, &opts).unwrap().positions, vec![3]);
}

#[test]
fn a_repeated_call_id_is_answered_only_after_its_own_call() {
    // Found by the fuzz target. #1 calls c1 and c2, #2 answers c1, #3 calls
    // c1 again and nothing answers that second call. A result answers the
    // latest earlier call with its id: #2 pairs with #1, so #3's call is
    // unanswered (it used to pass as answered, by #2, and was sent alone).
    // #1's c2 is never answered either: #1 and #2 go as one group.
    let messages = doc(json!([
        {"role": "user", "content": "weather?", "t": 1},
        {"role": "assistant", "content": null, "t": 1, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sun", "t": 1},
        call("c1", 1),
        {"role": "assistant", "content": "Sunny.", "t": 1},
        {"role": "user", "content": "thanks", "t": 1},
    ]));
    let out = trim(&messages, &opts(100)).unwrap();
    assert_eq!(
        out.rows[1].decision,
        Decision::UnansweredCall {
            call_id: "c2".into()
        }
    );
    assert_eq!(out.rows[2].decision, Decision::WithOrphan { position: 1 });
    assert_eq!(
        out.rows[3].decision,
        Decision::UnansweredCall {
            call_id: "c1".into()
        }
    );
    // Left: #0 (user), #4 (assistant), #5 (user), 1 token each, all within
    // 100; the oldest, #0, is a user message, so the start rule drops none.
    assert_eq!(out.positions, vec![0, 4, 5]);
}

/// The report is built when first read, from the trim's own copy of its
/// rows: what a caller does to `rows` first does not change it, and
/// reading it later gives what reading it at once gives.
#[test]
fn the_report_is_built_on_first_read_from_the_trims_own_rows() {
    let messages = vec![
        Message::user("What is 2+2?"),
        Message::assistant("4"),
        Message::user("And 3+3?"),
    ];
    // Three short messages, well under 100 tokens together: all kept.
    let read_at_once = trim(&messages, &Trim::openai(100)).unwrap();
    let at_once = read_at_once.report.get().clone();
    let mut edited = trim(&messages, &Trim::openai(100)).unwrap();
    edited.rows.clear();
    assert_eq!(edited.report.included.len(), 3);
    assert_eq!(edited.report.excluded.len(), 0);
    assert_eq!(edited.report.get(), &at_once);
    assert_eq!(edited.report.clone().into_report(), at_once);
    let contents: Vec<&str> = at_once.included.iter().map(|r| r.item.content()).collect();
    assert_eq!(
        contents,
        [
            "#0 user: What is 2+2?",
            "#1 assistant: 4",
            "#2 user: And 3+3?"
        ]
    );
    // Without the report it stays empty.
    let off = trim(&messages, &Trim::openai(100).report(false)).unwrap();
    assert_eq!(off.report.get(), &cupel_core::SelectionReport::default());
}
