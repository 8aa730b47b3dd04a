//! `cupel chat --state` and `cupel cache-sim`.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{fails, ok};
use serde_json::{Value, json};

fn tmp(name: &str) -> String {
    format!("{}/{name}", env!("CARGO_TARGET_TMPDIR"))
}

/// An Anthropic body: a long system prompt (about 1,300 estimated tokens:
/// 1,167 `cl100k_base` tokens times 1.1) and `n` exchanges of about 230.
fn body(n: usize) -> Value {
    let mut messages = Vec::new();
    for i in 0..n {
        messages.push(
            json!({"role": "user", "content": format!("question {i} {}", "word ".repeat(200))}),
        );
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    json!({"model": "claude", "system": "rules ".repeat(1_167), "messages": messages})
}

fn write(path: &str, v: &Value) {
    std::fs::write(path, serde_json::to_string(v).unwrap()).unwrap();
}

#[test]
fn state_keeps_the_previous_window_and_marks_the_request() {
    let (t1, t2, state) = (tmp("s-t1.json"), tmp("s-t2.json"), tmp("s-state.json"));
    let _ = std::fs::remove_file(&state);
    write(&t1, &body(2));
    write(&t2, &body(3));
    let first: Value = serde_json::from_str(&ok(&[
        "chat",
        &t1,
        "--max-tokens",
        "100000",
        "--state",
        &state,
    ]))
    .unwrap();
    // The state (format 1, version 1 after the first commit) holds the
    // window as sent: the Anthropic body's system prompt and 5 messages.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        (saved["format"].as_u64(), saved["version"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(saved["provider"], "anthropic");
    let window: Value = serde_json::from_str(saved["window"].as_str().unwrap()).unwrap();
    assert_eq!(window["messages"].as_array().unwrap().len(), 5);
    let second: Value = serde_json::from_str(&ok(&[
        "chat",
        &t2,
        "--max-tokens",
        "100000",
        "--state",
        &state,
    ]))
    .unwrap();
    let m1 = first["messages"].as_array().unwrap();
    let m2 = second["messages"].as_array().unwrap();
    // The first window's messages come back first, in order; the markers
    // (never more than 4) are the only difference.
    assert_eq!(m2.len(), 7);
    for (a, b) in m1.iter().zip(m2) {
        assert_eq!(a["role"], b["role"]);
    }
    let markers = second.to_string().matches("cache_control").count();
    assert!((1..=4).contains(&markers), "{markers}");
    // The system prompt (about 2,000 tokens, over the 1,024 minimum) is marked.
    assert_eq!(second["system"][0]["cache_control"]["type"], "ephemeral");
    // The window is the system prompt and 7 messages: all kept.
    let explain = ok(&[
        "chat",
        &t2,
        "--max-tokens",
        "100000",
        "--state",
        &state,
        "--explain",
    ]);
    // Turns are numbered by the requests the transcript holds: body(3) has
    // 3 answered requests (one assistant message each), so this is turn 4.
    assert!(
        explain.starts_with("turn 4: kept the previous window (8 messages), appended 0"),
        "{explain}"
    );
    // Then one line per message and where the markers go: the system
    // prompt (#0, over the minimum) is always marked, the window's end
    // (#7) too.
    assert!(
        explain.contains("\n#0 system kept: pinned prompt ("),
        "{explain}"
    );
    assert!(
        explain.contains("\n#7 user kept: unchanged prefix, same bytes as the previous window ("),
        "{explain}"
    );
    let markers = explain.lines().last().unwrap();
    assert!(
        markers.starts_with("cache markers after #0,") && markers.ends_with(", #7"),
        "{markers}"
    );
}

#[test]
fn a_state_older_than_the_cache_lifetime_expects_nothing_from_the_cache() {
    let (t1, t2, state) = (tmp("x-t1.json"), tmp("x-t2.json"), tmp("x-state.json"));
    let _ = std::fs::remove_file(&state);
    write(&t1, &body(2));
    write(&t2, &body(3));
    let args = |t: &str| {
        [
            "chat",
            t,
            "--max-tokens",
            "100000",
            "--state",
            &state,
            "--explain",
        ]
        .map(str::to_owned)
    };
    let run = |t: &str| ok(&args(t).iter().map(String::as_str).collect::<Vec<_>>());
    run(&t1);
    // The previous request was sent ten minutes ago; Anthropic's entries
    // live five.
    let ten_minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&state)
        .unwrap()
        .set_modified(ten_minutes_ago)
        .unwrap();
    let second = run(&t2);
    // body(3) holds three answered requests: turn 4. The window is made as
    // always: it keeps body(2)'s window up to #4 (body(2)'s #5 was "and
    // now?", body(3)'s is "question 2"), but reads nothing from the cache.
    assert!(
        second.starts_with(
            "turn 4: the cache had expired (10m since the previous request; a prefix lives 5m unused); the transcript differs from the previous window at its message #5"
        ),
        "{second}"
    );
    assert!(second.contains(": 0 from cache, "), "{second}");
    // Written just now: the next call reads the cache again.
    let third = run(&t2);
    assert!(
        third.starts_with("turn 4: kept the previous window"),
        "{third}"
    );
    assert!(!third.contains(": 0 from cache, "), "{third}");
}

