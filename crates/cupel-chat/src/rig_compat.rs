//! Conversions from and to rig's completion messages (feature `rig`).
//!
//! rig (`rig-core`) keeps a turn's tool calls and tool results as content
//! parts of assistant and user messages, the layout of Anthropic Messages,
//! so a rig history becomes [`Message`]s with [`Part`]s and is trimmed with
//! [`Format::Anthropic`](crate::Format::Anthropic) rules
//! ([`Trim::anthropic`](crate::Trim::anthropic)). The conversion goes through
//! rig's own serde form: every rig field Cupel does not model (`native`
//! provider items, citations, a turn's `origin` and `stop`, a tool result's
//! `name`, a rig-issued local call id) is kept in the part's or message's
//! `extra` and written back unchanged. A part with no Cupel equivalent is an
//! error naming it, never dropped.

use std::collections::BTreeMap;

use rig_core::completion::Message as RigMessage;
use serde_json::{Value, json};

use crate::wire::take_str;
use crate::{
    ChatError, Content, Extra, Image, ImageSource, Message, Part, Role, ToolCall, ToolResult,
};

/// The `extra` key holding a rig call id that is not a provider's (a
/// rig-issued `{"local": ...}` id), so it is written back as it was.
const RIG_CALL_ID: &str = "rig_call_id";

fn shape(path: &str, message: impl Into<String>) -> ChatError {
    ChatError::Shape {
        path: path.to_string(),
        message: message.into(),
    }
}

/// rig completion messages (an agent's history) as [`Message`]s.
///
/// ```
/// use rig_core::completion::Message as RigMessage;
/// use cupel_chat::{Part, Role, from_rig};
///
/// let history = vec![RigMessage::user("Where is my parcel?"), RigMessage::assistant("In transit.")];
/// let messages = from_rig(&history)?;
/// assert_eq!(messages[0].role, Role::User);
/// assert_eq!(messages[1].text(), "In transit.");
/// assert!(matches!(messages[1].content.parts()[0], Part::Text { .. }));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the part (`messages[i].content[j]`) that has
/// no Cupel equivalent: audio, video, a document, a provider item rig keeps
/// opaque, or an image given as a file id, raw bytes or nothing.
pub fn from_rig(messages: &[RigMessage]) -> Result<Vec<Message>, ChatError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let path = format!("messages[{i}]");
            let value = serde_json::to_value(m)
                .map_err(|e| shape(&path, format!("rig could not write the message: {e}")))?;
            rig_message_from_value(value, &path)
        })
        .collect()
}

/// [`Message`]s (a trimmed window, say) as rig completion messages.
///
/// Messages read from rig come back as they were. Messages from other
/// formats convert too: an OpenAI `tool` message becomes a user message
/// holding one tool result (its tool name taken from the call it answers),
/// and an OpenAI assistant's `tool_calls` become tool-call parts.
///
/// ```
/// use cupel_chat::{Message, to_rig};
/// use rig_core::completion::Message as RigMessage;
///
/// let out = to_rig(&[Message::system("Be brief."), Message::user("Hi")])?;
/// assert_eq!(out[0], RigMessage::System { content: "Be brief.".into() });
/// assert_eq!(out[1], RigMessage::user("Hi"));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::Shape`] naming the message or part rig cannot represent: a
/// role other than system, developer, user, assistant or tool, a system
/// prompt with non-text parts, thinking with a signature or redacted
/// thinking, an unknown part, a tool result whose call is not in the
/// messages before it, arguments that are not a JSON object, or a field rig
/// has no place for (an OpenAI `name`, an Anthropic `cache_control`, ...:
/// the error's path names it) that converting would drop.
pub fn to_rig(messages: &[Message]) -> Result<Vec<RigMessage>, ChatError> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let path = format!("messages[{i}]");
            for call in m.calls() {
                names.insert(call.id.clone(), call.name.clone());
            }
            let value = rig_message_to_value(m, &names, &path)?;
            let out: RigMessage = serde_json::from_value(value.clone())
                .map_err(|e| shape(&path, format!("rig cannot represent this message: {e}")))?;
            // rig ignores fields it does not know; refuse rather than lose them.
            let written = serde_json::to_value(&out)
                .map_err(|e| shape(&path, format!("rig could not write the message: {e}")))?;
            match lost_field(&value, &written, &path) {
                Some(lost) => Err(shape(
                    &lost,
                    "rig has no field for this; converting would drop it",
                )),
                None => Ok(out),
            }
        })
        .collect()
}

