//! Conversions from and to `async-openai`'s chat request messages.
#![cfg(feature = "async-openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use async_openai::types::chat::ChatCompletionRequestMessage;
use cupel_chat::{Role, Trim, from_async_openai, to_async_openai, trim};

/// A request as an async-openai user builds it: system, user, an assistant
/// turn with two parallel tool calls, both results, a user image.
const REQUEST: &str = r#"[
  {"role": "system", "content": "You are a support agent."},
  {"role": "user", "content": "Where are orders 41 and 42?", "name": "ana"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_a", "type": "function", "function": {"name": "track", "arguments": "{\"order\":41}"}},
    {"id": "call_b", "type": "function", "function": {"name": "track", "arguments": "{\"order\":42}"}}]},
  {"role": "tool", "tool_call_id": "call_a", "content": "41: delivered"},
  {"role": "tool", "tool_call_id": "call_b", "content": "42: in transit"},
  {"role": "user", "content": [
    {"type": "text", "text": "And this label?"},
    {"type": "image_url", "image_url": {"url": "https://example.com/label.png", "detail": "low"}}]}
]"#;

fn request() -> Vec<ChatCompletionRequestMessage> {
    serde_json::from_str(REQUEST).unwrap()
}

#[test]
fn a_request_round_trips_unchanged() {
    let original = request();
    let messages = from_async_openai(&original).unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[2].role, Role::Assistant);
    // The parallel calls are both there, with their ids.
    let ids: Vec<&str> = messages[2].calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(messages[1].name.as_deref(), Some("ana"));
    let back = to_async_openai(&messages).unwrap();
    assert_eq!(back, original);
}

#[test]
fn a_trimmed_window_goes_back_to_async_openai_whole() {
    let messages = from_async_openai(&request()).unwrap();
    // Message granularity, a budget that cannot hold the tool group: the
    // window is the system prompt and the last user message, whose image
    // keeps its detail. Never a tool result without its call.
    let window = trim(&messages, &Trim::openai(120)).unwrap();
    let out = to_async_openai(&window.cloned_messages()).unwrap();
    for m in &out {
        assert!(
            !matches!(m, ChatCompletionRequestMessage::Tool(_)),
            "a tool result left without its call"
        );
    }
    assert!(matches!(out[0], ChatCompletionRequestMessage::System(_)));
    assert!(matches!(
        out.last(),
        Some(ChatCompletionRequestMessage::User(_))
    ));
}

#[test]
fn an_anthropic_only_part_is_refused_with_its_position() {
    let doc = cupel_chat::Transcript::parse(
        r#"{"messages": [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [
              {"type": "thinking", "thinking": "Greet back.", "signature": "sig"},
              {"type": "text", "text": "Hello!"}]}]}"#,
    )
    .unwrap();
    let err = to_async_openai(doc.messages()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("messages[1]: async-openai cannot represent"),
        "{err}"
    );
}