#[test]
fn cache_sim_prints_three_strategies_and_plots() {
    let t = tmp("sim.json");
    write(&t, &body(20));
    let svg = tmp("sim.svg");
    // 1,300 + 20 exchanges of 230 = 5,900: over 4,500, so the session cuts.
    let out = ok(&[
        "cache-sim",
        &t,
        "--max-tokens",
        "4500",
        "--provider",
        "anthropic",
        "--plot",
        &svg,
    ]);
    for s in [
        "newest-messages",
        "chat-trim",
        "cache-aware",
        "removed exchanges",
    ] {
        assert!(out.contains(s), "{s} missing:\n{out}");
    }
    // The per-request table names each strategy over its five columns.
    let mut lines = out.lines().skip_while(|l| !l.contains("| newest-messages"));
    let group = lines.next().unwrap_or_default();
    assert!(
        group.contains("| chat-trim") && group.trim_end().ends_with("| cache-aware"),
        "{out}"
    );
    let columns = lines.next().unwrap_or_default();
    assert!(columns.trim_start().starts_with("req"), "{out}");
    assert_eq!(columns.matches("uncached      cost").count(), 3, "{out}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let err = fails(
        &[
            "cache-sim",
            &t,
            "--max-tokens",
            "6000",
            "--provider",
            "mistral",
        ],
        None,
        2,
    );
    assert!(err.contains("unknown cache profile `mistral`"), "{err}");
}

