//! OpenAI Responses and Gemini documents (issue 53): byte-faithful round
//! trips, detection and its errors, the provider's units and start rules,
//! counting and calibration, cache profiles.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    CacheProfile, Calibration, ChatError, Decision, Format, GeminiEstimate, Message,
    MessageCounter, Observation, ResponsesCounter, Role, Transcript, Trim, trim, trim_transcript,
};
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Every message costs 10 tokens and a request nothing: budgets below are
/// multiples of 10, derived by counting messages.
struct Ten;

impl MessageCounter for Ten {
    fn count_message(&self, _: &Message) -> i64 {
        10
    }
    fn describe(&self) -> String {
        "ten".into()
    }
}

fn opts(format: Format, max: i64) -> Trim {
    Trim::new(format, max).counter(Ten)
}

#[test]
fn both_fixtures_round_trip_byte_for_byte_and_as_values() {
    for (name, format, n) in [
        ("responses-agent.json", Format::Responses, 12),
        ("gemini-agent.json", Format::Gemini, 10),
    ] {
        let text = fixture(name);
        let t = Transcript::parse(&text).unwrap();
        assert_eq!(t.format(), format);
        // The system member (`instructions`, `systemInstruction`) is message #0.
        assert_eq!(t.messages().len(), n);
        assert_eq!(t.messages()[0].role, Role::System);
        assert_eq!(t.to_json(), text, "{name}: nothing changed, same bytes");
        let original: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(t.to_value(), original, "{name}: same JSON value");
        let (window, out) = trim_transcript(&t, &opts(format, 1_000)).unwrap();
        assert_eq!(out.positions.len(), n);
        assert_eq!(window.to_json(), text);
        assert_eq!(t.window_json(&out), text);
        // From a value (no text kept), the same value comes back.
        let from_value = Transcript::from_value(original.clone(), None).unwrap();
        assert_eq!(from_value.format(), format);
        assert_eq!(from_value.to_value(), original);
    }
}

#[test]
fn responses_items_map_to_messages_and_units() {
    let t = Transcript::parse(&fixture("responses-agent.json")).unwrap();
    let m = t.messages();
    // #2 reasoning, #3 call, #4 output, #8 and #9 parallel calls, #10 and #11 outputs.
    assert_eq!(m[2].role, Role::Other("reasoning".into()));
    assert_eq!(m[3].calls().next().unwrap().id, "call_paris");
    assert_eq!(m[4].role, Role::Tool);
    assert_eq!(m[4].tool_call_id.as_deref(), Some("call_paris"));
    assert_eq!(m[8].calls().next().unwrap().id, "call_tokyo");
    // Messages 1..=11 cost 10 each; #0 (instructions) is pinned: 10.
    // Units: [1] [2,3,4] [5] [6] [7,8,9,10,11] (reasoning with its call, the
    // parallel calls together, each with its output).
    // Budget 80: 10 pinned, [7..11] = 50 -> 20 left, [6] -> 10 left, [5]
    // -> 0 left, [2,3,4] = 30 does not fit. The window [5..11] starts with
    // the assistant message #5, so the start rule drops it: [0, 6..=11].
    let out = trim(m, &opts(Format::Responses, 80)).unwrap();
    assert_eq!(out.positions, vec![0, 6, 7, 8, 9, 10, 11]);
    assert!(matches!(out.rows[5].decision, Decision::StartRule { .. }));
    assert!(matches!(out.rows[2].decision, Decision::DoesNotFit { .. }));
    // Budget 60: [7..11] = 50 fits, [6] does not (0 left after 10 + 50):
    // the window would start on the reasoning item: nothing can be sent.
    let err = trim(m, &opts(Format::Responses, 60)).unwrap_err();
    assert_eq!(
        err,
        ChatError::NoConversation {
            messages: 11,
            orphans: 0,
            provider_rules: 5,
            budget: 6,
        }
    );
}

