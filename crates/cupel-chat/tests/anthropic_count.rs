//! The Anthropic estimate by hand: text, framing and tool definitions per
//! model, earlier thinking stripped or kept, redacted thinking, images,
//! documents, and the trim counting each message in its place.
//!
//! Text counts are `cl100k_base` tokens (checked against `tiktoken-rs` in
//! `cl100k_counts_used_below`) times 1.1, rounded up per message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    AnthropicEstimate, Message, MessageCounter, PreviousThinking, Transcript, Trim,
    anthropic_image_tokens, trim, trim_transcript,
};
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn png(width: u32, height: u32) -> String {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0]);
    b64(&b)
}

fn messages(v: Value) -> Vec<Message> {
    Transcript::from_value(v, None).unwrap().into_messages()
}

#[test]
fn cl100k_counts_used_below() {
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    for (text, n) in [
        ("Where is my parcel? It is so late.", 10),
        (r#"{"name":"a"}"#, 5),
        ("Is it raining in Paris?", 6),
        ("The user wants the weather, so I should call the tool.", 13),
        ("toolu_01", 4),
        ("get_weather", 2),
        (r#"{"city":"Paris"}"#, 5),
        ("Rain, 12 C", 5),
        ("Let me think about the route first.", 8),
        ("It is raining.", 4),
        ("Should I take an umbrella?", 6),
        ("Yes.", 2),
        ("Describe this image.", 4),
        ("Summarise this document.", 6),
        ("The parcel left the depot on Monday.", 8),
        ("Notes", 1),
    ] {
        assert_eq!(bpe.encode_ordinary(text).len(), n, "{text}");
    }
}

#[test]
fn text_framing_and_tool_definitions_by_model() {
    let e = AnthropicEstimate::new();
    // 10 tokens: ceil(10 * 1.1) = 11, plus 2 of framing.
    assert_eq!(
        e.count_message(&Message::user("Where is my parcel? It is so late.")),
        13
    );
    // A request's framing.
    assert_eq!(e.count_request(None), 5);
    let tools = json!([{"name": "a"}]);
    // 5 framing + ceil(5 * 1.1) = 6 for the JSON + 15 per tool + 445 (measured, Claude 4.5+).
    assert_eq!(e.count_request(Some(&tools)), 471);
    // `cache_control` is not part of the definition the model sees.
    let cached = json!([{"name": "a", "cache_control": {"type": "ephemeral"}}]);
    assert_eq!(e.count_request(Some(&cached)), 471);
    assert_eq!(
        e.clone().tool_system_tokens(0).count_request(Some(&tools)),
        26
    );
    // Anthropic's table: Claude Sonnet 4 346, Claude 3 Opus 530.
    let sonnet4 = AnthropicEstimate::for_model("claude-sonnet-4-20250514");
    assert_eq!(sonnet4.count_request(Some(&tools)), 5 + 6 + 15 + 346);
    assert_eq!(
        AnthropicEstimate::for_model("claude-3-opus-20240229").count_request(Some(&tools)),
        5 + 6 + 15 + 530
    );
    // A forced tool choice has its own prompt: 313 for Claude Sonnet 4.
    let body =
        json!({"model": "claude-sonnet-4-20250514", "tool_choice": {"type": "tool", "name": "a"}});
    assert_eq!(
        AnthropicEstimate::for_request(&body).count_request(Some(&tools)),
        5 + 6 + 15 + 313
    );
    // Claude Opus 4.7's tokenizer: text times 1.4. The message: 10 * 1.4 = 14, plus 2.
    let opus47 = AnthropicEstimate::for_model("claude-opus-4-7");
    assert_eq!(
        opus47.count_message(&Message::user("Where is my parcel? It is so late.")),
        16
    );
    // Its tools: 5 + 5 * 1.4 = 7 + 15 + 325 (measured).
    assert_eq!(opus47.count_request(Some(&tools)), 352);
    assert_eq!(e.describe(), "anthropic estimate (uncalibrated)");
    assert_eq!(
        sonnet4.describe(),
        "anthropic estimate for claude-sonnet-4-20250514 (uncalibrated)"
    );
}

#[test]
fn thinking_settings_add_their_prompt() {
    let body = |model: &str, kind: &str| json!({"model": model, "thinking": {"type": kind}});
    // 5 framing + 28 (enabled) / 16 (adaptive, Opus 4.6) / nothing from Opus 4.7 on.
    let request = |b: Value| AnthropicEstimate::for_request(&b).count_request(None);
    assert_eq!(request(body("claude-sonnet-4-5", "enabled")), 33);
    assert_eq!(request(body("claude-opus-4-6", "adaptive")), 21);
    assert_eq!(request(body("claude-opus-4-7", "adaptive")), 5);
    assert_eq!(request(body("claude-sonnet-4-5", "disabled")), 5);
}

/// A question, a tool call made after thinking, its result, an answer after
/// more thinking, and a new question.
fn weather_body() -> Value {
    json!({"model": "claude-sonnet-4-5", "messages": [
        {"role": "user", "content": "Is it raining in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants the weather, so I should call the tool.", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "Rain, 12 C"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me think about the route first.", "signature": "c2ln"},
            {"type": "text", "text": "It is raining."}]},
        {"role": "user", "content": "Should I take an umbrella?"}
    ]})
}

fn weather() -> Vec<Message> {
    messages(weather_body())
}

#[test]
fn earlier_thinking_is_not_counted_where_the_api_strips_it() {
    let m = weather();
    // #0: 6 -> ceil(6.6) = 7, + 2 = 9.
    // #1 stripped: id 4 + name 2 + input 5 = 11 -> ceil(12.1) = 13, + 8 (tool_use) + 2 = 23;
    //    kept: + thinking 13 = 24 -> ceil(26.4) = 27, + 8 + 2 = 37.
    // #2: id 4 + "Rain, 12 C" 5 = 9 -> ceil(9.9) = 10, + 8 (tool_result) + 2 = 20.
    // #3 stripped: 4 -> ceil(4.4) = 5, + 2 = 7; kept: 4 + 8 = 12 -> ceil(13.2) = 14, + 2 = 16.
    // #4: 6 -> 7, + 2 = 9.
    let sonnet45 = AnthropicEstimate::for_model("claude-sonnet-4-5");
    assert_eq!(sonnet45.thinking(), PreviousThinking::Stripped);
    assert_eq!(sonnet45.count_messages(&m), vec![9, 23, 20, 7, 9]);
    // 9 + 23 + 20 + 7 + 9 = 68, plus the request's 5.
    assert_eq!(sonnet45.raw_request(&m, None), 73);
    // On its own a message's place is unknown: its thinking counts.
    assert_eq!(sonnet45.count_message(&m[1]), 37);
    assert_eq!(sonnet45.count_message(&m[3]), 16);
    // Models that keep earlier thinking (Sonnet 4.6, Opus 4.5 and later) count it all.
    let sonnet46 = AnthropicEstimate::for_model("claude-sonnet-4-6");
    assert_eq!(sonnet46.count_messages(&m), vec![9, 37, 20, 16, 9]);
    assert_eq!(
        AnthropicEstimate::new()
            .previous_thinking(PreviousThinking::Kept)
            .count_messages(&m),
        vec![9, 37, 20, 16, 9]
    );
    // In a tool-use loop (the last user message is only tool results) the
    // current turn's thinking is kept and counted.
    assert_eq!(sonnet45.count_messages(&m[..3]), vec![9, 37, 20]);
}

#[test]
fn the_trim_counts_each_message_in_its_place() {
    let m = weather();
    let counter = AnthropicEstimate::for_model("claude-sonnet-4-5");
    // 68 + 5 = 73 fits exactly; counted one by one (91 + 5 = 96) it would not.
    let out = trim(&m, &Trim::anthropic(73).counter(counter)).unwrap();
    assert_eq!(out.positions, vec![0, 1, 2, 3, 4]);
    let tokens: Vec<i64> = out.rows.iter().map(|r| r.tokens).collect();
    assert_eq!(tokens, vec![9, 23, 20, 7, 9]);
}

#[test]
fn a_document_is_counted_for_its_own_model() {
    // Without a counter of the caller's, trim_transcript reads the body's
    // model: Claude Sonnet 4.5 strips the earlier thinking, so 73 fits.
    let doc = Transcript::from_value(weather_body(), None).unwrap();
    let (_, out) = trim_transcript(&doc, &Trim::anthropic(73)).unwrap();
    assert_eq!(
        out.counter,
        "anthropic estimate for claude-sonnet-4-5 (uncalibrated)"
    );
    assert_eq!(out.positions, vec![0, 1, 2, 3, 4]);
}

#[test]
fn redacted_thinking_counts_its_decoded_length() {
    let data = "A".repeat(40); // 40 base64 characters = 30 bytes -> ceil(30 / 4) = 8 tokens.
    let m = messages(json!({"messages": [
        {"role": "user", "content": "Should I take an umbrella?"},
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": data},
            {"type": "text", "text": "Yes."}]},
        {"role": "user", "content": "Is it raining in Paris?"}
    ]}));
    let e = AnthropicEstimate::new();
    // On its own: "Yes." 2 -> ceil(2.2) = 3, + 8 + 2 = 13; as an earlier turn: 3 + 2 = 5.
    assert_eq!(e.count_message(&m[1]), 13);
    assert_eq!(e.count_messages(&m), vec![9, 5, 9]);
}