/// An Anthropic agent body: the system prompt of [`body`], then `n`
/// exchanges of a question, a `grep` call, its result (about 230 estimated
/// tokens) and an answer, then a last question.
fn agent_body(n: usize) -> Value {
    let mut messages = Vec::new();
    for i in 0..n {
        let id = format!("toolu_{i:03}");
        messages.push(
            json!({"role": "user", "content": format!("question {i} {}", "word ".repeat(40))}),
        );
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "grep", "input": {"q": i}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": format!("hit {i} {}", "x".repeat(1_500))}]}));
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    json!({"model": "claude", "system": "rules ".repeat(1_167), "messages": messages})
}

#[test]
fn state_with_ageing_shortens_results_only_when_it_cuts() {
    let (t1, t2, t3, state) = (
        tmp("age-t1.json"),
        tmp("age-t2.json"),
        tmp("age-t3.json"),
        tmp("age-state.json"),
    );
    let _ = std::fs::remove_file(&state);
    // Each exchange is about 300 tokens; 8 fit in 5,000 with the 1,300-token
    // system prompt (3,700), 14 do not (5,500).
    write(&t1, &agent_body(8));
    write(&t2, &agent_body(14));
    // Turn 3 appends the answer to "and now?" and a new question.
    let mut next = agent_body(14);
    let m = next["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": "Done."}));
    m.push(json!({"role": "user", "content": "Next?"}));
    write(&t3, &next);
    let args = |t: &str, explain: bool| {
        let mut a = vec!["chat", t, "--max-tokens", "5000", "--state", &state];
        a.extend(["--age-tool-results", "2"]);
        if explain {
            a.push("--explain");
        }
        a.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |t: &str| {
        let a = args(t, true);
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Turn numbers count the requests each transcript already holds (two
    // assistant messages per exchange: the tool call and the answer):
    // agent_body(8) holds 16, so it is turn 17; agent_body(14) turn 29; t3
    // adds the answer "Done.", turn 30 — as `cache-sim` numbers them.
    let first = run(&t1);
    assert!(first.starts_with("turn 17: first window"), "{first}");
    assert!(
        !first.contains("shortened"),
        "nothing is cut, so nothing is aged: {first}"
    );
    let second = run(&t2);
    assert!(second.starts_with("turn 29: window reached"), "{second}");
    assert!(second.contains(" old tool result"), "{second}");
    assert!(second.contains("(shortened from "), "{second}");
    // The state holds the shortened form, so the next turn, with two more
    // messages that fit, keeps the whole previous window.
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("tokens omitted"), "{saved}");
    let third = run(&t3);
    assert!(
        third.starts_with("turn 30: kept the previous window"),
        "{third}"
    );
    assert!(
        third
            .contains("kept: unchanged prefix, same bytes as the previous window (shortened from "),
        "{third}"
    );
}

#[test]
fn a_request_whose_newest_exchange_is_over_the_budget_is_reported_and_the_replay_goes_on() {
    // agent_41.json: message #19 is an assistant tool call (26 tokens) whose
    // result #20 holds a log of 27,906 tokens; one unit of 26 + 27,906 =
    // 27,932. Requests end before each assistant message after the first
    // conversation message (#2, #4, #6, #8, #10, #12, #15, #17, #19, #21,
    // ...: 19 in all), so request 10 holds the first 21 messages and ends
    // with that unit, which cannot fit 2,000 tokens. Request 11 ends
    // before #23: its newest exchange fits, and the replay goes on.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cupel-chat/tests/fixtures/agent_41.json"
    );
    let o = common::cupel(&["cache-sim", fixture, "--max-tokens", "2000"], None);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    // The whole report first: the table, its failed row, the totals.
    assert!(out.contains("19 requests"), "{out}");
    let row = |k: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{k} ")))
            .unwrap_or_default()
            .to_string()
    };
    // Request 10 failed for all three strategies: nothing sent, nothing
    // billed. Requests 9 and 11 were sent and billed by all three.
    assert_eq!(row("10").matches("failed").count(), 3, "{out}");
    let dashes = row("10").split_whitespace().filter(|w| *w == "-").count();
    assert_eq!(dashes, 12, "{out}");
    for k in ["9", "11"] {
        assert!(!row(k).contains("failed"), "{out}");
    }
    // The totals say how many requests each strategy could not window.
    let totals = out
        .lines()
        .skip_while(|l| !l.starts_with("strategy "))
        .take(4)
        .collect::<Vec<_>>();
    assert!(totals[0].ends_with(" failed"), "{out}");
    for t in &totals[1..] {
        assert!(t.ends_with(" 1"), "{out}");
    }
    // Then the failures, one line per strategy here (each words its
    // newest unit its own way; chat-trim as `cupel chat` does).
    assert!(
        out.contains(
            "failed: 3 in 1 request (not sent, so billed nothing: newest-messages 1, chat-trim 1, cache-aware 1)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "  request 10 (the first 21 messages), chat-trim: nothing fits: the newest unit \
             (#19 assistant tool call fetch_logs (call_4) to #20, 2 messages) needs 27932 tokens"
        ),
        "{out}"
    );
    // On stderr, the first failure as `cupel chat` reports it, and the exit
    // code `cupel chat` gives the request's first 21 messages.
    assert!(
        err.starts_with(
            "error: request 10 (the first 21 messages) cannot be windowed: nothing fits: \
             the newest unit (#19 assistant tool call fetch_logs (call_4) to #20, 2 messages) \
             needs 27932 tokens"
        ),
        "{err}"
    );
    assert!(
        err.contains("(3 failures in 1 request, listed above)"),
        "{err}"
    );
    assert!(err.contains("\nhint: raise --max-tokens"), "{err}");
    let mut prefix: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    prefix["messages"].as_array_mut().unwrap().truncate(21);
    let request_10 = tmp("agent_41-request-10.json");
    write(&request_10, &prefix);
    let chat_err = fails(&["chat", &request_10, "--max-tokens", "2000"], None, 1);
    assert!(
        chat_err.starts_with(
            "error: nothing fits: the newest unit (#19 assistant tool call fetch_logs (call_4) to #20, 2 messages) needs 27932 tokens"
        ),
        "{chat_err}"
    );
    assert_eq!(o.status.code(), Some(1));
    // With room for that unit every request is replayed and billed.
    let out = ok(&["cache-sim", fixture, "--max-tokens", "30000", "--totals"]);
    assert!(out.contains("19 requests"), "{out}");
    assert!(!out.contains("failed: "), "{out}");
}

