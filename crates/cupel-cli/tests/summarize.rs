//! `cupel chat --summarize` / `--summarize-with`: the running summary on
//! the command line, with and without a state file.
#![cfg(feature = "chat")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use common::{cupel, stderr, stdout};
use serde_json::{Value, json};

/// A fresh directory under the system's temporary directory.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cupel-summarize-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An OpenAI transcript: a system prompt and `n` exchanges, each user
/// message and reply about 60 tokens, then the next question (each
/// transcript extends the one before).
fn transcript(n: usize) -> Value {
    let mut m = vec![json!({"role": "system", "content": "You are a travel agent."})];
    for i in 0..n {
        m.push(json!({"role": "user", "content": format!("Question {i}: {}", "please check flight ".repeat(15))}));
        m.push(json!({"role": "assistant", "content": format!("Answer {i}: {}", "the flight is on time. ".repeat(12))}));
    }
    m.push(json!({"role": "user", "content": format!("Question {n}: {}", "please check flight ".repeat(15))}));
    Value::Array(m)
}

fn write(d: &std::path::Path, name: &str, v: &Value) -> String {
    let p = d.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p.to_string_lossy().into_owned()
}

fn header_at(window: &Value, i: usize) -> bool {
    window[i]["content"]
        .as_str()
        .is_some_and(|t| t.starts_with("[Summary of the earlier conversation]"))
}

#[test]
fn a_stateless_trim_folds_what_it_drops_into_a_summary_after_the_system_prompt() {
    let d = dir("stateless");
    let f = write(&d, "t.json", &transcript(10));
    let o = cupel(
        &[
            "chat",
            &f,
            "--max-tokens",
            "600",
            "--summarize",
            "--summary-max-tokens",
            "150",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let w: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(w[0]["role"], "system");
    assert_eq!(w[1]["role"], "system");
    assert!(header_at(&w, 1));
    assert_eq!(w[2]["role"], "user");
    // The digest quotes the first exchange's request.
    assert!(
        w[1]["content"]
            .as_str()
            .unwrap()
            .contains("Asked: Question ")
    );
}

#[test]
fn a_session_keeps_its_summary_in_the_state_and_its_prefix_between_cuts() {
    let d = dir("session");
    let state = d.join("s.json").to_string_lossy().into_owned();
    let mut last: Option<Value> = None;
    let (mut made, mut kept) = (0, 0);
    for n in 1..=10 {
        let f = write(&d, &format!("t{n}.json"), &transcript(n));
        let o = cupel(
            &[
                "chat",
                &f,
                "--max-tokens",
                "800",
                "--state",
                &state,
                "--summarize",
                "--summary-max-tokens",
                "150",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let w: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        // The state file (spec 20, "Session state and stores"): the window's
        // text and, beside it, the running summary.
        let window: Value = serde_json::from_str(saved["window"].as_str().unwrap()).unwrap();
        assert_eq!(window, w);
        if header_at(&w, 1) {
            assert_eq!(
                saved["summary"]["summary"]["text"].as_str().unwrap(),
                w[1]["content"]
                    .as_str()
                    .unwrap()
                    .split_once('\n')
                    .unwrap()
                    .1
            );
            if let Some(prev) = &last
                && header_at(prev, 1)
                && prev[1] == w[1]
            {
                // Unchanged summary: no cut, the previous window is the prefix.
                let p = prev.as_array().unwrap();
                assert_eq!(&w.as_array().unwrap()[..p.len()], &p[..]);
                kept += 1;
            } else {
                made += 1;
            }
        }
        last = Some(w);
    }
    assert!(made >= 2, "cuts made summaries: {made}");
    assert!(kept >= 2, "turns between cuts kept the prefix: {kept}");
}

#[test]
fn a_failing_command_is_an_error_after_the_window_is_written() {
    let d = dir("failing");
    let f = write(&d, "t.json", &transcript(10));
    let args = |cmd: &'static str, extra: &'static [&'static str]| {
        let mut a = vec![
            "chat".to_string(),
            f.clone(),
            "--max-tokens".into(),
            "600".into(),
            "--summary-max-tokens".into(),
            "150".into(),
            "--summarize-with".into(),
            cmd.into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    for (cmd, extra, words) in [
        (
            "echo broken >&2; exit 1",
            &[][..],
            "exited with exit status: 1: broken",
        ),
        (
            "sleep 5",
            &["--summarize-timeout", "0.2"][..],
            "did not finish within 0.2 s",
        ),
        ("printf 'ok \\377'", &[][..], "invalid UTF-8 at byte 3"),
        (
            "head -c 11000000 /dev/zero | tr '\\0' a",
            &[][..],
            "more than 10485760 bytes",
        ),
    ] {
        let a = args(cmd, extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = cupel(&a, None);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("no new summary"), "{err}");
        assert!(err.contains(words), "{cmd}: {err}");
        // The window is still written, valid, without a summary.
        let w: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(w[1]["role"], "user");
    }
    let ok = args("cat > /dev/null; echo 'From a command.'", &[]);
    let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
    let o = cupel(&ok, None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let w: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        w[1]["content"],
        "[Summary of the earlier conversation]\nFrom a command."
    );
}

#[test]
fn summary_flags_are_checked() {
    let d = dir("flags");
    let f = write(&d, "t.json", &transcript(2));
    let o = cupel(
        &[
            "chat",
            &f,
            "--max-tokens",
            "600",
            "--summary-max-tokens",
            "10",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs --summarize"));
    let o = cupel(
        &[
            "chat",
            &f,
            "--max-tokens",
            "600",
            "--summarize",
            "--summary-max-tokens",
            "600",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("lower --summary-max-tokens"),
        "{}",
        stderr(&o)
    );
}