#[test]
fn a_reasoning_item_at_the_end_is_dropped_and_explained() {
    let doc = json!([
        {"role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
        {"type": "reasoning", "id": "rs_9", "summary": []}
    ]);
    let t = Transcript::parse(&doc.to_string()).unwrap();
    assert_eq!(t.format(), Format::Responses);
    let out = trim(t.messages(), &opts(Format::Responses, 100)).unwrap();
    assert_eq!(out.positions, vec![0, 1]);
    assert_eq!(
        out.rows[2].decision,
        Decision::WithoutFollower {
            kind: "reasoning".into()
        }
    );
    assert!(out.rows[2].reason().contains("none follows"));
}

#[test]
fn responses_orphans_and_a_repeated_call_id_are_explained_never_a_panic() {
    let doc = json!({"input": [
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "call_gone", "output": "stale"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a"},
        {"type": "function_call_output", "call_id": "call_1", "output": "b"},
        {"type": "function_call", "call_id": "call_2", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "and?"}
    ]});
    let t = Transcript::parse(&doc.to_string()).unwrap();
    let out = trim(t.messages(), &opts(Format::Responses, 1_000)).unwrap();
    assert_eq!(
        out.rows[1].decision,
        Decision::OrphanResult {
            call_id: "call_gone".into()
        }
    );
    // Both outputs of call_1 go with it; call_2 is never answered.
    assert!(out.positions.contains(&3) && out.positions.contains(&4));
    assert_eq!(
        out.rows[5].decision,
        Decision::UnansweredCall {
            call_id: "call_2".into()
        }
    );
    assert_eq!(out.positions, vec![0, 2, 3, 4, 6]);
}

#[test]
fn a_window_may_start_on_a_compaction_item() {
    let doc = json!([
        {"role": "user", "content": "long task"},
        {"type": "message", "role": "assistant", "content": "working"},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"},
        {"type": "message", "role": "assistant", "content": "continuing"},
        {"role": "user", "content": "status?"}
    ]);
    let t = Transcript::parse(&doc.to_string()).unwrap();
    // Budget 30: [4], [3], [2] fit (3 x 10); the window starts on the
    // compaction item, the opaque summary of #0 and #1.
    let out = trim(t.messages(), &opts(Format::Responses, 30)).unwrap();
    assert_eq!(out.positions, vec![2, 3, 4]);
}

#[test]
fn an_input_string_is_one_user_message_written_back_as_read() {
    let text = r#"{"model": "gpt-5", "input": "Tell me a joke\u0021", "instructions": "Be kind."}"#;
    let t = Transcript::parse(text).unwrap();
    assert_eq!(t.format(), Format::Responses);
    assert_eq!(t.messages().len(), 2);
    assert_eq!(t.messages()[1].text(), "Tell me a joke!");
    assert_eq!(t.to_json(), text);
    let (window, _) = trim_transcript(&t, &opts(Format::Responses, 100)).unwrap();
    assert_eq!(window.to_json(), text);
    assert_eq!(t.to_value(), serde_json::from_str::<Value>(text).unwrap());
}

#[test]
fn gemini_units_pair_calls_and_responses_without_ids() {
    let t = Transcript::parse(&fixture("gemini-agent.json")).unwrap();
    let m = t.messages();
    // #2 model call check_flight, #3 its response; #8 two parallel calls, #9 two responses.
    // Id-less calls get Cupel's names `~c{tag}.{part}`, the responses the
    // names of the calls they answer, in order.
    let ids: Vec<&str> = m[8].calls().map(|c| c.id.as_str()).collect();
    assert!(
        ids[0].starts_with("~c") && ids[0].ends_with(".0"),
        "{ids:?}"
    );
    assert!(
        ids[1].starts_with("~c") && ids[1].ends_with(".1"),
        "{ids:?}"
    );
    assert_eq!(m[9].answered_ids().collect::<Vec<_>>(), ids);
    let first: Vec<&str> = m[2].calls().map(|c| c.id.as_str()).collect();
    assert_eq!(m[3].answered_ids().collect::<Vec<_>>(), first);
    // The names do not depend on where the turn sits: the window read back
    // names its calls as the transcript did.
    let text = fixture("gemini-agent.json");
    let t2 = Transcript::parse(&text).unwrap();
    let out = trim(t2.messages(), &opts(Format::Gemini, 50)).unwrap();
    let back = Transcript::parse(&t2.window_json(&out)).unwrap();
    assert_eq!(back.messages(), &out.cloned_messages()[..]);
    // Units: [1] [2,3] [4,5] [6] [7] [8,9]; #0 pinned (10).
    // Budget 50: [8,9] = 20 -> 20 left, [7] -> 10 left, [6] -> 0 left,
    // [4,5] does not fit. [6] is a model turn: dropped by the start rule.
    let out = trim(m, &opts(Format::Gemini, 50)).unwrap();
    assert_eq!(out.positions, vec![0, 7, 8, 9]);
    assert_eq!(
        out.rows[6].decision,
        Decision::StartRule {
            required: Role::User
        }
    );
    // The window is the input's own bytes, the synthetic ids never written.
    let json = t.window_json(&out);
    assert!(!json.contains('~'));
    assert!(json.contains(r#""thoughtSignature": "U2lnX0MtcGFyYWxsZWw=""#));
    let back: Value = serde_json::from_str(&json).unwrap();
    let original: Value = serde_json::from_str(&fixture("gemini-agent.json")).unwrap();
    assert_eq!(back["contents"][0], original["contents"][6]);
    assert_eq!(back["contents"][2], original["contents"][8]);
    assert_eq!(back["generationConfig"], original["generationConfig"]);
}

#[test]
fn gemini_unequal_call_and_response_counts_drop_the_group() {
    // Two calls, one response: the second call is never answered.
    let fewer = json!({"contents": [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": 1}}}]},
        {"role": "model", "parts": [{"text": "b"}]},
        {"role": "user", "parts": [{"text": "c"}]}
    ]});
    let t = Transcript::parse(&fewer.to_string()).unwrap();
    let out = trim(t.messages(), &opts(Format::Gemini, 1_000)).unwrap();
    let second = t.messages()[1].calls().nth(1).unwrap().id.clone();
    assert!(second.starts_with("~c") && second.ends_with(".1"));
    assert_eq!(
        out.rows[1].decision,
        Decision::UnansweredCall { call_id: second }
    );
    assert_eq!(out.rows[2].decision, Decision::WithOrphan { position: 1 });
    assert_eq!(out.positions, vec![0, 3, 4]);
    // One call, two responses: the second answers nothing.
    let more = json!([
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}, {"functionResponse": {"name": "f", "response": {}}}]},
        {"role": "user", "parts": [{"text": "c"}]}
    ]);
    let t = Transcript::parse(&more.to_string()).unwrap();
    assert_eq!(t.format(), Format::Gemini);
    let out = trim(t.messages(), &opts(Format::Gemini, 1_000)).unwrap();
    assert!(matches!(
        &out.rows[2].decision,
        Decision::OrphanResult { call_id } if call_id.starts_with("~r") && call_id.ends_with(".1")
    ));
    // With #1 and #2 gone, user #0 and user #3 would follow each other,
    // which Gemini refuses: the older one goes (spec 24, G3).
    assert_eq!(
        out.rows[0].decision,
        Decision::Alternation { role: Role::User }
    );
    assert_eq!(out.positions, vec![3]);
}