/// An Anthropic body whose caller marked the tools, the system prompt, a
/// nested tool result and two messages: 6 markers, over Anthropic's 4.
fn over_marked_body() -> Value {
    let mark = json!({"type": "ephemeral"});
    let mut b = agent_body(3);
    b["tools"] = json!([
        {"name": "grep", "input_schema": {"type": "object"}},
        {"name": "read", "input_schema": {"type": "object"}, "cache_control": mark}
    ]);
    b["system"] = json!([{"type": "text", "text": "rules ".repeat(1_167), "cache_control": mark}]);
    let m = b["messages"].as_array_mut().unwrap();
    // #2 is the first tool result: its content as a block array, marked.
    m[2]["content"][0]["content"] = json!([{"type": "text", "text": "hit", "cache_control": mark}]);
    m[0]["content"] = json!([{"type": "text", "text": "question 0", "cache_control": mark}]);
    m[4]["content"] = json!([{"type": "text", "text": "question 1", "cache_control": mark}]);
    b["cache_control"] = mark;
    b
}

#[test]
fn requests_carry_at_most_four_markers_whatever_the_input_had() {
    let input = tmp("over-marked.json");
    write(&input, &over_marked_body());
    assert_eq!(
        std::fs::read_to_string(&input)
            .unwrap()
            .matches("cache_control")
            .count(),
        6
    );
    // A one-off request: the caller's 6 go; the planned ones are the end of
    // the system prompt (about 2,000 tokens) and the end of the window.
    let one_off: Value = serde_json::from_str(&ok(&[
        "chat",
        &input,
        "--max-tokens",
        "100000",
        "--cache-breakpoints",
    ]))
    .unwrap();
    let marks = one_off.to_string().matches("cache_control").count();
    assert_eq!(marks, 2, "{one_off}");
    assert_eq!(one_off["system"][0]["cache_control"]["type"], "ephemeral");
    let last = one_off["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"][0]["cache_control"]["type"], "ephemeral");
    // The same with a session (--state), twice: never more than 4.
    let state = tmp("over-marked-state.json");
    let _ = std::fs::remove_file(&state);
    for _ in 0..2 {
        let request = ok(&["chat", &input, "--max-tokens", "100000", "--state", &state]);
        let marks = request.matches("cache_control").count();
        assert!((1..=4).contains(&marks), "{marks}: {request}");
        let v: Value = serde_json::from_str(&request).unwrap();
        assert!(v.get("cache_control").is_none());
        assert!(v["tools"][1].get("cache_control").is_none());
        assert!(
            v["messages"][2]["content"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
    }
}

#[test]
fn many_failures_are_listed_up_to_ten_then_counted() {
    // agent_41.json's system prompt (27 tokens) and request overhead (115:
    // its tool definitions and reply priming) need 142 tokens: at 100 no
    // request can be sent, by any strategy. All three fail each of the 19
    // requests the same way: 3 x 19 = 57 failures, one line per request;
    // 10 are listed, the other 19 - 10 = 9 (requests 11 to 19) counted.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cupel-chat/tests/fixtures/agent_41.json"
    );
    let o = common::cupel(
        &["cache-sim", fixture, "--max-tokens", "100", "--totals"],
        None,
    );
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        out.contains("failed: 57 in 19 requests (not sent, so billed nothing: newest-messages 19, chat-trim 19, cache-aware 19)\n"),
        "{out}"
    );
    let listed = out.lines().filter(|l| l.starts_with("  request ")).count();
    assert_eq!(listed, 10, "{out}");
    assert!(
        out.contains(
            "  request 10 (the first 21 messages), newest-messages, chat-trim, cache-aware: \
             the pinned messages need 27 tokens and the request overhead 115, 142 in all, over max_tokens 100\n"
        ),
        "{out}"
    );
    assert!(
        out.ends_with("  ... and 9 more lines, requests 11 to 19\n"),
        "{out}"
    );
    assert!(
        err.starts_with(
            "error: request 1 (the first 2 messages) cannot be windowed: the pinned messages need 27 tokens"
        ),
        "{err}"
    );
    assert!(
        err.contains("(57 failures in 19 requests, listed above)"),
        "{err}"
    );
    // `cupel chat` refuses the same prompts with the same code.
    fails(&["chat", fixture, "--max-tokens", "100"], None, 1);
}
