//! Conversions from and to rig's completion messages (feature `rig`).
#![cfg(feature = "rig")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_chat::{Message, Part, Role, ToolCall, Trim, from_rig, to_rig, trim};
use rig_core::completion::Message as RigMessage;
use rig_core::message::{
    AssistantContent, AssistantMessage, Audio, DocumentSourceKind, Image, ImageDetail,
    ImageMediaType, Reasoning, Text, ToolFunction, ToolName, ToolResultContent, UserContent,
};
use serde_json::json;

/// A rig agent's history as rig's own constructors build it: a system
/// prompt, a question with an image, an assistant turn that reasons and
/// makes two parallel calls, both results in one user message, the answer,
/// and a follow-up question.
fn history() -> Vec<RigMessage> {
    let track = ToolName::new("track").unwrap();
    let call_a = rig_core::message::ToolCall::from_wire(
        "call_a",
        ToolFunction::new(track.clone(), json!({"order": 41})),
    );
    let call_b = rig_core::message::ToolCall::from_wire(
        "call_b",
        ToolFunction::new(track, json!({"order": 42})),
    );
    let label = Image {
        data: DocumentSourceKind::Url("https://example.com/label.png".into()),
        media_type: Some(ImageMediaType::PNG),
        detail: Some(ImageDetail::Low),
        native: None,
    };
    vec![
        RigMessage::system("You are a support agent."),
        RigMessage::User {
            content: vec![
                UserContent::Text(Text::new("Where are orders 41 and 42? Label attached.")),
                UserContent::Image(label),
            ],
        },
        RigMessage::Assistant(AssistantMessage::new(vec![
            AssistantContent::Reasoning(Reasoning::new("Track both orders.")),
            AssistantContent::ToolCall(call_a.clone()),
            AssistantContent::ToolCall(call_b.clone()),
        ])),
        RigMessage::tool_results(vec![
            call_a.result(vec![ToolResultContent::Text(Text::new("41: delivered"))]),
            call_b.error_result(vec![ToolResultContent::Json {
                value: json!({"error": "carrier offline"}),
            }]),
        ]),
        RigMessage::assistant("41 was delivered; 42 cannot be tracked right now."),
        RigMessage::user("Can you try 42 again later?"),
    ]
}

#[test]
fn a_rig_history_round_trips_unchanged() {
    let original = history();
    let messages = from_rig(&original).unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[0].role, Role::System);
    assert_eq!(messages[0].text(), "You are a support agent.");
    // Calls are Anthropic-style parts of the assistant message, with the
    // provider's ids and the arguments as a JSON object.
    let calls: Vec<&ToolCall> = messages[2].calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "track")
    );
    assert_eq!(calls[1].arguments, json!({"order": 42}));
    assert!(
        matches!(&messages[2].content.parts()[0], Part::Thinking { thinking, .. } if thinking == "Track both orders.")
    );
    // Both results answer their calls from one user message.
    assert_eq!(
        messages[3].answered_ids().collect::<Vec<_>>(),
        ["call_a", "call_b"]
    );
    // The image's URL and detail are read.
    let Part::Image(image) = &messages[1].content.parts()[1] else {
        panic!("expected an image, got {:?}", messages[1].content);
    };
    assert_eq!(image.detail.as_deref(), Some("low"));
    // Back to rig: the very values rig built.
    assert_eq!(to_rig(&messages).unwrap(), original);
}

#[test]
fn a_local_call_id_and_provider_fields_survive() {
    // A call rig gave an id itself (the provider sent none), and an
    // assistant turn whose text carries a provider item.
    let call = rig_core::message::ToolCall::from_wire(
        "",
        ToolFunction::new(ToolName::new("now").unwrap(), json!({})),
    );
    let text = Text::new("Checking the time.");
    let original = vec![
        RigMessage::user("What time is it?"),
        RigMessage::Assistant(AssistantMessage::new(vec![
            AssistantContent::Text(text),
            AssistantContent::ToolCall(call.clone()),
        ])),
        RigMessage::tool_results(vec![
            call.result(vec![ToolResultContent::Text(Text::new("09:00"))]),
        ]),
    ];
    let messages = from_rig(&original).unwrap();
    // Call and result share the local id, so they group as one unit.
    let id = messages[1].calls().next().unwrap().id.clone();
    assert_eq!(
        messages[2].answered_ids().collect::<Vec<_>>(),
        [id.as_str()]
    );
    assert_eq!(to_rig(&messages).unwrap(), original);
}