/// Gemini's alternation after drops and pins, by hand (every message 10
/// tokens). #0 user "q1", #1 model call `f` never answered, #2 user "q2",
/// #3 model "a2", #4 user "q3", #5 model "a3".
/// * Budget 1,000: #1 is an unanswered call (dropped); #0 and #2 would be
///   two user turns in a row, so #0 goes: window #2..#5 (40 tokens).
/// * `pin_first_user` and budget 30: #0 pinned (10), the newest units that
///   fit in 20 are #4 and #5; user #0 then user #4 would follow each
///   other and #0 is pinned, so #4 goes: window #0, #5 — user, model.
#[test]
fn gemini_turns_alternate_after_drops_and_pins() {
    let doc = json!({"contents": [
        {"role": "user", "parts": [{"text": "q1"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"text": "q2"}]},
        {"role": "model", "parts": [{"text": "a2"}]},
        {"role": "user", "parts": [{"text": "q3"}]},
        {"role": "model", "parts": [{"text": "a3"}]}
    ]});
    let t = Transcript::parse(&doc.to_string()).unwrap();
    let out = trim(t.messages(), &opts(Format::Gemini, 1_000)).unwrap();
    assert!(matches!(
        out.rows[1].decision,
        Decision::UnansweredCall { .. }
    ));
    assert_eq!(
        out.rows[0].decision,
        Decision::Alternation { role: Role::User }
    );
    assert!(out.rows[0].decision.is_provider_rule());
    assert_eq!(out.positions, vec![2, 3, 4, 5]);
    assert_eq!(out.tokens.window, 40);

    let pinned = opts(Format::Gemini, 30).pin_first_user(true);
    let out = trim(t.messages(), &pinned).unwrap();
    assert!(out.rows[0].decision.is_pinned());
    assert_eq!(
        out.rows[4].decision,
        Decision::Alternation { role: Role::User }
    );
    assert_eq!(out.positions, vec![0, 5]);
    let roles: Vec<&Role> = out.messages.iter().map(|m| &m.role).collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
}