/// The path of the first object field in `built` that rig's own writing of
/// the value (`written`) no longer has.
fn lost_field(built: &Value, written: &Value, path: &str) -> Option<String> {
    match (built, written) {
        (Value::Object(b), Value::Object(w)) => b.iter().find_map(|(k, v)| {
            let here = format!("{path}.{k}");
            match w.get(k) {
                None if !v.is_null() => Some(here),
                None => None,
                Some(wv) => lost_field(v, wv, &here),
            }
        }),
        (Value::Array(b), Value::Array(w)) => b
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (bv, wv))| lost_field(bv, wv, &format!("{path}[{i}]"))),
        _ => None,
    }
}

// ---- rig -> Cupel ------------------------------------------------------

fn rig_message_from_value(value: Value, path: &str) -> Result<Message, ChatError> {
    let Value::Object(mut obj) = value else {
        return Err(shape(path, "a rig message is a JSON object"));
    };
    let role = take_str(&mut obj, "role").unwrap_or_default();
    if role == "system" {
        let text = take_str(&mut obj, "content").unwrap_or_default();
        let mut m = Message::system(text);
        m.extra = obj;
        return Ok(m);
    }
    let role = match role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return Err(shape(path, format!("rig role `{other}` is not known"))),
    };
    let parts = match obj.remove("content") {
        Some(Value::Array(parts)) => parts,
        _ => return Err(shape(path, "a rig message's content is an array")),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(j, p)| part_from_rig(p, &format!("{path}.content[{j}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Message::with_parts(role, parts, obj))
}

fn part_from_rig(value: Value, path: &str) -> Result<Part, ChatError> {
    let Value::Object(mut obj) = value else {
        return Err(shape(path, "a rig content part is a JSON object"));
    };
    let kind = take_str(&mut obj, "type").unwrap_or_default();
    match kind.as_str() {
        "text" => {
            let text = take_str(&mut obj, "text").unwrap_or_default();
            Ok(Part::Text { text, extra: obj })
        }
        "reasoning" => {
            let thinking = take_str(&mut obj, "text").unwrap_or_default();
            Ok(Part::Thinking {
                thinking,
                signature: None,
                extra: obj,
            })
        }
        "image" => image_from_rig(obj, path).map(Part::Image),
        "toolcall" => call_from_rig(obj, path).map(Part::ToolCall),
        "toolresult" => result_from_rig(obj, path).map(Part::ToolResult),
        other => Err(shape(
            path,
            format!("a rig `{other}` part has no Cupel equivalent; convert it to text first"),
        )),
    }
}

fn image_from_rig(mut obj: Extra, path: &str) -> Result<Image, ChatError> {
    let data = obj.remove("data").unwrap_or(Value::Null);
    let kind = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let value = data.get("value").and_then(Value::as_str);
    let source = match (kind, value) {
        ("url", Some(url)) => ImageSource::Url(url.to_string()),
        ("base64", Some(b64)) => {
            let media = obj.get("media_type").and_then(Value::as_str).unwrap_or("");
            ImageSource::Base64 {
                media_type: image_mime(media),
                data: b64.to_string(),
            }
        }
        _ => {
            return Err(shape(
                path,
                format!(
                    "a rig image given as `{kind}` has no Cupel equivalent (only url and base64 map)"
                ),
            ));
        }
    };
    let detail = take_str(&mut obj, "detail");
    Ok(Image {
        source,
        detail,
        source_extra: Extra::new(),
        extra: obj,
    })
}

/// rig writes image media types as lowercase variant names (`png`, `svg`).
fn image_mime(variant: &str) -> String {
    match variant.to_ascii_lowercase().as_str() {
        "" => String::new(),
        "svg" => "image/svg+xml".to_string(),
        other => format!("image/{other}"),
    }
}

/// rig's call id: `{"provider": "call_1"}` or a rig-issued `{"local": ...}`.
fn call_id_from_rig(id: Value, extra: &mut Extra, path: &str) -> Result<String, ChatError> {
    match id.get("provider").and_then(Value::as_str) {
        Some(p) => Ok(p.to_string()),
        None => {
            let local = id
                .get("local")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    shape(
                        path,
                        format!("a rig call id is `provider` or `local`, got {id}"),
                    )
                })?
                .to_string();
            extra.insert(RIG_CALL_ID.to_string(), id);
            Ok(local)
        }
    }
}

