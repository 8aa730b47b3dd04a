//! `cupel chat --state FILE` is safe: concurrent processes on one file never
//! tear it or lose a turn, and an empty, corrupt, truncated, foreign, newer
//! or unwritable state is an error that says what to do (`--reset-state`),
//! never a silent first turn.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::process::{Command, Stdio};

use common::{fails, ok};
use serde_json::{Value, json};

fn tmp(name: &str) -> String {
    let dir = format!("{}/state-file", env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    format!("{dir}/{name}")
}

fn write(path: &str, v: &Value) {
    std::fs::write(path, serde_json::to_string(v).unwrap()).unwrap();
}

/// An OpenAI conversation of `n` answered questions and one open one,
/// opening with `opening`.
fn openai(opening: &str, n: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "Be brief."})];
    messages.push(json!({"role": "user", "content": opening}));
    for i in 0..n {
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
    }
    json!({"messages": messages})
}

fn state_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `cupel chat TRANSCRIPT --max-tokens 1000 --state STATE --explain`.
fn explain(transcript: &str, state: &str) -> String {
    ok(&[
        "chat",
        transcript,
        "--max-tokens",
        "1000",
        "--state",
        state,
        "--explain",
    ])
}

/// Copies the state at `with` to `without`, the ledger removed (when the
/// state exists); whether it had a ledger.
fn without_ledger(with: &str, without: &str) -> bool {
    if !std::path::Path::new(with).exists() {
        return false;
    }
    let mut s = state_json(with);
    let had = s.get("ledger").is_some();
    s.as_object_mut().unwrap().remove("ledger");
    write(without, &s);
    had
}

fn chat(transcript: &str, state: &str) -> String {
    ok(&["chat", transcript, "--max-tokens", "1000", "--state", state])
}

#[test]
fn concurrent_processes_on_one_state_file_commit_every_turn_once() {
    // Eight processes start together on one state file, each a request of
    // the same conversation. Each loads, plans and commits with
    // compare-and-set; a loser re-plans from the winner's state. With no
    // update lost, the version after them is exactly 8 (one per commit),
    // and the file is one whole state.
    let state = tmp("concurrent.json");
    let _ = std::fs::remove_file(&state);
    let transcripts: Vec<String> = (0..8)
        .map(|i| {
            let t = tmp(&format!("concurrent-{i}.json"));
            write(&t, &openai("Plan a trip.", i));
            t
        })
        .collect();
    let children: Vec<_> = transcripts
        .iter()
        .map(|t| {
            Command::new(env!("CARGO_BIN_EXE_cupel"))
                .args(["chat", t, "--max-tokens", "1000", "--state", &state])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
    let saved = state_json(&state);
    assert_eq!(saved["version"], 8, "{saved}");
    assert_eq!(saved["format"], 1);
    // The window parses (no torn document) and is one of the requests'.
    let window: Value = serde_json::from_str(saved["window"].as_str().unwrap()).unwrap();
    let n = window["messages"].as_array().unwrap().len();
    // Each transcript has 1 + 1 + 2i messages, i in 0..8: an even count
    // from 2 to 16.
    assert!(n.is_multiple_of(2) && (2..=16).contains(&n), "{n}");
    // No temporary file is left beside it.
    let dir = std::path::Path::new(&state).parent().unwrap();
    let leftovers = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".cupel-state-"))
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn an_empty_state_file_is_an_error_until_reset() {
    let (t, state) = (tmp("empty-t.json"), tmp("empty.json"));
    write(&t, &openai("Hello.", 1));
    std::fs::write(&state, "").unwrap();
    let err = fails(
        &["chat", &t, "--max-tokens", "1000", "--state", &state],
        None,
        2,
    );
    assert!(err.contains("is empty"), "{err}");
    assert!(err.contains("--reset-state"), "{err}");
    // The file was not touched.
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "");
    ok(&[
        "chat",
        &t,
        "--max-tokens",
        "1000",
        "--state",
        &state,
        "--reset-state",
    ]);
    assert_eq!(state_json(&state)["version"], 1);
}