#[test]
fn images_by_their_size_or_the_cap() {
    let e = AnthropicEstimate::new();
    let image = |source: Value| {
        messages(json!([{"role": "user", "content": [
            {"type": "text", "text": "Describe this image."},
            {"type": "image", "source": source}]}]))
        .remove(0)
    };
    // 800 x 600 = 480,000 px / 750 = 640; the text 4 -> ceil(4.4) = 5; + 2.
    let m = image(json!({"type": "base64", "media_type": "image/png", "data": png(800, 600)}));
    assert_eq!(e.count_message(&m), 640 + 5 + 2);
    // A JPEG: SOI, then SOF0 with height 1000 and width 1000: 1,000,000 / 750 -> 1334.
    let jpeg = b64(&[
        0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x03, 0xe8, 0x03, 0xe8, 0x03, 0x01, 0x22, 0x00,
    ]);
    let m = image(json!({"type": "base64", "media_type": "image/jpeg", "data": jpeg}));
    assert_eq!(e.count_message(&m), 1334 + 5 + 2);
    // By URL the size is unknown: the cap, 1,600 (or what the caller sets).
    let m = image(json!({"type": "url", "url": "https://example.com/photo.jpg"}));
    assert_eq!(e.count_message(&m), 1600 + 5 + 2);
    assert_eq!(
        e.clone().url_image_tokens(500).count_message(&m),
        500 + 5 + 2
    );
    // 3000 x 2000: the long edge to 1,568 -> 1568 x 1045 = 1,638,560 px -> 2,185: the cap, 1,600.
    let big = image(json!({"type": "base64", "media_type": "image/png", "data": png(3000, 2000)}));
    assert_eq!(e.count_message(&big), 1600 + 5 + 2);
    // Opus 4.7: long edge 2,576 -> 2576 x 1717 = 4,422,992 px -> 5,898: its cap, 4,784.
    let opus47 = AnthropicEstimate::for_model("claude-opus-4-7");
    // (its text: 4 * 1.4 = 5.6 -> 6)
    assert_eq!(opus47.count_message(&big), 4784 + 6 + 2);
    // 2000 x 1000: 1568 x 784 = 1,229,312 px / 750 = 1,639.1 -> 1,640: over the cap.
    assert_eq!(anthropic_image_tokens(2000, 1000), 1600);
}