#[test]
fn gemini_real_ids_pair_by_id_and_a_tilde_id_survives() {
    let text = r#"[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"id":"~c1","name":"f","args":{}}},{"functionCall":{"id":"","name":"g"}}]},{"role":"user","parts":[{"functionResponse":{"id":"~c1","name":"f","response":{}}},{"functionResponse":{"id":"","name":"g","response":{}}}]}]"#;
    let t = Transcript::parse(text).unwrap();
    let ids: Vec<&str> = t.messages()[1].calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["~~c1", "~"]);
    assert_eq!(t.to_value(), serde_json::from_str::<Value>(text).unwrap());
    let out = trim(t.messages(), &opts(Format::Gemini, 100)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 2]);
}

#[test]
fn detection_and_errors_name_the_format_and_the_path() {
    let responses = json!([{"type": "function_call_output", "call_id": "c", "output": "x"}]);
    assert_eq!(Transcript::detect(&responses), Format::Responses);
    assert_eq!(Transcript::detect(&json!({"contents": []})), Format::Gemini);
    assert_eq!(
        Transcript::detect(&json!({"input": "hi"})),
        Format::Responses
    );
    assert_eq!(
        Transcript::detect(&json!([{"role": "user", "content": "hi"}])),
        Format::OpenAi
    );
    // Forced to Gemini, a Chat Completions body.
    let err = Transcript::parse_as(r#"{"messages": []}"#, Format::Gemini).unwrap_err();
    assert_eq!(
        err.to_string(),
        "contents: a Gemini request body needs a `contents` array (read as Gemini, as asked)"
    );
    // A malformed item: where, and as what it was read.
    let err = Transcript::parse(
        r#"{"input": [{"role": "user", "content": "a"}, {"type": "function_call", "name": "f", "arguments": "{}"}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "input[1]: a function_call needs a string `call_id` and `name` (read as an OpenAI Responses input item)"
    );
    let err = Transcript::parse(r#"{"contents": [{"role": "model", "parts": {"text": "a"}}]}"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "contents[0].parts: `parts` must be an array, not an object (read as Gemini content)"
    );
    let err = Transcript::parse(r#"{"input": 42}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("input: an OpenAI Responses request body needs `input`")
    );
}

#[test]
fn counting_by_hand() {
    // Gemini: ceil(chars / 4). "hello world" is 11 characters: 3.
    let g = GeminiEstimate::new();
    assert_eq!(g.count_message(&Message::user("hello world")), 3);
    // A functionCall part: "check_flight" (12) + {"flight":"AA100"} (18) = 30
    // characters: ceil(30 / 4) = 8, as the fixture's #2 (its signature is
    // not counted).
    let t = Transcript::parse(&fixture("gemini-agent.json")).unwrap();
    assert_eq!(g.count_message(&t.messages()[2]), 8);
    // Responses: 3 per item, then "user" (1) + "hello world" (2) = 6; a
    // reasoning item with the summary "hello world": 3 + 2 = 5; a
    // compaction item: 3; a function_call_output "hello world": 3 + 2 = 5.
    let r = ResponsesCounter::new("o200k_base").unwrap();
    assert_eq!(r.count_message(&Message::user("hello world")), 6);
    let items = Transcript::parse(
        r#"[{"type":"reasoning","summary":[{"type":"summary_text","text":"hello world"}],"encrypted_content":"zzzz"},
            {"type":"compaction","encrypted_content":"zzzz"},
            {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"hello world"}]"#,
    )
    .unwrap();
    let counts: Vec<i64> = items
        .messages()
        .iter()
        .map(|m| r.count_message(m))
        .collect();
    assert_eq!(counts[0], 5);
    assert_eq!(counts[1], 3);
    assert_eq!(counts[3], 5);
    assert_eq!(r.count_request(None), 3);
    // Calibration: [user "hello world"] is 6 + 3 (priming) = 9 raw; OpenAI
    // reported 18 -> scale 2, so the message counts 12 and a request 6.
    let raw = r.raw_request(&[Message::user("hello world")], None);
    assert_eq!(raw, 9);
    let fit = Calibration::fit(&[Observation {
        estimate: raw,
        actual: 18,
    }])
    .unwrap();
    let r2 = r.calibrated(&fit);
    assert_eq!(r2.count_message(&Message::user("hello world")), 12);
    assert_eq!(r2.count_request(None), 6);
    // Gemini: 3 raw, promptTokenCount 4 -> scale 4/3; ceil(3 * 4/3) = 4.
    let fit = Calibration::fit(&[Observation {
        estimate: 3,
        actual: 4,
    }])
    .unwrap();
    assert_eq!(
        g.calibrated(&fit)
            .count_message(&Message::user("hello world")),
        4
    );
}

