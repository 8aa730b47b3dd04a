#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 18: hostile and big inputs through the real binary — output paths
//! that stay O(N log N), write errors, duplicate keys, strict documents,
//! JSON Lines input, non-finite scores' rule and the knapsack guard.

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Output;

use common::cupel;

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A file under the target directory's temp area, unique to this test.
fn temp(name: &str, contents: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// `n` identical messages, `tokens = 1`, distinct timestamps (the issue's repro).
fn identical_items_toml(n: usize, dedup: bool) -> String {
    let mut s = String::from("[budget]\nmax_tokens = 1000\ntarget_tokens = 800\n");
    if !dedup {
        s.push_str("[policy]\ndeduplication = false\n[[policy.scorers]]\ntype = \"recency\"\n");
    }
    for i in 0..n {
        let (h, m, sec) = (i / 3600 % 24, i / 60 % 60, i % 60);
        let day = 1 + i / 86_400;
        let _ = write!(
            s,
            "[[items]]\ncontent = \"ok\"\ntokens = 1\ntimestamp = \"2025-01-{day:02}T{h:02}:{m:02}:{sec:02}Z\"\n"
        );
    }
    s
}

#[test]
fn explain_and_select_on_20000_identical_items_are_correct() {
    // Issue 18 (1): 8,000 copies took 44 s (quadratic lookups in the
    // explanation). At 20,000 a quadratic path would take minutes even in
    // release; the timing itself is measured by the `cli` criterion bench.
    let n = 20_000;
    let path = temp("identical.toml", identical_items_toml(n, true).as_bytes());
    let p = path.to_str().unwrap();
    let o = cupel(&["explain", p], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    // With deduplication on, one item survives: the newest (recency ranks it first).
    let included: Vec<&str> = out.lines().filter(|l| l.contains("  included  ")).collect();
    assert_eq!(included.len(), 1, "{}", &out[..2000.min(out.len())]);
    assert!(
        included[0].trim_start().starts_with(&format!("{} ", n - 1)),
        "{}",
        included[0]
    );
    // Every other one names it as the item it duplicates.
    let dups = out
        .matches(&format!("Deduplicated: duplicate of #{}", n - 1))
        .count();
    assert_eq!(dups, n - 1);
    assert!(out.contains(&format!("{n} candidates")));

    // Dedup off: select's text output lists the 800 that fit, by position.
    let path = temp(
        "identical-nodedup.toml",
        identical_items_toml(n, false).as_bytes(),
    );
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("window: 800 of {n} items")),
        "{out:.400}"
    );
    // The newest 800 (recency): positions 19200..19999, each exactly once.
    let rows: Vec<usize> = out
        .lines()
        .filter(|l| l.ends_with("  ok"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let mut sorted = rows.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ((n - 800)..n).collect::<Vec<_>>());
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_error_a_closed_pipe_is_not() {
    // Issue 18 (2): `cupel select x.toml > /dev/full` exited 0 with nothing written.
    let full = std::fs::File::create("/dev/full").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cupel"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["select", "tests/fixtures/chat.toml"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with("error: cannot write the output: "), "{err}");

    // A reader that goes away early: quiet, exit 0.
    use std::io::Read as _;
    let path = temp("pipe.toml", identical_items_toml(5_000, false).as_bytes());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cupel"))
        .args(["explain", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap(); // then drop: EPIPE
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_kind_reserved_twice_in_two_spellings_is_rejected_with_its_path() {
    // Issue 18 (3): `Message = 40` then `message = 0` silently dropped the reservation.
    let toml = "[budget]\nmax_tokens = 1000\ntarget_tokens = 800\n\
                [budget.reserved_slots]\nMessage = 40\nmessage = 0\n\
                [[items]]\ncontent = \"a\"\ntokens = 1\n";
    let path = temp("dup-kind.toml", toml.as_bytes());
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("duplicate key `budget.reserved_slots.message`")
            && err.contains("as `Message` and `message`"),
        "{err}"
    );
    // The same in JSON, and any other key a JSON object repeats.
    let json = r#"{"budget": {"max_tokens": 1000, "target_tokens": 800,
        "reserved_slots": {"Message": 40, "message": 0}}, "items": []}"#;
    let path = temp("dup-kind.json", json.as_bytes());
    let err = stderr(&cupel(&["select", path.to_str().unwrap()], None));
    assert!(
        err.contains("duplicate key `budget.reserved_slots.message`"),
        "{err}"
    );
    let json = r#"{"budget": {"max_tokens": 1000, "target_tokens": 800},
        "items": [{"content": "a", "tokens": 1, "metadata": {"k": "1", "k": "2"}}]}"#;
    let path = temp("dup-meta.json", json.as_bytes());
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("duplicate key `items[0].metadata.k`"), "{err}");
}

