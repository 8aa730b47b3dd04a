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

/// A Responses `input` as OpenAI's function-calling and reasoning guides
/// show it (https://platform.openai.com/docs/guides/function-calling,
/// https://platform.openai.com/docs/guides/reasoning, read 2026-11-27): a
/// question, the reasoning item with its encrypted content, the call, its
/// output, the answer, a follow-up.
const RESPONSES_INPUT: &str = r#"[
  {"role": "user", "content": "What is the weather like in Paris today?"},
  {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB..."},
  {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
   "arguments": "{\"location\":\"Paris, France\"}"},
  {"type": "function_call_output", "call_id": "call_1", "output": "{\"temperature\": 18}"},
  {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [
    {"type": "output_text", "text": "It is 18C in Paris.", "annotations": []}]},
  {"role": "user", "content": "And tomorrow?"}
]"#;

fn responses_input() -> Vec<async_openai::types::responses::InputItem> {
    serde_json::from_str(RESPONSES_INPUT).unwrap()
}

#[test]
fn a_responses_input_round_trips_unchanged() {
    use cupel_chat::{from_async_openai_responses, to_async_openai_responses};
    let original = responses_input();
    let messages = from_async_openai_responses(&original).unwrap();
    // One message per item, read as the Responses transcript reader reads them.
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[0].role, Role::User);
    assert_eq!(messages[1].role, Role::Other("reasoning".into()));
    assert_eq!(
        messages[2]
            .calls()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["call_1"]
    );
    assert_eq!(messages[3].answered_ids().collect::<Vec<_>>(), ["call_1"]);
    assert_eq!(messages[4].role, Role::Assistant);
    assert_eq!(messages[4].text(), "It is 18C in Paris.");
    let back = to_async_openai_responses(&messages).unwrap();
    assert_eq!(back, original);
}

#[test]
fn a_trimmed_responses_window_keeps_reasoning_call_and_output_together() {
    use cupel_chat::{Format, from_async_openai_responses, to_async_openai_responses};
    let messages = from_async_openai_responses(&responses_input()).unwrap();
    // A budget that cannot hold everything: items 1-3 (reasoning, call,
    // output) are one unit under the Responses rules; they go or stay
    // together, and the window still starts on a user message.
    let window = trim(&messages, &Trim::new(Format::Responses, 40)).unwrap();
    let kept = &window.positions;
    assert_eq!(kept.last(), Some(&5), "the newest question is kept");
    assert!(
        (1..=3).all(|p| kept.contains(&p)) || (1..=3).all(|p| !kept.contains(&p)),
        "reasoning, call and output split: {kept:?}"
    );
    assert_eq!(messages[kept[0]].role, Role::User);
    let out = to_async_openai_responses(&window.cloned_messages()).unwrap();
    assert_eq!(out.len(), kept.len());
}

#[test]
fn an_item_async_openai_cannot_hold_is_refused_with_its_position() {
    use cupel_chat::to_async_openai_responses;
    let doc = cupel_chat::Transcript::parse(
        r#"{"messages": [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [
              {"type": "thinking", "thinking": "Greet back.", "signature": "sig"},
              {"type": "text", "text": "Hello!"}]}]}"#,
    )
    .unwrap();
    let err = to_async_openai_responses(doc.messages()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("input[1]: async-openai cannot represent"),
        "{err}"
    );
}