#[test]
fn cache_profiles_follow_the_request() {
    let body = json!({"model": "gpt-5", "prompt_cache_retention": "24h"});
    let p = CacheProfile::for_request(Format::Responses, &body);
    assert_eq!(p.name, "openai-24h");
    assert_eq!(p.lifetime, Some(std::time::Duration::from_secs(86_400)));
    assert_eq!(
        CacheProfile::for_request(Format::Responses, &json!({})).name,
        "openai"
    );
    let g = CacheProfile::for_request(Format::Gemini, &json!({"model": "gemini-2.5-pro"}));
    assert_eq!(g.min_prefix_tokens, 2_048);
    let g = CacheProfile::for_request(Format::Gemini, &json!({}));
    assert_eq!(g.name, "gemini");
    assert_eq!(
        CacheProfile::gemini_for_model("gemini-3.5-flash").min_prefix_tokens,
        4_096
    );
    assert!(CacheProfile::from_name("openai-24h").is_some());
}

#[test]
fn old_results_are_shortened_in_both_formats_and_written_validly() {
    use cupel_chat::AgeToolResults;
    let log = "line of build output\n".repeat(400);
    // Responses: the old output is a string; its shortened form stays one.
    let responses = json!({"input": [
        {"role": "user", "content": "build it"},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": log},
        {"type": "message", "role": "assistant", "content": "failed"},
        {"role": "user", "content": "why?"}
    ]});
    // Gemini: the old response is an object; shortened, it is {"output": text}.
    let gemini = json!({"contents": [
        {"role": "user", "parts": [{"text": "build it"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "sh", "args": {}}, "thoughtSignature": "c2ln"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "sh", "response": {"log": log}}}]},
        {"role": "model", "parts": [{"text": "failed"}]},
        {"role": "user", "parts": [{"text": "why?"}]}
    ]});
    for (doc, format) in [(responses, Format::Responses), (gemini, Format::Gemini)] {
        let t = Transcript::parse(&doc.to_string()).unwrap();
        assert_eq!(t.format(), format);
        let aging = AgeToolResults::new(1).truncate_to(60).unwrap();
        // The log is about 2,000 tokens either way; 400 holds the whole
        // conversation only with it shortened.
        let opts = Trim::new(format, 400).age_tool_results(aging);
        let (window, out) = trim_transcript(&t, &opts).unwrap();
        assert_eq!(out.positions, vec![0, 1, 2, 3, 4], "{format}");
        assert!(matches!(out.rows[2].decision, Decision::Shortened { .. }));
        let v: Value = serde_json::from_str(&window.to_json()).unwrap();
        match format {
            Format::Responses => {
                let output = v["input"][2]["output"].as_str().unwrap();
                assert!(output.contains("tokens omitted"), "{output}");
                assert_eq!(v["input"][1], doc["input"][1]);
            }
            _ => {
                let response = &v["contents"][2]["parts"][0]["functionResponse"];
                assert_eq!(response["name"], "sh");
                let output = response["response"]["output"].as_str().unwrap();
                assert!(output.contains("tokens omitted"), "{output}");
                // The call and its signature are untouched.
                assert_eq!(v["contents"][1], doc["contents"][1]);
            }
        }
    }
}