fn call_from_rig(mut obj: Extra, path: &str) -> Result<ToolCall, ChatError> {
    let id = obj.remove("id").unwrap_or(Value::Null);
    let id = call_id_from_rig(id, &mut obj, path)?;
    let Some(Value::Object(mut function)) = obj.remove("function") else {
        return Err(shape(path, "a rig tool call has a `function` object"));
    };
    let name = take_str(&mut function, "name").unwrap_or_default();
    let arguments = function.remove("arguments").unwrap_or_else(|| json!({}));
    Ok(ToolCall {
        id,
        name,
        arguments,
        extra: obj,
        function_extra: function,
    })
}

fn result_from_rig(mut obj: Extra, path: &str) -> Result<ToolResult, ChatError> {
    let call = obj.remove("call").unwrap_or(Value::Null);
    let call_id = call_id_from_rig(call, &mut obj, path)?;
    let is_error = match obj.remove("is_error") {
        Some(Value::Bool(b)) => Some(b),
        _ => None,
    };
    let parts = match obj.remove("content") {
        Some(Value::Array(parts)) => parts,
        _ => Vec::new(),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(k, p)| result_part_from_rig(p, &format!("{path}.content[{k}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ToolResult {
        call_id,
        content: Content::Parts(parts),
        is_error,
        extra: obj,
    })
}

/// A tool result's `json` part stays as written ([`Part::Other`]); its text
/// and images map like a message's.
fn result_part_from_rig(value: Value, path: &str) -> Result<Part, ChatError> {
    if value.get("type").and_then(Value::as_str) == Some("json") {
        return Ok(Part::Other(value));
    }
    part_from_rig(value, path)
}

// ---- Cupel -> rig ------------------------------------------------------

fn rig_message_to_value(
    m: &Message,
    names: &BTreeMap<String, String>,
    path: &str,
) -> Result<Value, ChatError> {
    let mut obj = m.extra.clone();
    if let Some(name) = &m.name {
        obj.insert("name".into(), json!(name));
    }
    let role = match &m.role {
        Role::System | Role::Developer => {
            if m.content
                .parts()
                .iter()
                .any(|p| !matches!(p, Part::Text { .. }))
            {
                return Err(shape(path, "a rig system message holds text only"));
            }
            obj.insert("role".into(), json!("system"));
            obj.insert("content".into(), json!(m.text()));
            return Ok(Value::Object(obj));
        }
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => return tool_message_to_rig(m, names, path),
        Role::Other(r) => return Err(shape(path, format!("rig has no `{r}` role"))),
    };
    let mut parts = match &m.content {
        Content::Absent | Content::Null => Vec::new(),
        Content::Text(t) => vec![json!({"type": "text", "text": t})],
        Content::Parts(ps) => ps
            .iter()
            .enumerate()
            .map(|(j, p)| part_to_rig(p, names, &format!("{path}.content[{j}]")))
            .collect::<Result<Vec<_>, _>>()?,
    };
    for (k, call) in m.tool_calls.iter().flatten().enumerate() {
        parts.push(call_to_rig(call, &format!("{path}.tool_calls[{k}]"))?);
    }
    obj.insert("role".into(), json!(role));
    obj.insert("content".into(), Value::Array(parts));
    Ok(Value::Object(obj))
}

fn tool_message_to_rig(
    m: &Message,
    names: &BTreeMap<String, String>,
    path: &str,
) -> Result<Value, ChatError> {
    let call_id = m.tool_call_id.clone().unwrap_or_default();
    let result = ToolResult {
        call_id,
        content: m.content.clone(),
        is_error: None,
        extra: Extra::new(),
    };
    let part = result_to_rig(&result, names, &format!("{path}.content[0]"))?;
    let mut obj = m.extra.clone();
    if let Some(name) = &m.name {
        obj.insert("name".into(), json!(name));
    }
    obj.insert("role".into(), json!("user"));
    obj.insert("content".into(), json!([part]));
    Ok(Value::Object(obj))
}

fn part_to_rig(p: &Part, names: &BTreeMap<String, String>, path: &str) -> Result<Value, ChatError> {
    let obj = match p {
        Part::Text { text, extra } => with_extra(extra, json!({"type": "text", "text": text})),
        Part::Image(image) => image_to_rig(image),
        Part::ToolCall(call) => return call_to_rig(call, path),
        Part::ToolResult(result) => return result_to_rig(result, names, path),
        Part::Thinking {
            thinking,
            signature: None,
            extra,
        } => with_extra(extra, json!({"type": "reasoning", "text": thinking})),
        Part::Thinking { .. } => {
            return Err(shape(
                path,
                "rig has no field for a thinking block's signature",
            ));
        }
        Part::RedactedThinking { .. } => {
            return Err(shape(
                path,
                "rig has no redacted-thinking part that carries its data",
            ));
        }
        Part::Other(v) => {
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("untyped");
            return Err(shape(
                path,
                format!("a `{kind}` part has no rig equivalent"),
            ));
        }
    };
    Ok(obj)
}

fn with_extra(extra: &Extra, base: Value) -> Value {
    let mut obj = extra.clone();
    if let Value::Object(b) = base {
        for (k, v) in b {
            obj.insert(k, v);
        }
    }
    Value::Object(obj)
}

fn image_to_rig(image: &Image) -> Value {
    let mut obj = image.extra.clone();
    let data = match &image.source {
        ImageSource::Url(url) => json!({"type": "url", "value": url}),
        ImageSource::Base64 { media_type, data } => {
            if !obj.contains_key("media_type")
                && let Some(variant) = rig_image_variant(media_type)
            {
                obj.insert("media_type".into(), json!(variant));
            }
            json!({"type": "base64", "value": data})
        }
    };
    obj.insert("type".into(), json!("image"));
    obj.insert("data".into(), data);
    if let Some(d) = &image.detail {
        obj.insert("detail".into(), json!(d));
    }
    Value::Object(obj)
}

fn rig_image_variant(mime: &str) -> Option<String> {
    let sub = mime.strip_prefix("image/")?;
    Some(if sub == "svg+xml" {
        "svg".into()
    } else {
        sub.to_ascii_lowercase()
    })
}

fn call_id_to_rig(id: &str, extra: &Extra) -> Value {
    extra
        .get(RIG_CALL_ID)
        .cloned()
        .unwrap_or_else(|| json!({"provider": id}))
}

fn call_to_rig(call: &ToolCall, path: &str) -> Result<Value, ChatError> {
    let arguments = match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(shape(
                    path,
                    format!(
                        "tool call {} has arguments that are not a JSON object: {s}",
                        call.id
                    ),
                ));
            }
        },
        other => {
            return Err(shape(
                path,
                format!(
                    "tool call {} has arguments that are not a JSON object: {other}",
                    call.id
                ),
            ));
        }
    };
    let mut function = call.function_extra.clone();
    function.insert("name".into(), json!(call.name));
    function.insert("arguments".into(), arguments);
    let mut obj = call.extra.clone();
    obj.insert("id".into(), call_id_to_rig(&call.id, &call.extra));
    obj.remove(RIG_CALL_ID);
    obj.insert("type".into(), json!("toolcall"));
    obj.insert("function".into(), Value::Object(function));
    Ok(Value::Object(obj))
}

