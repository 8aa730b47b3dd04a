//! OpenAI Responses input items, both directions.
//!
//! Each item of `input` becomes one [`Message`]; what the model does not
//! name stays in [`Message::extra`] (the item's `type` included), so the
//! item is written back as the same JSON value:
//!
//! | item `type` | message |
//! |---|---|
//! | `message` (or no `type`, a `role`) | its role; `content` a string or parts (`input_text`, `output_text` as [`Part::Text`], others kept as they are) |
//! | `function_call` | [`Role::Assistant`] with one [`ToolCall`] (`call_id`, `name`, `arguments`) |
//! | `function_call_output` | [`Role::Tool`], `tool_call_id` from `call_id`, content from `output` |
//! | any other `…_call` with a `call_id` | [`Role::Assistant`] with one [`ToolCall`] named by its `name` or type |
//! | any other `…_call_output` with a `call_id` | [`Role::Tool`] answering it |
//! | anything else (`reasoning`, `compaction`, `web_search_call`, `item_reference`, ...) | [`Role::Other`] named by its type |

use serde_json::{Map, Value};

use crate::error::ChatError;
use crate::message::{Content, Extra, Message, Part, Role, ToolCall};
use crate::wire::{kind_of, take_str};

/// How errors name the format.
const AS: &str = "read as an OpenAI Responses input item";

fn shape(path: &str, message: impl Into<String>) -> ChatError {
    ChatError::Shape {
        path: path.to_string(),
        message: format!("{} ({AS})", message.into()),
    }
}

fn item_type(obj: &Extra) -> Option<&str> {
    obj.get("type").and_then(Value::as_str)
}

/// The item type of a message read from a Responses document: `message`
/// for a message (also one written without `type`), else its `type`.
pub(crate) fn kind(m: &Message) -> &str {
    match m.extra.get("type").and_then(Value::as_str) {
        Some(t) => t,
        None => "message",
    }
}

/// Whether `m` is a `reasoning` item: it must be sent with the item that
/// follows it.
pub(crate) fn is_reasoning(m: &Message) -> bool {
    matches!(&m.role, Role::Other(r) if r == "reasoning") && kind(m) == "reasoning"
}

/// Whether `m` is a `compaction` item: an opaque summary of everything
/// before it, from which a window may start.
pub(crate) fn is_compaction(m: &Message) -> bool {
    matches!(&m.role, Role::Other(r) if r == "compaction") && kind(m) == "compaction"
}

/// Reads one input item; `path` names it in errors (`input[3]`).
pub(crate) fn item_from_value(v: Value, path: &str) -> Result<Message, ChatError> {
    let Value::Object(obj) = v else {
        return Err(shape(
            path,
            format!("an item must be an object, not {}", kind_of(&v)),
        ));
    };
    let ty = match obj.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(other) => {
            return Err(shape(
                &format!("{path}.type"),
                format!("`type` must be a string, not {}", kind_of(other)),
            ));
        }
    };
    match ty.as_deref() {
        None | Some("message") => message_item(obj, path),
        Some("function_call") => function_call(obj, path),
        Some("function_call_output") => call_output(obj, path, true),
        Some(t) if t.ends_with("_call_output") && obj.get("call_id").is_some() => {
            call_output(obj, path, false)
        }
        Some(t) if t.ends_with("_call") && obj.get("call_id").is_some_and(Value::is_string) => {
            other_call(obj, t.to_owned())
        }
        Some(t) => Ok(Message {
            role: Role::Other(t.to_owned()),
            content: Content::Absent,
            name: None,
            tool_calls: None,
            tool_call_id: None,
            extra: obj,
        }),
    }
}

fn message_item(mut obj: Extra, path: &str) -> Result<Message, ChatError> {
    let Some(role) = take_str(&mut obj, "role") else {
        return Err(shape(
            path,
            "an item needs a string `type`, or a string `role` for a message",
        ));
    };
    let content = match obj.remove("content") {
        None => Content::Absent,
        Some(Value::Null) => Content::Null,
        Some(Value::String(s)) => Content::Text(s),
        Some(Value::Array(parts)) => Content::Parts(parts.into_iter().map(part_from).collect()),
        Some(other) => {
            return Err(shape(
                &format!("{path}.content"),
                format!(
                    "a message's content must be a string or an array of parts, not {}",
                    kind_of(&other)
                ),
            ));
        }
    };
    Ok(Message {
        role: Role::from_wire(&role),
        content,
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: obj,
    })
}

fn function_call(mut obj: Extra, path: &str) -> Result<Message, ChatError> {
    let (Some(id), Some(name)) = (take_str(&mut obj, "call_id"), take_str(&mut obj, "name")) else {
        return Err(shape(
            path,
            "a function_call needs a string `call_id` and `name`",
        ));
    };
    let arguments = match obj.remove("arguments") {
        Some(Value::String(s)) => Value::String(s),
        Some(other) => {
            return Err(shape(
                &format!("{path}.arguments"),
                format!(
                    "a function_call's `arguments` must be a JSON string, not {}",
                    kind_of(&other)
                ),
            ));
        }
        None => {
            return Err(shape(
                path,
                "a function_call needs its `arguments` (a JSON string)",
            ));
        }
    };
    Ok(call_message(
        ToolCall {
            id,
            name,
            arguments,
            extra: Extra::new(),
            function_extra: Extra::new(),
        },
        obj,
    ))
}

