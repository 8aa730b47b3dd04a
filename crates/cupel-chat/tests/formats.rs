//! Round-trip fidelity of both wire formats, and format detection.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{Content, Format, ImageSource, Part, Role, Transcript};
use serde_json::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn round_trip(name: &str, format: Format) -> Transcript {
    let text = fixture(name);
    let original: Value = serde_json::from_str(&text).unwrap();
    let t = Transcript::parse(&text).unwrap();
    assert_eq!(t.format(), format, "{name}: detected format");
    assert_eq!(
        t.to_value(),
        original,
        "{name}: dropping nothing must give the same JSON value"
    );
    // And again, from the written text.
    let again = Transcript::parse(&t.to_json_pretty()).unwrap();
    assert_eq!(again, t);
    t
}

#[test]
fn openai_body_round_trips_with_unknown_fields_images_and_parallel_calls() {
    let t = round_trip("openai_fidelity.json", Format::OpenAi);
    let m = t.messages();
    assert_eq!(m.len(), 6);
    assert_eq!(m[0].role, Role::Developer);
    assert_eq!(m[1].name.as_deref(), Some("priya"));
    // Two images (one base64 data URL with detail high), one audio part kept as Other.
    let parts = m[1].content.parts();
    assert!(matches!(&parts[1], Part::Image(i) if i.detail.as_deref() == Some("high")));
    assert_eq!(
        match &parts[1] {
            Part::Image(i) => i.dimensions(),
            _ => None,
        },
        Some((1024, 768))
    );
    assert!(
        matches!(&parts[2], Part::Image(i) if matches!(&i.source, ImageSource::Url(u) if u.starts_with("https://")))
    );
    assert!(matches!(&parts[3], Part::Other(_)));
    // A parallel call: one message, two ids, content null.
    assert_eq!(m[2].content, Content::Null);
    let ids: Vec<&str> = m[2].calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(m[3].answered_ids().collect::<Vec<_>>(), ["call_a"]);
    assert!(m[4].is_tool_result());
    assert!(t.tools().is_some());
}

#[test]
fn anthropic_body_round_trips_with_thinking_signatures_images_and_parallel_tool_use() {
    let t = round_trip("anthropic_fidelity.json", Format::Anthropic);
    let m = t.messages();
    // The top-level system (a block array with cache_control) is message #0.
    assert_eq!(m.len(), 6);
    assert_eq!(m[0].role, Role::System);
    let blocks = m[2].content.parts();
    assert!(
        matches!(&blocks[0], Part::Thinking { signature: Some(s), .. } if s.starts_with("EqQB"))
    );
    assert!(matches!(&blocks[1], Part::RedactedThinking { .. }));
    let ids: Vec<&str> = m[2].calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["toolu_01", "toolu_02"]);
    assert!(m[3].is_tool_result());
    assert_eq!(
        m[3].answered_ids().collect::<Vec<_>>(),
        ["toolu_01", "toolu_02"]
    );
    assert!(matches!(&m[3].content.parts()[1], Part::ToolResult(r) if r.is_error == Some(true)));
    // The `document` block is not modelled and is kept verbatim.
    assert!(matches!(&m[1].content.parts()[3], Part::Other(_)));
}

#[test]
fn bare_arrays_round_trip_and_string_system_stays_a_string() {
    let text = r#"[{"role":"user","content":"hi","x":1},{"role":"assistant","content":[{"type":"text","text":"yo","citations":[]}]}]"#;
    let t = Transcript::parse(text).unwrap();
    assert_eq!(t.to_value(), serde_json::from_str::<Value>(text).unwrap());
    let body =
        r#"{"system":"Be brief.","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#;
    let t = Transcript::parse(body).unwrap();
    assert_eq!(t.format(), Format::Anthropic);
    assert_eq!(t.to_value(), serde_json::from_str::<Value>(body).unwrap());
}

#[test]
fn a_kept_subset_is_written_back_with_every_field_it_came_with() {
    let text = fixture("openai_fidelity.json");
    let original: Value = serde_json::from_str(&text).unwrap();
    let t = Transcript::parse(&text).unwrap();
    let kept = vec![t.messages()[0].clone(), t.messages()[5].clone()];
    let v = t.with_messages(kept).to_value();
    assert_eq!(v["messages"][0], original["messages"][0]);
    assert_eq!(v["messages"][1], original["messages"][5]);
    assert_eq!(v["x-vendor"], original["x-vendor"]);
    assert_eq!(v["tools"], original["tools"]);
}

#[test]
fn malformed_documents_are_typed_errors_with_a_path() {
    let e = Transcript::parse("[{\"role\": 3}]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "messages[0]: a message needs a string `role`"
    );
    let e = Transcript::parse(
        r#"[{"role":"assistant","content":null,"tool_calls":[{"type":"function"}]}]"#,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "messages[0].tool_calls[0]: a tool call needs a string `id` and a `function` object"
    );
    let e = Transcript::parse("{\"messages\": 3}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "messages: a request body needs a `messages` array (Chat Completions, Anthropic), `input` (OpenAI Responses) or `contents` (Gemini)"
    );
    let e = Transcript::parse("[1,").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("invalid JSON at line 1, column 3"),
        "{e}"
    );
    let e = Transcript::parse(r#"[{"role":"user","content":5}]"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "messages[0].content: content must be a string, an array or null, not a number"
    );
}
