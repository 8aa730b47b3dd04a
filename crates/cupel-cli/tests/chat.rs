//! `cupel chat`: trimmed documents, the per-message table, errors.
#![cfg(feature = "chat")]
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{cupel, fails, ok, stderr, stdout};
use serde_json::Value;

const AGENT: &str = "tests/fixtures/chat/openai-agent.json";
const ANTHROPIC: &str = "tests/fixtures/chat/anthropic-parallel.json";
/// A one-task agent loop: a system prompt, one user task, then only tool
/// calls and results (12 of them, about 130 tokens each) and an answer.
const LOOP: &str = "tests/fixtures/chat/openai-one-task-loop.json";
/// An Anthropic conversation whose user turns carry tool results, then text.
const MIXED: &str = "tests/fixtures/chat/anthropic-mixed-turns.json";
/// An OpenAI Responses request: reasoning items, a call and parallel calls.
const RESPONSES: &str = "tests/fixtures/chat/responses-agent.json";
/// A Gemini request: sequential and parallel function calls with thought
/// signatures (the shapes of Google's thought-signature guide).
const GEMINI: &str = "tests/fixtures/chat/gemini-agent.json";

fn json_of(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn explain_openai_agent_at_2000() {
    let out = ok(&["chat", AGENT, "--max-tokens", "2000", "--explain"]);
    insta::assert_snapshot!(out);
}

#[test]
fn the_trimmed_openai_document_keeps_the_body_and_each_kept_message_verbatim() {
    let out = ok(&["chat", AGENT, "--max-tokens", "2000"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let original = json_of(AGENT);
    assert_eq!(v["tools"], original["tools"]);
    assert_eq!(v["model"], original["model"]);
    let kept = v["messages"].as_array().unwrap();
    // The system prompt and #22..=#40 (see the explain snapshot).
    assert_eq!(kept.len(), 20);
    assert_eq!(kept[0], original["messages"][0]);
    assert_eq!(kept[1], original["messages"][22]);
    assert_eq!(kept[19], original["messages"][40]);
}

#[test]
fn a_budget_that_holds_everything_gives_the_same_document() {
    let out = ok(&["chat", AGENT, "--max-tokens", "100000"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json_of(AGENT));
    let out = ok(&["chat", ANTHROPIC, "--max-tokens", "100000"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json_of(ANTHROPIC)
    );
}

#[test]
fn explain_anthropic_parallel_tool_use() {
    // The Anthropic estimate: the tool_use group (#2, #3) moves as one.
    let out = ok(&["chat", ANTHROPIC, "--max-tokens", "1500", "--explain"]);
    insta::assert_snapshot!(out);
}

#[test]
fn explain_anthropic_calibrated_from_input_tokens() {
    // The document estimates to 3,351 tokens; Anthropic billed 3,000 for it:
    // every count is scaled by 3,000 / 3,351 = 0.895 (rounded up per message),
    // so the request comes to 471 + 14 + 2,520 = 3,005.
    let out = ok(&[
        "chat",
        ANTHROPIC,
        "--max-tokens",
        "1500",
        "--explain",
        "--input-tokens",
        "3000",
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn anthropic_output_keeps_the_system_and_starts_with_a_user_turn() {
    let out = ok(&["chat", ANTHROPIC, "--max-tokens", "1500"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let original = json_of(ANTHROPIC);
    assert_eq!(v["system"], original["system"]);
    assert_eq!(v["thinking"], original["thinking"]);
    let m = v["messages"].as_array().unwrap();
    assert_eq!(m[0]["role"], "user");
    // Every tool_use kept has its tool_result kept, and the other way round.
    let text = serde_json::to_string(m).unwrap();
    assert_eq!(
        text.contains("toolu_01"),
        text.contains("\"tool_use_id\":\"toolu_01\"")
    );
}

#[test]
fn stdin_and_an_explicit_provider() {
    let doc = r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"bye"}]"#;
    let o = cupel(
        &["chat", "-", "--max-tokens", "12", "--provider", "openai"],
        Some(doc),
    );
    assert_eq!(o.status.code(), Some(0));
    // o200k_base: "bye" is 3 + "user" 1 + "bye" 1 = 5; with 3 for priming, 8 of 12;
    // "hello" (3 + 1 + 1 = 5) would make 13 > 12: cut.
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v, serde_json::json!([{"role": "user", "content": "bye"}]));
}

#[test]
// A table of error cases, one after another: long, but flat.
#[allow(clippy::too_many_lines)]
fn errors() {
    let e = fails(&["chat", "-", "--max-tokens", "10"], Some("[1,"), 2);
    insta::assert_snapshot!("chat_error_bad_json", e);
    let e = fails(
        &["chat", "-", "--max-tokens", "10"],
        Some(r#"[{"role": 1}]"#),
        2,
    );
    insta::assert_snapshot!("chat_error_not_a_message", e);
    let e = fails(&["chat", AGENT, "--max-tokens", "50"], None, 1);
    insta::assert_snapshot!("chat_error_pinned_over_budget", e);
    // 27 pinned + 115 overhead = 142; 160 leaves 18 for #40 (22 tokens).
    let e = fails(&["chat", AGENT, "--max-tokens", "160"], None, 1);
    insta::assert_snapshot!("chat_error_nothing_fits", e);
    let e = fails(
        &["chat", AGENT, "--max-tokens", "2000", "--encoding", "bogus"],
        None,
        2,
    );
    insta::assert_snapshot!("chat_error_unknown_encoding", e);
    // A one-task loop with the task's pin turned off and exchanges as the
    // unit: one unit, the whole conversation, over the budget.
    let e = fails(
        &[
            "chat",
            LOOP,
            "--max-tokens",
            "400",
            "--no-pin-first-user",
            "--granularity",
            "exchange",
        ],
        None,
        1,
    );
    insta::assert_snapshot!("chat_error_nothing_fits_whole_conversation", e);
    // Turned off with messages as the unit: no window can start on a user
    // message (the only one is the task, behind the cut).
    let e = fails(
        &["chat", LOOP, "--max-tokens", "400", "--no-pin-first-user"],
        None,
        1,
    );
    insta::assert_snapshot!("chat_error_no_conversation", e);
    // A pinned prompt that answers a tool call.
    let e = fails(
        &["chat", "-", "--max-tokens", "100"],
        Some(
            r#"[{"role": "system", "content": "s", "tool_call_id": "call_1"}, {"role": "user", "content": "u"}]"#,
        ),
        2,
    );
    insta::assert_snapshot!("chat_error_pinned_tool_traffic", e);
    let e = fails(&["chat", AGENT, "--max-tokens", "-5"], None, 2);
    assert_eq!(e, "error: --max-tokens must be positive, got -5\n");
    let e = fails(
        &[
            "chat",
            AGENT,
            "--max-tokens",
            "2000",
            "--input-tokens",
            "900",
        ],
        None,
        2,
    );
    assert_eq!(
        e,
        "error: --input-tokens calibrates an estimate (Anthropic, OpenAI Responses, Gemini); a Chat Completions document is counted with its tokenizer\n"
    );
    let e = fails(
        &[
            "chat",
            ANTHROPIC,
            "--max-tokens",
            "2000",
            "--input-tokens",
            "0",
        ],
        None,
        2,
    );
    assert_eq!(e, "error: --input-tokens must be positive, got 0\n");
    let e = fails(
        &[
            "chat",
            "tests/fixtures/chat/missing.json",
            "--max-tokens",
            "5",
        ],
        None,
        2,
    );
    assert!(
        e.starts_with("error: cannot read transcript `tests/fixtures/chat/missing.json`"),
        "{e}"
    );
    // Tool definitions that are not an array: named, not counted as zero.
    let e = fails(
        &[
            "chat",
            "-",
            "--max-tokens",
            "100",
            "--provider",
            "anthropic",
        ],
        Some(r#"{"tools": "lookup", "messages": [{"role": "user", "content": "hi"}]}"#),
        2,
    );
    assert_eq!(
        e,
        "error: <stdin>: tools: `tools` must be an array of tool definitions, not a string\n"
    );
}

#[test]
fn cache_breakpoints_mark_the_pinned_prompt_and_the_end_only_on_request() {
    // A 2,146-token system prompt ("word " × 1,500: 7,500 characters / 3.5 =
    // 2,142.9 -> 2,143, plus the estimate's 3 per message) and two short
    // turns. Both the pinned end (2,146 tokens) and the window end are at
    // least Anthropic's 1,024-token minimum: markers after the system prompt
    // and on the last message; nothing on the first user turn.
    let doc = serde_json::json!({
        "model": "claude-sonnet-4-5",
        "system": "word ".repeat(1_500),
        "messages": [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": "second question"}
        ]
    })
    .to_string();
    let plain = stdout(&cupel(&["chat", "-", "--max-tokens", "10000"], Some(&doc)));
    assert!(!plain.contains("cache_control"), "{plain}");
    let marked = stdout(&cupel(
        &["chat", "-", "--max-tokens", "10000", "--cache-breakpoints"],
        Some(&doc),
    ));
    let v: Value = serde_json::from_str(&marked).unwrap();
    assert_eq!(v["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        v["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert!(v["messages"][0]["content"].is_string());
    assert_eq!(marked.matches("cache_control").count(), 2);
}

#[test]
fn old_tool_results_are_shortened_before_their_exchange_is_dropped() {
    let log: Vec<String> = (0..3_000)
        .map(|i| format!("line {i}: disk usage 99%"))
        .collect();
    let doc = serde_json::json!([
        {"role": "user", "content": "Why did the deploy fail?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "lookup_logs", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": log.join("\n")},
        {"role": "assistant", "content": "The disk was full."},
        {"role": "user", "content": "Is it fixed now?"}
    ])
    .to_string();
    // Without ageing, 400 tokens cannot hold the log's exchange: only the
    // newest user message is left.
    let plain = cupel(&["chat", "-", "--max-tokens", "400"], Some(&doc));
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(plain.as_array().unwrap().len(), 1);
    // With it, the log goes in as head and tail (at most 120 tokens) and
    // every message stays, the call unchanged.
    let aged = cupel(
        &[
            "chat",
            "-",
            "--max-tokens",
            "400",
            "--age-tool-results",
            "1",
            "--truncate-results-to",
            "120",
        ],
        Some(&doc),
    );
    assert_eq!(aged.status.code(), Some(0), "{}", stderr(&aged));
    let aged: serde_json::Value = serde_json::from_slice(&aged.stdout).unwrap();
    let aged = aged.as_array().unwrap();
    assert_eq!(aged.len(), 5);
    assert_eq!(aged[1]["tool_calls"][0]["id"], "call_1");
    let text = aged[2]["content"].as_str().unwrap();
    assert!(text.starts_with("line 0: disk usage 99%"), "{text}");
    assert!(text.contains(" tokens omitted …]"), "{text}");
    assert!(text.ends_with("line 2999: disk usage 99%"), "{text}");
    let explain = stdout(&cupel(
        &[
            "chat",
            "-",
            "--max-tokens",
            "400",
            "--age-tool-results",
            "1",
            "--explain",
        ],
        Some(&doc),
    ));
    assert!(explain.contains("kept as head and tail"), "{explain}");
}

#[test]
fn explain_a_one_task_loop() {
    // The task (#1) is pinned automatically; the newest tool groups fill
    // the rest of the 800 tokens.
    let out = ok(&["chat", LOOP, "--max-tokens", "800", "--explain"]);
    insta::assert_snapshot!(out);
    let v: Value = serde_json::from_str(&ok(&["chat", LOOP, "--max-tokens", "800"])).unwrap();
    let kept = v.as_array().unwrap();
    assert_eq!(kept[0]["role"], "system");
    assert_eq!(kept[1]["content"], "Fix the failing test in parser.rs");
    assert_eq!(kept[2]["role"], "assistant");
}

#[test]
fn explain_mixed_anthropic_turns() {
    // #9 starts the window: its text is kept, its result for toolu_3 goes
    // with its call; the row says it is rewritten.
    let out = ok(&["chat", MIXED, "--max-tokens", "1200", "--explain"]);
    insta::assert_snapshot!(out);
    let v: Value = serde_json::from_str(&ok(&["chat", MIXED, "--max-tokens", "1200"])).unwrap();
    let first = &v["messages"][0];
    assert_eq!(first["role"], "user");
    assert_eq!(
        first["content"],
        serde_json::json!([{"type": "text", "text": "Thanks, and now question 3?"}])
    );
}

#[test]
fn explain_prints_what_it_knows_when_the_trim_fails() {
    let o = cupel(
        &[
            "chat",
            LOOP,
            "--max-tokens",
            "400",
            "--no-pin-first-user",
            "--explain",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    insta::assert_snapshot!(stdout(&o));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
}

#[test]
fn output_is_the_input_text_byte_for_byte_and_compact_on_request() {
    let path = format!("{}/{LOOP}", env!("CARGO_MANIFEST_DIR"));
    let input = std::fs::read_to_string(&path).unwrap();
    let out = ok(&["chat", LOOP, "--max-tokens", "100000"]);
    assert_eq!(out.trim_end(), input.trim_end());
    let compact = ok(&["chat", LOOP, "--max-tokens", "100000", "--compact"]);
    assert_eq!(compact.lines().count(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&compact).unwrap(),
        serde_json::from_str::<Value>(&input).unwrap()
    );
}

fn text_of(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn responses_and_gemini_with_nothing_to_drop_come_back_byte_for_byte() {
    for doc in [RESPONSES, GEMINI] {
        assert_eq!(ok(&["chat", doc, "--max-tokens", "100000"]), text_of(doc));
    }
}

#[test]
fn explain_responses_keeps_reasoning_with_its_calls() {
    // Counted with o200k_base: overhead 41, #0 instructions 15, so 94 of 150
    // are left; the newest unit #6..#11 (user 10, then reasoning 10 with the
    // parallel calls 10 + 10 and outputs 16 + 16) needs 72 -> 22 left; #5
    // (15) -> 7 left; the group #2..#4 (0 + 10 + 17 = 27, an earlier turn's
    // reasoning being free) does not fit; #5 is then dropped only for the
    // start rule.
    let out = ok(&["chat", RESPONSES, "--max-tokens", "150", "--explain"]);
    insta::assert_snapshot!(out);
    let window: Value =
        serde_json::from_str(&ok(&["chat", RESPONSES, "--max-tokens", "150"])).unwrap();
    let original = json_of(RESPONSES);
    let input = window["input"].as_array().unwrap();
    assert_eq!(input.len(), 6);
    assert_eq!(input[0], original["input"][5]);
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[5], original["input"][10]);
    assert_eq!(window["instructions"], original["instructions"]);
    assert_eq!(window["include"], original["include"]);
}

#[test]
fn explain_gemini_keeps_call_turns_with_their_responses() {
    let out = ok(&["chat", GEMINI, "--max-tokens", "200", "--explain"]);
    insta::assert_snapshot!(out);
    let text = ok(&["chat", GEMINI, "--max-tokens", "200"]);
    // The kept parallel-call turn is the input's own text, signature included.
    assert!(text.contains(r#"{"functionCall": {"name": "get_current_temperature", "args": {"location": "Paris"}}, "thoughtSignature": "U2lnX0MtcGFyYWxsZWw="}"#));
    let window: Value = serde_json::from_str(&text).unwrap();
    let original = json_of(GEMINI);
    assert_eq!(window["contents"].as_array().unwrap().len(), 3);
    assert_eq!(window["contents"][0], original["contents"][6]);
    assert_eq!(window["systemInstruction"], original["systemInstruction"]);
    assert_eq!(window["generationConfig"], original["generationConfig"]);
}

#[test]
fn a_forced_format_that_does_not_fit_says_what_was_tried_and_where() {
    let e = fails(
        &[
            "chat",
            AGENT,
            "--max-tokens",
            "1000",
            "--provider",
            "gemini",
        ],
        None,
        2,
    );
    insta::assert_snapshot!("chat_error_forced_gemini", e);
    let e = fails(
        &["chat", "-", "--max-tokens", "100"],
        Some(
            r#"{"input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": {}}]}"#,
        ),
        2,
    );
    insta::assert_snapshot!("chat_error_responses_arguments", e);
}

#[test]
fn input_tokens_calibrate_responses_and_gemini() {
    // The Gemini fixture estimates to 270 tokens (127 of tools, 143 of
    // contents: see the explain snapshot); 540 reported doubles every count.
    let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let out = flat(ok(&[
        "chat",
        GEMINI,
        "--max-tokens",
        "100000",
        "--input-tokens",
        "540",
        "--explain",
    ]));
    assert!(out.contains("calibrated x2.000"), "{out}");
    assert!(
        out.contains("from usageMetadata.promptTokenCount 540 (estimated 270)"),
        "{out}"
    );
    // The Responses fixture counts 182 with o200k_base (the 185 of the table
    // at full budget less #2's 3: an earlier turn's reasoning is free); 364
    // doubles it.
    let out = flat(ok(&[
        "chat",
        RESPONSES,
        "--max-tokens",
        "100000",
        "--input-tokens",
        "364",
        "--explain",
    ]));
    assert!(
        out.contains("from usage.input_tokens 364 (estimated 182)"),
        "{out}"
    );
    assert!(out.contains("calibrated x2.000"), "{out}");
}

/// A long chat whose newest question is about an early exchange.
const LONG: &str = "tests/fixtures/chat/openai-long-chat.json";

#[test]
fn explain_recall_brings_back_the_tokyo_booking() {
    // 300 tokens: the newest turns take at most half of the conversation
    // budget; the booking exchange (the user's request, the book_flight
    // call with its result, the confirmation) holds "tokyo", "flight" and
    // "seat" of the question and is recalled whole into one context
    // message after the system prompt; the unrelated suggestions are not.
    let out = ok(&["chat", LONG, "--max-tokens", "300", "--recall", "--explain"]);
    insta::assert_snapshot!(out);
}

#[test]
fn recall_writes_one_context_message_after_the_system_prompt() {
    let out = ok(&["chat", LONG, "--max-tokens", "300", "--recall"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let original = json_of(LONG);
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs[0], original["messages"][0]);
    assert_eq!(msgs[1]["role"], "system");
    let text = msgs[1]["content"].as_str().unwrap();
    assert!(text.starts_with("Earlier in this conversation (recalled for relevance):\n[2026-03-02] user: Please book me a flight to Tokyo"), "{text}");
    assert!(text.contains("[result of call_1] Booked NH 204"), "{text}");
    // The newest turns follow as read, ending with the question.
    assert_eq!(msgs.last(), original["messages"].as_array().unwrap().last());
    // An explicit query and share; a bad share is an input error.
    let out = ok(&[
        "chat",
        LONG,
        "--max-tokens",
        "300",
        "--recall",
        "--recall-query",
        "library card",
        "--recall-share",
        "0.6",
        "--explain",
    ]);
    assert!(
        out.contains("query \"library card\" (--recall-query)"),
        "{out}"
    );
    assert!(out.contains("matched library, card"), "{out}");
    let err = fails(
        &[
            "chat",
            LONG,
            "--max-tokens",
            "300",
            "--recall",
            "--recall-share",
            "1.5",
        ],
        None,
        2,
    );
    assert!(
        err.contains("recall newest_share must be in (0, 1], got 1.5"),
        "{err}"
    );
}