fn result_to_rig(
    result: &ToolResult,
    names: &BTreeMap<String, String>,
    path: &str,
) -> Result<Value, ChatError> {
    let mut obj = result.extra.clone();
    if !obj.contains_key("name") {
        let name = names.get(&result.call_id).ok_or_else(|| {
            shape(
                path,
                format!(
                    "rig needs the tool name of a result; call {} is not in the messages before it",
                    result.call_id
                ),
            )
        })?;
        obj.insert("name".into(), json!(name));
    }
    let content = match &result.content {
        Content::Absent | Content::Null => Vec::new(),
        Content::Text(t) => vec![json!({"type": "text", "text": t})],
        Content::Parts(ps) => ps
            .iter()
            .enumerate()
            .map(|(k, p)| match p {
                Part::Other(v) if v.get("type").and_then(Value::as_str) == Some("json") => {
                    Ok(v.clone())
                }
                _ => part_to_rig(p, names, &format!("{path}.content[{k}]")),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    obj.insert(
        "call".into(),
        call_id_to_rig(&result.call_id, &result.extra),
    );
    obj.remove(RIG_CALL_ID);
    obj.insert("type".into(), json!("toolresult"));
    obj.insert("content".into(), Value::Array(content));
    if result.is_error == Some(true) {
        obj.insert("is_error".into(), json!(true));
    }
    Ok(Value::Object(obj))
}