#[test]
fn documents_by_their_pages_or_their_text() {
    let e = AnthropicEstimate::new();
    let doc = |source: Value, title: Option<&str>| {
        let mut block = json!({"type": "document", "source": source});
        if let Some(t) = title {
            block["title"] = json!(t);
        }
        messages(json!([{"role": "user", "content": [
            block, {"type": "text", "text": "Summarise this document."}]}]))
        .remove(0)
    };
    // Three page objects (the `/Pages` tree root is not one).
    let pdf = b"%PDF-1.4\n1 0 obj <</Type /Pages /Count 3>> endobj\n\
        2 0 obj <</Type /Page>> endobj\n3 0 obj <</Type/Page>> endobj\n4 0 obj <</Type /Page /Rotate 90>> endobj\n";
    let m = doc(
        json!({"type": "base64", "media_type": "application/pdf", "data": b64(pdf)}),
        None,
    );
    // 2 framing + the question 6 -> ceil(6.6) = 7 + 50 per document + 3 pages * 2,100.
    assert_eq!(e.count_message(&m), 2 + 7 + 50 + 3 * 2100);
    // By URL the pages are unknown: one page, or what the caller sets.
    let m = doc(
        json!({"type": "url", "url": "https://example.com/a.pdf"}),
        None,
    );
    assert_eq!(e.count_message(&m), 2 + 7 + 50 + 2100);
    assert_eq!(
        e.clone().unknown_pdf_pages(10).count_message(&m),
        2 + 7 + 50 + 21_000
    );
    // A text document counts its text and title: 8 + 1 + the question 6 = 15 -> ceil(16.5) = 17.
    let m = doc(
        json!({"type": "text", "media_type": "text/plain", "data": "The parcel left the depot on Monday."}),
        Some("Notes"),
    );
    assert_eq!(e.count_message(&m), 2 + 17 + 50);
}

#[test]
fn recorded_requests_are_estimated_within_a_quarter() {
    // Seven real requests and the input tokens Anthropic billed for them,
    // copied from public test recordings (each line names its source and
    // licence): text, tools, an image, a text document, thinking stripped
    // from an earlier turn and kept in a tool-use loop.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/anthropic_usage_sample.jsonl"
    ))
    .unwrap();
    let mut n = 0;
    for line in text.lines() {
        let s: Value = serde_json::from_str(line).unwrap();
        let billed = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .map(|k| s[k].as_i64().unwrap())
        .sum::<i64>();
        let req = &s["request"];
        let doc = Transcript::from_value(req.clone(), None).unwrap();
        let estimate = AnthropicEstimate::for_request(req).raw_request(doc.messages(), doc.tools());
        let error = (estimate - billed) as f64 / billed as f64;
        assert!(
            error.abs() <= 0.25,
            "{}: {estimate} for {billed}",
            s["source"]
        );
        n += 1;
    }
    assert_eq!(n, 7);
}
