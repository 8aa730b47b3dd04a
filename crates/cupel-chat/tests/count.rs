//! Counting: OpenAI's published numbers, an independent tiktoken count, the
//! image rules and the Anthropic calibration (the Anthropic estimate itself:
//! `anthropic_count.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    AnthropicEstimate, Calibration, ChatError, Message, MessageCounter, Observation, OpenAiCounter,
    Transcript, openai_image_tokens,
};
use serde_json::{Value, json};

/// The example of OpenAI's cookbook ("How to count tokens with tiktoken",
/// section 6), whose prompt-token counts were reported by the OpenAI API:
/// 124 for gpt-4o (o200k_base) and 129 for gpt-4 (cl100k_base).
fn cookbook_messages() -> Vec<Message> {
    Transcript::from_value(
        json!([
            {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
            {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
            {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
            {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
            {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
            {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}
        ]),
        None,
    )
    .unwrap()
    .into_messages()
}

fn request(c: &dyn MessageCounter, messages: &[Message], tools: Option<&Value>) -> i64 {
    messages.iter().map(|m| c.count_message(m)).sum::<i64>() + c.count_request(tools)
}

#[test]
fn matches_the_prompt_tokens_openai_reported_for_the_cookbook_example() {
    let m = cookbook_messages();
    assert_eq!(
        request(&OpenAiCounter::new("o200k_base").unwrap(), &m, None),
        124
    );
    assert_eq!(
        request(&OpenAiCounter::new("cl100k_base").unwrap(), &m, None),
        129
    );
    assert_eq!(
        request(&OpenAiCounter::new("gpt-4o").unwrap(), &m, None),
        124
    );
}

#[test]
fn matches_the_prompt_tokens_openai_reported_with_tool_definitions() {
    // Cookbook section 7: 101 (gpt-4o) and 105 (gpt-4) reported by the API.
    let tools = json!([{"type": "function", "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}}]);
    let m = Transcript::from_value(
        json!([
            {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
            {"role": "user", "content": "What's the weather like in San Francisco?"}
        ]),
        None,
    )
    .unwrap()
    .into_messages();
    assert_eq!(
        request(&OpenAiCounter::new("o200k_base").unwrap(), &m, Some(&tools)),
        101
    );
    assert_eq!(
        request(
            &OpenAiCounter::new("cl100k_base").unwrap(),
            &m,
            Some(&tools)
        ),
        105
    );
}

#[test]
fn small_messages_by_hand() {
    let c = OpenAiCounter::new("o200k_base").unwrap();
    // 3 per message + "user" 1 + "hello world" 2 ("hello", " world").
    assert_eq!(c.count_message(&Message::user("hello world")), 6);
    // + name "bob" (1 token) + 1 per name.
    let mut named = Message::user("hello world");
    named.name = Some("bob".into());
    assert_eq!(c.count_message(&named), 8);
    // An empty assistant message: 3 + "assistant" 1.
    assert_eq!(c.count_message(&Message::assistant("")), 4);
}

/// An independent count of the 41-message scenario: tiktoken-rs's o200k_base
/// directly (not through the crate), applying the cookbook rule to each
/// message's string fields and each call's name and arguments.
#[test]
fn the_agent_transcript_matches_an_independent_tiktoken_count() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_41.json"
    ))
    .unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let n = |s: &str| bpe.encode_ordinary(s).len() as i64;
    let mut expected = Vec::new();
    for m in raw["messages"].as_array().unwrap() {
        let mut t = 3;
        for key in ["role", "content", "tool_call_id"] {
            if let Some(s) = m.get(key).and_then(Value::as_str) {
                t += n(s);
            }
        }
        for c in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            t += n(c["function"]["name"].as_str().unwrap());
            t += n(c["function"]["arguments"].as_str().unwrap());
        }
        expected.push(t);
    }
    let c = OpenAiCounter::new("o200k_base").unwrap();
    let t = Transcript::parse(&text).unwrap();
    let got: Vec<i64> = t.messages().iter().map(|m| c.count_message(m)).collect();
    assert_eq!(got, expected);
    // The huge tool log alone is over 15,000 tokens.
    assert!(got[20] > 15_000, "{}", got[20]);
}

#[test]
fn openai_image_tiles_by_hand() {
    // 1024x1024 high: fits 2048; shortest 1024 -> 768: 768x768 = 2x2 tiles: 4*170+85 = 765.
    assert_eq!(openai_image_tokens(1024, 1024, "high"), 765);
    // 2048x4096: fit 2048 -> 1024x2048; shortest -> 768: 768x1536 = 2x3 tiles: 6*170+85 = 1105.
    assert_eq!(openai_image_tokens(2048, 4096, "high"), 1105);
    // 1024x768 (the fixture PNG): no scaling; 2x2 tiles: 765.
    assert_eq!(openai_image_tokens(1024, 768, "auto"), 765);
    // 512x512: one tile: 170+85 = 255. Low detail is flat 85 at any size.
    assert_eq!(openai_image_tokens(512, 512, "high"), 255);
    assert_eq!(openai_image_tokens(8000, 100, "low"), 85);
    // 8000x100: fit 2048 -> 2048x25; shortest 25 <= 768: 4x1 tiles: 4*170+85 = 765.
    assert_eq!(openai_image_tokens(8000, 100, "high"), 765);
}

#[test]
fn images_in_messages_use_the_size_in_the_data_or_the_maximum() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openai_fidelity.json"
    ))
    .unwrap();
    let t = Transcript::parse(&text).unwrap();
    let c = OpenAiCounter::new("o200k_base").unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let n = |s: &str| bpe.encode_ordinary(s).len() as i64;
    let audio = json!({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}})
        .to_string();
    // Message #1: 3 + "user" + "What is in this photo?" + name "priya" + 1
    //  + the 1024x768 PNG at high detail (765) + a URL image of unknown size (8 tiles: 1445)
    //  + the audio part as JSON text (an estimate).
    let expected =
        3 + n("user") + n("What is in this photo?") + n("priya") + 1 + 765 + 1445 + n(&audio);
    assert_eq!(c.count_message(&t.messages()[1]), expected);
}

#[test]
fn calibration_fits_the_scale_and_reports_its_error() {
    // Actual counts run 25% and 15% above the estimate: scale = (800*1000 + 400*460) /
    // (800^2 + 400^2) = (800,000 + 184,000) / 800,000 = 1.23.
    let obs = [
        Observation {
            estimate: 800,
            actual: 1000,
        },
        Observation {
            estimate: 400,
            actual: 460,
        },
    ];
    let c = Calibration::fit(&obs).unwrap();
    assert!((c.scale() - 1.23).abs() < 1e-12);
    // Before: (200/1000 + 60/460) / 2 = (0.2 + 0.130435) / 2 = 0.165217.
    assert!((c.mean_abs_error_before() - 0.165_217).abs() < 1e-6);
    // After: 984 vs 1000 -> 0.016; 492 vs 460 -> 0.069565; mean 0.042783, max 0.069565.
    assert!((c.mean_abs_error_after() - 0.042_783).abs() < 1e-6);
    assert!((c.max_abs_error_after() - 0.069_565).abs() < 1e-6);
    // A calibrated estimate scales every count, rounded up. The message is
    // 10 cl100k_base tokens: ceil(10 * 1.1) + 2 framing = 13; 13 * 1.23 = 15.99 -> 16.
    let e = AnthropicEstimate::new().calibrated(&c);
    assert_eq!(
        e.count_message(&Message::user("Where is my parcel? It is so late.")),
        16
    );
    assert_eq!(
        Calibration::fit(&[Observation {
            estimate: 0,
            actual: 5
        }])
        .unwrap_err(),
        ChatError::NoObservations { observations: 1 }
    );
    // raw_request is what a caller records next to `usage.input_tokens`:
    // the message (13) and the request's framing (5).
    let m = vec![Message::user("Where is my parcel? It is so late.")];
    assert_eq!(AnthropicEstimate::new().raw_request(&m, None), 18);
}