#[test]
fn a_truncated_or_corrupt_state_file_is_an_error_that_names_the_way_out() {
    let (t, state) = (tmp("corrupt-t.json"), tmp("corrupt.json"));
    let _ = std::fs::remove_file(&state);
    write(&t, &openai("Hello.", 1));
    chat(&t, &state);
    let whole = std::fs::read_to_string(&state).unwrap();
    // Cut short (as a torn write would have left it), then two documents
    // run together (what overlapping in-place writes left before).
    for bad in [
        whole[..whole.len() / 2].to_string(),
        format!("{}{}", whole.trim_end(), &whole[10..]),
    ] {
        std::fs::write(&state, &bad).unwrap();
        let err = fails(
            &["chat", &t, "--max-tokens", "1000", "--state", &state],
            None,
            2,
        );
        assert!(err.contains("is unreadable: not JSON"), "{err}");
        assert!(err.contains("--reset-state"), "{err}");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), bad);
    }
}

#[test]
fn a_state_planned_for_another_provider_or_conversation_is_refused() {
    let (oa, an, other, state) = (
        tmp("foreign-openai.json"),
        tmp("foreign-anthropic.json"),
        tmp("foreign-other.json"),
        tmp("foreign.json"),
    );
    let _ = std::fs::remove_file(&state);
    write(&oa, &openai("Plan a trip.", 2));
    write(
        &an,
        &json!({"model": "claude", "system": "Be brief.", "messages": [
            {"role": "user", "content": "Plan a trip."}]}),
    );
    write(&other, &openai("Write a poem.", 2));
    chat(&oa, &state);
    let err = fails(
        &["chat", &an, "--max-tokens", "1000", "--state", &state],
        None,
        2,
    );
    assert!(
        err.contains("the state was planned for openai, this request is anthropic"),
        "{err}"
    );
    assert!(err.contains("--reset-state"), "{err}");
    let err = fails(
        &["chat", &other, "--max-tokens", "1000", "--state", &state],
        None,
        2,
    );
    assert!(err.contains("belongs to another conversation"), "{err}");
    // Another encoding: the state was counted with o200k_base.
    let err = fails(
        &[
            "chat",
            &oa,
            "--max-tokens",
            "1000",
            "--state",
            &state,
            "--encoding",
            "cl100k_base",
        ],
        None,
        2,
    );
    assert!(
        err.contains("counted with openai o200k_base, this session counts with openai cl100k_base"),
        "{err}"
    );
    // The state is still the first turn's.
    assert_eq!(state_json(&state)["version"], 1);
}

#[test]
fn a_state_from_a_newer_cupel_is_refused() {
    let (t, state) = (tmp("newer-t.json"), tmp("newer.json"));
    write(&t, &openai("Hello.", 1));
    write(
        &state,
        &json!({"format": 99, "version": 3, "provider": "openai", "encoding": "x",
                "turn": 2, "window": "[]"}),
    );
    let err = fails(
        &["chat", &t, "--max-tokens", "1000", "--state", &state],
        None,
        2,
    );
    assert!(
        err.contains("has format 99, newer than this version reads (1)"),
        "{err}"
    );
}

#[test]
fn a_state_file_that_cannot_be_written_is_an_error() {
    let t = tmp("unwritable-t.json");
    write(&t, &openai("Hello.", 1));
    let state = format!("{}/no-such-dir/state.json", env!("CARGO_TARGET_TMPDIR"));
    let err = fails(
        &["chat", &t, "--max-tokens", "1000", "--state", &state],
        None,
        2,
    );
    assert!(err.contains("session store unavailable (commit"), "{err}");
    assert!(err.contains("the state's directory must exist"), "{err}");
}

#[test]
fn an_unversioned_window_from_an_older_cupel_is_migrated() {
    // Before state format 1, the file held the window document alone.
    let (t1, t2, state) = (tmp("old-t1.json"), tmp("old-t2.json"), tmp("old.json"));
    write(&t1, &openai("Hello.", 1));
    write(&t2, &openai("Hello.", 2));
    write(&state, &openai("Hello.", 1));
    let explain = ok(&[
        "chat",
        &t2,
        "--max-tokens",
        "1000",
        "--state",
        &state,
        "--explain",
    ]);
    // The old window (4 messages) is kept and the 2 new ones appended.
    assert!(
        explain.starts_with("turn 3: kept the previous window (4 messages), appended 2"),
        "{explain}"
    );
    let saved = state_json(&state);
    assert_eq!(
        (saved["format"].as_u64(), saved["version"].as_u64()),
        (Some(1), Some(1))
    );
    let _ = t1;
}

