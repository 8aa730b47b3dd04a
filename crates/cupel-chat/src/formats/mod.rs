//! The formats beyond Chat Completions and Anthropic Messages: OpenAI
//! Responses input items ([`responses`]) and Gemini contents
//! ([`gemini`]), and what the rest of the crate asks of a format: where a
//! request body keeps its conversation and its system prompt, and the
//! provider rules that are not about tool calls and results.

pub(crate) mod gemini;
pub(crate) mod responses;

use serde_json::Value;

use crate::error::ChatError;
use crate::message::Message;
use crate::wire::{self, Format};

/// The request-body member that holds the conversation.
pub(crate) fn conversation_key(format: Format) -> &'static str {
    match format {
        Format::OpenAi | Format::Anthropic => "messages",
        Format::Responses => "input",
        Format::Gemini => "contents",
    }
}

/// The request-body member read as a leading system message (pinned by
/// default, written back to the same member): Anthropic `system`,
/// Responses `instructions`, Gemini `systemInstruction`.
pub(crate) fn system_key(format: Format) -> Option<&'static str> {
    match format {
        Format::OpenAi => None,
        Format::Anthropic => Some("system"),
        Format::Responses => Some("instructions"),
        Format::Gemini => Some("systemInstruction"),
    }
}

/// Reads the system member of a body in `format`.
pub(crate) fn system_from(format: Format, v: Value) -> Result<Message, ChatError> {
    match format {
        Format::Responses => match v {
            Value::String(s) => Ok(Message::system(s)),
            other => Err(ChatError::Shape {
                path: "instructions".into(),
                message: format!(
                    "`instructions` must be a string, not {} (read as an OpenAI Responses request)",
                    wire::kind_of(&other)
                ),
            }),
        },
        Format::Gemini => gemini::system_from(v),
        _ => wire::anthropic_system_from(v),
    }
}

/// Writes system messages to the system member of a body in `format`.
pub(crate) fn system_to(format: Format, system: &[&Message]) -> Option<Value> {
    match format {
        Format::Responses => match system {
            [] => None,
            many => Some(Value::String(
                many.iter()
                    .map(|m| m.text())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            )),
        },
        Format::Gemini => gemini::system_to(system),
        _ => wire::anthropic_system_to(system),
    }
}

/// Whether `m`, between a call and a result answering it, separates them
/// (for the note on distant results): anything at all in Anthropic and
/// Gemini, anything but results in Chat Completions, anything but results
/// and other call items (parallel calls) in Responses.
pub(crate) fn separates_call_and_result(format: Format, m: &Message) -> bool {
    match format {
        Format::Anthropic | Format::Gemini => true,
        Format::Responses => !m.is_tool_result() && m.tool_calls.is_none(),
        Format::OpenAi => !m.is_tool_result(),
    }
}

/// Whether a window may start with `m` although it is not a user message:
/// a Responses `compaction` item, the opaque summary of all before it.
pub(crate) fn starts_window(format: Format, m: &Message) -> bool {
    format == Format::Responses && responses::is_compaction(m)
}

/// Whether `m` is not valid without a message right after it: a Responses
/// `reasoning` item needs the item it reasoned towards.
pub(crate) fn needs_next(format: Format, m: &Message) -> bool {
    format == Format::Responses && responses::is_reasoning(m)
}

/// Whether `m` moves with `next`, the message right after it: a Responses
/// `reasoning` item with its item, and a call item with the call item
/// after it (parallel calls of one response, which OpenAI writes as
/// consecutive items).
pub(crate) fn binds_to_next(format: Format, m: &Message, next: &Message) -> bool {
    format == Format::Responses
        && (responses::is_reasoning(m) || (m.tool_calls.is_some() && next.tool_calls.is_some()))
}

/// The format of a bare array from its first elements that decide it:
/// Gemini contents, Responses items, or `None` (a Chat Completions or
/// Anthropic messages array).
pub(crate) fn detect_array<'v>(items: impl Iterator<Item = &'v Value>) -> Option<Format> {
    for v in items {
        if gemini::looks_like_content(v) {
            return Some(Format::Gemini);
        }
        if responses::looks_like_item(v) {
            return Some(Format::Responses);
        }
    }
    None
}

/// Whether a call id is one Cupel made up (an id-less Gemini call), which
/// repeats when a turn does and is never written.
pub(crate) fn made_up_id(format: Format, id: &str) -> bool {
    format == Format::Gemini && gemini::is_made_up(id)
}

/// Fixes up messages read in `format` once all are read (Gemini calls
/// and responses without ids are paired).
pub(crate) fn link(format: Format, messages: &mut [Message]) {
    if format == Format::Gemini {
        gemini::link_calls(messages);
    }
}