#[test]
fn a_trimmed_rig_history_keeps_calls_with_their_results() {
    let messages = from_rig(&history()).unwrap();
    // A budget far below the whole history: the tool turn (messages 2 and
    // 3) must go or stay as one; whatever is kept converts back to rig.
    let window = trim(&messages, &Trim::anthropic(60)).unwrap();
    let kept = &window.positions;
    assert_eq!(kept.first(), Some(&0), "the system prompt is pinned");
    assert_eq!(kept.last(), Some(&5), "the newest question is kept");
    assert_eq!(
        kept.contains(&2),
        kept.contains(&3),
        "call and result split: {kept:?}"
    );
    let back = to_rig(&window.cloned_messages()).unwrap();
    assert_eq!(back.len(), kept.len());
    assert_eq!(
        back.last(),
        Some(&RigMessage::user("Can you try 42 again later?"))
    );
}

#[test]
fn an_openai_conversation_becomes_rig_messages() {
    // OpenAI-shaped messages: calls in `tool_calls`, the result a `tool`
    // message; rig puts both in content parts and needs the tool's name,
    // which comes from the call.
    let doc = cupel_chat::Transcript::parse(
        r#"[{"role": "user", "content": "Track 42"},
            {"role": "assistant", "content": null, "tool_calls": [
              {"id": "call_1", "type": "function",
               "function": {"name": "track", "arguments": "{\"order\":42}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "In transit"}]"#,
    )
    .unwrap();
    let out = to_rig(doc.messages()).unwrap();
    let track = ToolName::new("track").unwrap();
    let call = rig_core::message::ToolCall::from_wire(
        "call_1",
        ToolFunction::new(track.clone(), json!({"order": 42})),
    );
    let expected = vec![
        RigMessage::user("Track 42"),
        RigMessage::Assistant(AssistantMessage::new(vec![AssistantContent::ToolCall(
            call.clone(),
        )])),
        RigMessage::tool_results(vec![
            call.result(vec![ToolResultContent::Text(Text::new("In transit"))]),
        ]),
    ];
    assert_eq!(out, expected);
}

#[test]
fn a_rig_audio_part_is_refused_with_its_position() {
    let history = vec![
        RigMessage::user("Hi"),
        RigMessage::User {
            content: vec![
                UserContent::Text(Text::new("Listen:")),
                UserContent::Audio(Audio {
                    data: DocumentSourceKind::Base64("UklGRg==".into()),
                    media_type: None,
                }),
            ],
        },
    ];
    let err = from_rig(&history).unwrap_err().to_string();
    assert!(
        err.starts_with("messages[1].content[1]: a rig `audio` part"),
        "{err}"
    );
}

#[test]
fn a_rig_image_by_file_id_is_refused() {
    let history = vec![RigMessage::User {
        content: vec![UserContent::Image(Image {
            data: DocumentSourceKind::FileId("file_123".into()),
            ..Image::default()
        })],
    }];
    let err = from_rig(&history).unwrap_err().to_string();
    assert!(
        err.starts_with("messages[0].content[0]: a rig image given as `fileId`"),
        "{err}"
    );
}

#[test]
fn what_rig_cannot_hold_is_refused_not_dropped() {
    // Anthropic thinking with a signature: rig keeps signatures in provider
    // items, which Cupel cannot build.
    let doc = cupel_chat::Transcript::parse(
        r#"{"messages": [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [
              {"type": "thinking", "thinking": "Greet back.", "signature": "sig"},
              {"type": "text", "text": "Hello!"}]}]}"#,
    )
    .unwrap();
    let err = to_rig(doc.messages()).unwrap_err().to_string();
    assert!(
        err.starts_with("messages[1].content[0]: rig has no field"),
        "{err}"
    );
    // A tool result whose call is not in the messages: no tool name.
    let err = to_rig(&[Message::tool("call_9", "done")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("call call_9 is not in the messages before it"),
        "{err}"
    );
    // A field rig has no place for (Anthropic `cache_control` on a text
    // block) is named, not dropped.
    let doc = cupel_chat::Transcript::parse(
        r#"{"messages": [{"role": "user", "content": [
              {"type": "text", "text": "Long document...", "cache_control": {"type": "ephemeral"}}]}]}"#,
    )
    .unwrap();
    let err = to_rig(doc.messages()).unwrap_err().to_string();
    assert!(
        err.starts_with("messages[0].content[0].cache_control: rig has no field"),
        "{err}"
    );
}