#[test]
fn a_turn_resumed_with_the_ledger_prints_what_a_turn_without_it_prints() {
    // Twenty turns of one conversation at 1,000 tokens (the window is cut
    // on the way). Each turn runs twice from the same state: as written
    // (with the ledger of what the previous turn counted and planned) and
    // with the ledger removed (the whole transcript counted and planned).
    // The explanations, every row included, must be the same.
    let with = tmp("ledger-with.json");
    let t = tmp("ledger-transcript.json");
    let _ = std::fs::remove_file(&with);
    let mut resumed = 0;
    for n in 0..20 {
        let mut doc = openai("Plan a trip.", n);
        // Long answers, so the window is cut after a few turns.
        for m in doc["messages"].as_array_mut().unwrap().iter_mut() {
            if m["role"] == "assistant" {
                m["content"] = json!(format!(
                    "{} {}",
                    m["content"].as_str().unwrap(),
                    "word ".repeat(60)
                ));
            }
        }
        write(&t, &doc);
        let without = tmp("ledger-without.json");
        resumed += usize::from(without_ledger(&with, &without));
        let a = explain(&t, &with);
        if n > 0 {
            assert_eq!(a, explain(&t, &without), "turn {n}");
        }
    }
    assert_eq!(
        resumed, 19,
        "every state after the first turn keeps a ledger"
    );
}

#[test]
fn a_one_task_agent_loop_keeps_a_window_turn_after_turn() {
    // A one-task agent loop (one user message, then only tool traffic)
    // grows by one tool group per request, well past 1,000 tokens. The
    // session's units are exchanges by default, and the loop is all its
    // pinned task's exchange: before the tail of a pinned task moved by
    // tool group, every turn past the budget failed with "nothing fits".
    // Now each turn keeps the task and the newest tool groups, says it cut
    // messages (tool groups), and a turn resumed with the ledger prints what
    // one without it prints.
    let with = tmp("loop-with.json");
    let without = tmp("loop-without.json");
    let t = tmp("loop-transcript.json");
    let _ = std::fs::remove_file(&with);
    for n in 1..=30 {
        let mut messages = vec![
            json!({"role": "system", "content": "You fix bugs."}),
            json!({"role": "user", "content": "Make the parser tests pass."}),
        ];
        for k in 0..n {
            let id = format!("call_{k}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id,
                "content": format!("output {k} {}", "line ".repeat(60))}));
        }
        write(&t, &json!({"messages": messages}));
        without_ledger(&with, &without);
        let a = explain(&t, &with);
        let newest = 2 * n + 1;
        assert!(a.contains("#1 user kept: pinned task"), "turn {n}:\n{a}");
        assert!(
            a.lines().any(
                |l| l.starts_with(&format!("#{newest} tool result for call_{}", n - 1))
                    && l.contains(" kept")
            ),
            "turn {n}: the newest result is not kept:\n{a}"
        );
        if n == 30 {
            assert!(a.contains("removed by earlier turns' cuts"), "{a}");
        }
        if n > 1 {
            assert_eq!(a, explain(&t, &without), "turn {n}");
        }
    }
}

#[test]
fn a_session_turn_that_cannot_fit_its_newest_unit_says_how_to_make_it_fit() {
    // The task unpinned (--no-pin-first-user): in the session's units
    // (exchanges) the loop is one exchange with the task, 11 messages and
    // 380 tokens, over the 197 left of 200. The session's error carries the
    // chat trim's hint for a unit that is the whole conversation (a finer
    // granularity, or the task pin), not only "raise --max-tokens".
    let t = tmp("unfit-transcript.json");
    let state = tmp("unfit.json");
    let _ = std::fs::remove_file(&state);
    let mut messages = vec![json!({"role": "user", "content": "Make the parser tests pass."})];
    for k in 0..5 {
        let id = format!("call_{k}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "line ".repeat(60)}));
    }
    write(&t, &json!({"messages": messages}));
    let err = fails(
        &[
            "chat",
            &t,
            "--max-tokens",
            "200",
            "--no-pin-first-user",
            "--state",
            &state,
        ],
        None,
        1,
    );
    assert!(
        err.contains("the newest unit is the whole conversation"),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: raise --max-tokens, or use a finer --granularity (message), or --pin-first-user"
        ),
        "{err}"
    );
}