#[test]
fn documents_are_objects_and_a_bom_is_skipped_in_every_syntax() {
    // Issue 18 (5): a top-level JSON array was accepted as an input document.
    let path = temp("array.json", br#"[{"content": "a", "tokens": 1}]"#);
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("must be a JSON object"),
        "{}",
        stderr(&o)
    );
    // A BOM: accepted and skipped in TOML, JSON and JSON Lines alike.
    let toml = "\u{feff}[budget]\nmax_tokens = 100\ntarget_tokens = 50\n[[items]]\ncontent = \"a\"\ntokens = 1\n";
    let json = "\u{feff}{\"budget\": {\"max_tokens\": 100, \"target_tokens\": 50}, \"items\": [{\"content\": \"a\", \"tokens\": 1}]}";
    let jsonl = "\u{feff}{\"content\": \"a\", \"tokens\": 1}\n";
    for (name, text) in [("bom.toml", toml), ("bom.json", json), ("bom.jsonl", jsonl)] {
        let path = temp(name, text.as_bytes());
        let o = cupel(
            &[
                "select",
                path.to_str().unwrap(),
                "--max-tokens",
                "100",
                "--target-tokens",
                "50",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(stdout(&o).contains("window: 1 of 1 items"), "{name}");
    }
}

#[test]
fn json_lines_items_with_a_header_file_or_flags() {
    // Issue 18 (6): items as a stream, one per line; budget and policy from
    // --header FILE (or flags). Blank lines are skipped.
    let lines = "{\"content\": \"a\", \"tokens\": 10, \"kind\": \"Document\"}\n\n\
                 {\"content\": \"b\", \"tokens\": 20, \"priority\": 5}\n";
    let items = temp("items.jsonl", lines.as_bytes());
    let header = temp(
        "header.toml",
        b"[budget]\nmax_tokens = 100\ntarget_tokens = 25\n[policy]\n[[policy.scorers]]\ntype = \"priority\"\n",
    );
    let o = cupel(
        &[
            "select",
            items.to_str().unwrap(),
            "--header",
            header.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("window: 1 of 2 items"), "{out}");
    assert!(out.contains("the [policy] table of"), "{out}");
    // The same from stdin with flags (the chat preset).
    let o = cupel(
        &[
            "explain",
            "-",
            "--input-format",
            "jsonl",
            "--max-tokens",
            "100",
            "--target-tokens",
            "40",
        ],
        Some(lines),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 candidates"));
    // Errors name the line and the item; unknown keys too.
    let bad = "{\"content\": \"a\", \"tokens\": 1}\n{\"content\": \"b\", \"tokenz\": 1}\n";
    let o = cupel(
        &[
            "select",
            "-",
            "--input-format",
            "jsonl",
            "--max-tokens",
            "9",
            "--target-tokens",
            "9",
        ],
        Some(bad),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: <stdin>:2: unknown item key `items[1].tokenz`"),
        "{}",
        stderr(&o)
    );
    let o = cupel(
        &[
            "select",
            "-",
            "--input-format",
            "jsonl",
            "--max-tokens",
            "9",
            "--target-tokens",
            "9",
        ],
        Some("{\"content\": \"a\", \"tokens\": 1}\n[1]\n"),
    );
    assert!(stderr(&o).contains("<stdin>:2:"), "{}", stderr(&o));
    // --header is for JSON Lines only.
    let o = cupel(
        &[
            "select",
            "tests/fixtures/chat.toml",
            "--header",
            header.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn split_toml_parsing_matches_the_whole_document() {
    // Issue 18 (6): TOML is parsed one [[items]] table at a time. Positions
    // in messages still point into the whole file, and sub-tables of an item
    // stay with it.
    let toml = "[budget]\nmax_tokens = 100\ntarget_tokens = 50\n\
                [[items]]\ncontent = \"a\"\ntokens = 1\n[items.metadata]\nk = \"v\"\n\
                [policy]\n[[policy.scorers]]\ntype = \"priority\"\n\
                [[items]]\ncontent = \"b\"\ntokens = \"x\"\n";
    let path = temp("split.toml", toml.as_bytes());
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    // `tokens = "x"` is on line 14.
    assert!(err.contains("split.toml:14:"), "{err}");
    let path = temp("split-ok.toml", toml.replace("\"x\"", "2").as_bytes());
    let o = cupel(
        &["select", path.to_str().unwrap(), "--format", "json"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\"k\": \"v\""), "{out:.600}");
    assert!(out.contains("\"total_candidates\": 2"), "{out:.600}");
}

#[test]
fn a_huge_knapsack_table_says_what_to_change() {
    // Issue 18 (8): `max_table_cells = u64::MAX` with an i64::MAX budget.
    let toml = format!(
        "[budget]\nmax_tokens = {m}\ntarget_tokens = {m}\n\
         [policy]\nslicer = \"knapsack\"\nbucket_size = 1\nmax_table_cells = {c}\n\
         [[policy.scorers]]\ntype = \"priority\"\n\
         [[items]]\ncontent = \"a\"\ntokens = 5\n[[items]]\ncontent = \"b\"\ntokens = 6\n",
        m = i64::MAX,
        c = u64::MAX
    );
    let path = temp("knapsack.toml", toml.as_bytes());
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("max_table_bytes guard of 67108864 bytes"),
        "{err}"
    );
    assert!(!err.contains("limit is 18446744073709551615"), "{err}");
    assert!(
        err.contains("hint: raise the knapsack `bucket_size`"),
        "{err}"
    );
}

#[test]
fn split_and_whole_toml_parsing_agree_on_every_fixture() {
    // The fuzz target `input_files` checks this on arbitrary text; here on
    // every TOML fixture and example, plus tricky layouts.
    let mut texts: Vec<String> = Vec::new();
    for dir in ["tests/fixtures", "tests/fixtures/whatif", "examples"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "toml") {
                texts.push(std::fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    assert!(texts.len() > 10);
    texts.push(identical_items_toml(50, false));
    texts.push(
        "items = [{ content = \"a\", tokens = 1 }]\n[budget]\nmax_tokens = 9\ntarget_tokens = 9\n"
            .into(),
    );
    texts.push("[[items]]\ncontent = \"a\"\ntokens = 1\n[[items]]\ncontent = '''\n[[items]]\n'''\ntokens = 2\n[budget]\nmax_tokens = 9\ntarget_tokens = 9\n[items.x]\n".into());
    texts.push("[budget]\nmax_tokens = 9\ntarget_tokens = 9\n[budget]\n[[items]]\ncontent = \"a\"\ntokens = 1\n".into());
    // Layouts the lexer-based splitter must read as the parser does: CRLF
    // line ends, escaped quotes, multi-line basic strings with quotes at
    // their end, a header at the end without a newline, nested arrays and
    // inline tables spanning lines, a string that does not end.
    texts.push("[budget]\r\nmax_tokens = 9\r\ntarget_tokens = 9\r\n[[items]]\r\ncontent = \"a \\\" [[items]]\"\r\ntokens = 1\r\n".into());
    texts.push("[budget]\nmax_tokens = 9\ntarget_tokens = 9\n[[items]]\ncontent = \"\"\"x\n[[items]]\"\"\"\"\"\ntokens = 1\ntags = [\n  \"a\",\n  [\"b\"],\n]\n[[items]]\ncontent = \"b\"\ntokens = 1\nmetadata = { k = \"]\" }\n[policy]".into());
    texts.push("[budget]\nmax_tokens = 9\ntarget_tokens = 9\n[[items]]\ncontent = \"\"\"never ends\n[[items]]\ncontent = \"b\"\n".into());
    for t in &texts {
        cupel_cli::harness::toml_split_agrees(t).unwrap_or_else(|d| panic!("{d}\n---\n{t}"));
    }
}

/// A gate input whose one C# node ends in `body` (JSON, so any bytes fit).
fn gate_doc_with_csharp(body: &str) -> String {
    let code = format!(
        "using System;\nnamespace Shop\n{{\n    public class Report\n    {{\n        // label\n        public string Label(int id)\n        {{\n            return {body}\n        }}\n    }}\n}}\n"
    );
    serde_json::json!({
        "context": ["user: hi"],
        "gate": {
            "id": "g",
            "max_context_tokens": 10_000_000,
            "compact_code": {"rules": [{"language": "dotnet", "policy": "always"}]}
        },
        "nodes": [{"id": "n1", "path": "src/Report.cs", "text": code}]
    })
    .to_string()
}

#[test]
fn gate_survives_150000_nested_interpolated_strings() {
    // Issue 31 (1): 150,000 nested `$"{` (about 450 KB) overflowed the stack
    // of `cupel gate` (exit 134, SIGABRT). The child process must now make a
    // decision and exit 0, with the node classified and compacted.
    let path = temp(
        "deep-interp.json",
        gate_doc_with_csharp(&"$\"{".repeat(150_000)).as_bytes(),
    );
    let o = cupel(&["gate", path.to_str().unwrap(), "--format", "json"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["nodes"][0]["language"], "dotnet");
    assert_eq!(v["nodes"][0]["compacted"], true);
    // The unterminated literal is copied byte for byte: the compacted block
    // still holds every nesting level.
    let block = v["context"][1].as_str().unwrap();
    assert_eq!(block.matches("$\"{").count(), 150_000);
}

#[test]
fn throw_fails_a_count_quota_window_over_the_room() {
    // Issue 31 (3): target 150 > max 200 - reserve 120 = 80 of room. Count
    // quota commits d1 (60) + d2 (50) = 110 tokens: under the raw target, 30
    // over the room. This exited 0 with a 110-token window; now Throw fails
    // with exit 1 and the limit 80 in the message.
    let doc = "[budget]\nmax_tokens = 200\ntarget_tokens = 150\noutput_reserve = 120\n\
        [policy]\nslicer = \"count_quota\"\ninner_slicer = \"greedy\"\noverflow_strategy = \"throw\"\n\
        [[policy.scorers]]\ntype = \"reflexive\"\nweight = 1.0\n\
        [[policy.entries]]\nkind = \"Document\"\nrequire_count = 2\ncap_count = 2\n\
        [[items]]\ncontent = \"d1\"\ntokens = 60\nkind = \"Document\"\nfutureRelevanceHint = 0.9\n\
        [[items]]\ncontent = \"d2\"\ntokens = 50\nkind = \"Document\"\nfutureRelevanceHint = 0.8\n";
    let path = temp("count-quota-room.toml", doc.as_bytes());
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("Selected items require 110 tokens, exceeding target budget of 80"),
        "{}",
        stderr(&o)
    );
}

// ----- issue 31 point 6: smaller defects ---------------------------------

#[test]
fn invalid_utf8_is_reported_with_its_line_and_column() {
    // Line 3, after `content = "ab` (13 characters): byte 0xFF at column 14.
    let doc = b"[budget]\nmax_tokens = 100\n[[items]]\ncontent = \"ab\xFF\"\ntokens = 1\n";
    // The item table starts on line 3; the bad byte is on line 4.
    let path = temp("bad-utf8.toml", doc);
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bad-utf8.toml:4:14: not valid UTF-8 (byte 0xFF)"),
        "{err}"
    );
    // The same byte on line 2 of JSON Lines names line 2.
    let lines = b"{\"content\": \"a\", \"tokens\": 1}\n{\"content\": \"\xC3(\", \"tokens\": 1}\n";
    let path = temp("bad-utf8.jsonl", lines);
    let o = cupel(
        &["select", path.to_str().unwrap(), "--max-tokens", "100"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    // `{"content": "` is 13 characters: the bad byte 0xC3 is column 14.
    assert!(
        stderr(&o).contains("bad-utf8.jsonl:2:14: not valid UTF-8 (byte 0xC3)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn json_lines_name_what_a_bad_line_starts_with() {
    let cases: [(&str, &str); 3] = [
        (
            "# a comment\n",
            "2:1: items[1]: each non-blank line must be one JSON object ({ ... }), but this one starts with a `#` comment (JSON has no comments)",
        ),
        (
            "\u{0}{}\n",
            "2:1: items[1]: each non-blank line must be one JSON object ({ ... }), but this one starts with the control character U+0000",
        ),
        (
            "\u{feff}{\"content\": \"b\", \"tokens\": 1}\n",
            "2:1: items[1]: each non-blank line must be one JSON object ({ ... }), but this one starts with a byte-order mark (U+FEFF), which may only open the input",
        ),
    ];
    for (second, expected) in cases {
        let doc = format!("{{\"content\": \"a\", \"tokens\": 1}}\n{second}");
        let path = temp("bad-line.jsonl", doc.as_bytes());
        let o = cupel(
            &["select", path.to_str().unwrap(), "--max-tokens", "100"],
            None,
        );
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains(&format!("bad-line.jsonl:{expected}")),
            "{}",
            stderr(&o)
        );
    }
    // A JSON document that is an array says where and what.
    let path = temp("array.json", b"\n  [{\"content\": \"a\"}]");
    let o = cupel(&["select", path.to_str().unwrap()], None);
    assert!(
        stderr(&o).contains("array.json:2:3: the document must be a JSON object ({ ... }), but it starts with an array"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_policy_file_with_a_policy_header_is_read() {
    // The `[policy]` table copied out of an INPUT file, header and all.
    let policy =
        "[policy]\nslicer = \"greedy\"\n[[policy.scorers]]\ntype = \"recency\"\nweight = 1.0\n";
    let path = temp("wrapped-policy.toml", policy.as_bytes());
    let o = cupel(
        &[
            "select",
            "tests/fixtures/chat.toml",
            "--policy",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("scorers recency; slicer greedy"),
        "{}",
        stdout(&o)
    );
    // A typo under the header is still named, with the policy keys as hint.
    let typo =
        "[policy]\nslicer = \"greedy\"\nwieght = 2\n[[policy.scorers]]\ntype = \"recency\"\n";
    let path = temp("wrapped-typo.toml", typo.as_bytes());
    let o = cupel(
        &[
            "select",
            "tests/fixtures/chat.toml",
            "--policy",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown policy key `wieght`"),
        "{}",
        stderr(&o)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn help_and_version_to_a_full_disk_fail() {
    for flag in ["--help", "--version"] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = std::process::Command::new(assert_cmd::cargo::cargo_bin!("cupel"))
            .arg(flag)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(stderr(&o).contains("cannot write the output"), "{flag}");
    }
    // To a terminal or pipe they still succeed.
    assert_eq!(cupel(&["--version"], None).status.code(), Some(0));
}

#[test]
fn names_from_input_cannot_forge_lines_or_break_the_svg() {
    // Gate: a node id with a line break stays on its row, escaped.
    let doc = serde_json::json!({
        "context": ["user: hi"],
        "gate": {"id": "g", "max_context_tokens": 1000},
        "nodes": [{"id": "n1\n  2  forged  sql", "path": "a.txt", "text": "plain words"}]
    })
    .to_string();
    let path = temp("forged-id.json", doc.as_bytes());
    let o = cupel(&["gate", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("n1\\n  2  forged  sql"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("  2  forged")), "{out}");

    // Budget simulate: an agent name with a line break, in --format text.
    let trace = "cycle,agent,tokens\n1,\"A\nstep 9: 999999\",5\n";
    let path = temp("forged-agent.csv", trace.as_bytes());
    let o = cupel(
        &["adaptive", "simulate", "--trace", path.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.lines().any(|l| l.starts_with("step 9")), "{out}");
    assert!(out.contains("A\\nstep 9: 999999"), "{out}");

    // Sweep --plot: a kind name with control characters gives valid XML text.
    let items = "[budget]\nmax_tokens = 100\ntarget_tokens = 100\n[[items]]\ncontent = \"a\"\ntokens = 10\nkind = \"Evil\\u0001\\u001bKind\"\n";
    let input = temp("evil-kind.toml", items.as_bytes());
    let svg = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("evil-kind.svg");
    let o = cupel(
        &[
            "sweep",
            input.to_str().unwrap(),
            "--from",
            "0",
            "--to",
            "20",
            "--step",
            "10",
            "--plot",
            svg.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        !drawn
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    );
    assert!(
        drawn.contains("Evil\\u{1}\\u{1b}Kind"),
        "escaped kind missing"
    );
}

#[test]
fn deeply_nested_documents_are_refused_not_overflowed() {
    // Issue 31 (1), every recursive parser: 100,000 levels of arrays or
    // inline tables in TOML, and of arrays in JSON, in an input, a policy
    // and a gate file: a clear error (exit 2) from the parsers' depth limits,
    // never a stack overflow.
    let n = 100_000;
    let toml_arrays = format!(
        "[budget]\nmax_tokens = 10\nx = {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    let toml_tables = format!(
        "[budget]\nmax_tokens = 10\nx = {}1{}\n",
        "{a=".repeat(n),
        "}".repeat(n)
    );
    let json_arrays = format!("{{\"budget\": {}{}}}", "[".repeat(n), "]".repeat(n));
    for (name, doc) in [
        ("deep-arrays.toml", toml_arrays),
        ("deep-tables.toml", toml_tables),
        ("deep-arrays.json", json_arrays),
    ] {
        let path = temp(name, doc.as_bytes());
        let p = path.to_str().unwrap();
        for args in [
            vec!["select", p],
            vec!["select", "tests/fixtures/chat.toml", "--policy", p],
            vec!["gate", p],
        ] {
            let o = cupel(&args, None);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("recurs"), "{args:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn cjk_items_stay_within_80_columns() {
    // Issue 27: widths were counted in characters, so CJK content (two
    // columns per character) made `select` 128 columns wide and `explain`
    // 153. Every line must fit 80 display columns.
    use unicode_width::UnicodeWidthStr;
    let mut doc = String::from("[budget]\nmax_tokens = 100\ntarget_tokens = 60\n");
    for (i, kind) in ["Message", "文書", "Message"].iter().enumerate() {
        let _ = write!(
            doc,
            "[[items]]\ncontent = \"{}\"\ntokens = 30\nkind = \"{kind}\"\ntimestamp = \"2025-01-01T10:0{i}:00Z\"\n",
            "注文が届きません。配送状況を確認してください。".repeat(4)
        );
    }
    let path = temp("cjk.toml", doc.as_bytes());
    for cmd in ["select", "explain"] {
        let o = cupel(&[cmd, path.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("注文"), "{out}");
        for line in out.lines() {
            assert!(
                line.width() <= 80,
                "{cmd}: {} columns: {line}",
                line.width()
            );
        }
    }
}