/// A hosted or custom tool call answered by an output item (`call_id`
/// taken; its name read, not taken, for labels).
fn other_call(mut obj: Extra, ty: String) -> Result<Message, ChatError> {
    let id = take_str(&mut obj, "call_id").unwrap_or_default();
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .map_or(ty, str::to_owned);
    Ok(call_message(
        ToolCall {
            id,
            name,
            arguments: Value::Null,
            extra: Extra::new(),
            function_extra: Extra::new(),
        },
        obj,
    ))
}

fn call_message(call: ToolCall, extra: Extra) -> Message {
    Message {
        role: Role::Assistant,
        content: Content::Absent,
        name: None,
        tool_calls: Some(vec![call]),
        tool_call_id: None,
        extra,
    }
}

/// A `function_call_output` (`output` read as content) or another
/// `…_call_output` (`output` kept as it is).
fn call_output(mut obj: Extra, path: &str, function: bool) -> Result<Message, ChatError> {
    let id = match obj.get("call_id") {
        Some(Value::String(_)) => take_str(&mut obj, "call_id"),
        Some(other) => {
            return Err(shape(
                &format!("{path}.call_id"),
                format!("`call_id` must be a string, not {}", kind_of(other)),
            ));
        }
        None => return Err(shape(path, "an output item needs its `call_id`")),
    };
    let content = if function {
        match obj.remove("output") {
            None => Content::Absent,
            Some(Value::String(s)) => Content::Text(s),
            Some(Value::Array(parts)) => Content::Parts(parts.into_iter().map(part_from).collect()),
            Some(other) => {
                obj.insert("output".into(), other);
                Content::Absent
            }
        }
    } else {
        Content::Absent
    };
    Ok(Message {
        role: Role::Tool,
        content,
        name: None,
        tool_calls: None,
        tool_call_id: id,
        extra: obj,
    })
}

/// A content part: `input_text` / `output_text` (and `text`) as text, the
/// rest as it is.
fn part_from(v: Value) -> Part {
    let Value::Object(mut obj) = v else {
        return Part::Other(v);
    };
    let text_part = matches!(
        item_type(&obj),
        Some("input_text" | "output_text" | "text" | "summary_text")
    );
    if text_part && let Some(text) = take_str(&mut obj, "text") {
        return Part::Text { text, extra: obj };
    }
    Part::Other(Value::Object(obj))
}

fn part_to(p: &Part) -> Value {
    match p {
        Part::Text { text, extra } => {
            let mut m = Map::new();
            if !extra.contains_key("type") {
                m.insert("type".into(), Value::String("input_text".into()));
            }
            m.insert("text".into(), Value::String(text.clone()));
            extend(&mut m, extra);
            Value::Object(m)
        }
        Part::Other(v) => v.clone(),
        // A part another format made: as Chat Completions would write it.
        other => crate::wire::part_value(other, crate::wire::Format::OpenAi),
    }
}

fn content_to(c: &Content) -> Option<Value> {
    match c {
        Content::Absent => None,
        Content::Null => Some(Value::Null),
        Content::Text(t) => Some(Value::String(t.clone())),
        Content::Parts(p) => Some(Value::Array(p.iter().map(part_to).collect())),
    }
}

fn extend(m: &mut Extra, extra: &Extra) {
    for (k, v) in extra {
        m.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// Writes one input item (the inverse of [`item_from_value`]).
pub(crate) fn item_to_value(m: &Message) -> Value {
    let mut obj = Map::new();
    let kind = kind(m);
    let call = m.tool_calls.as_ref().and_then(|c| c.first());
    match (kind, call, &m.tool_call_id) {
        ("message", _, _) => {
            obj.insert("role".into(), Value::String(m.role.as_str().to_owned()));
            if let Some(c) = content_to(&m.content) {
                obj.insert("content".into(), c);
            }
        }
        ("function_call", Some(c), _) => {
            obj.insert("call_id".into(), Value::String(c.id.clone()));
            obj.insert("name".into(), Value::String(c.name.clone()));
            obj.insert("arguments".into(), c.arguments.clone());
            extend(&mut obj, &c.extra);
        }
        (_, Some(c), _) => {
            obj.insert("call_id".into(), Value::String(c.id.clone()));
            extend(&mut obj, &c.extra);
        }
        (_, None, Some(id)) => {
            obj.insert("call_id".into(), Value::String(id.clone()));
            if kind == "function_call_output"
                && let Some(c) = content_to(&m.content)
            {
                obj.insert("output".into(), c);
            }
        }
        _ => {}
    }
    extend(&mut obj, &m.extra);
    Value::Object(obj)
}

/// Whether a JSON value looks like a Responses input item rather than a
/// Chat Completions message (for detection): an item `type` Chat
/// Completions has not, or content parts only Responses uses.
pub(crate) fn looks_like_item(v: &Value) -> bool {
    if let Some(t) = v.get("type").and_then(Value::as_str) {
        return t == "message"
            || t == "reasoning"
            || t == "compaction"
            || t == "item_reference"
            || t.ends_with("_call")
            || t.ends_with("_call_output");
    }
    v.get("content")
        .and_then(Value::as_array)
        .is_some_and(|parts| {
            parts.iter().any(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("input_text" | "output_text" | "input_image" | "input_file" | "refusal")
                )
            })
        })
}
