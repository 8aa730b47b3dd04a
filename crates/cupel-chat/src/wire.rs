//! The wire formats, both directions: OpenAI Chat Completions and
//! Anthropic Messages here, OpenAI Responses and Gemini in `formats`.
//!
//! Parsing takes the fields the model names out of each JSON object and keeps
//! the rest in `extra`; writing puts them back. A field is only taken when it
//! has the type the model expects, so an unexpected shape stays in `extra`
//! and is written back unchanged.

use serde_json::{Map, Value};

use crate::error::ChatError;
use crate::message::{
    Content, Extra, Image, ImageSource, Message, Part, Role, ToolCall, ToolResult,
};

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions (`messages` with roles system / developer /
    /// user / assistant / tool; `tool_calls`; `image_url` parts).
    OpenAi,
    /// Anthropic Messages (top-level `system`; content blocks `text`,
    /// `image`, `tool_use`, `tool_result`, `thinking`, `redacted_thinking`).
    Anthropic,
    /// OpenAI Responses (`input`: a string or items `message`,
    /// `function_call`, `function_call_output`, `reasoning`, `compaction`,
    /// ...; top-level `instructions`).
    Responses,
    /// Google Gemini `generateContent` (`contents` of `user` / `model`
    /// turns with `text`, `functionCall`, `functionResponse`, ... parts;
    /// top-level `systemInstruction`).
    Gemini,
}

impl Format {
    /// `openai`, `anthropic`, `responses` or `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Responses => "responses",
            Format::Gemini => "gemini",
        }
    }

    /// Reads `openai` / `anthropic` / `responses` (also `openai-responses`)
    /// / `gemini` (ASCII case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(Format::OpenAi),
            "anthropic" => Some(Format::Anthropic),
            "responses" | "openai-responses" => Some(Format::Responses),
            "gemini" => Some(Format::Gemini),
            _ => None,
        }
    }

    /// The name errors and reports use: `OpenAI Chat Completions`, ...
    pub fn title(self) -> &'static str {
        match self {
            Format::OpenAi => "OpenAI Chat Completions",
            Format::Anthropic => "Anthropic Messages",
            Format::Responses => "OpenAI Responses",
            Format::Gemini => "Gemini",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Takes `obj[key]` out when it is a string; anything else stays in place
/// (and keeps its position among the keys).
pub(crate) fn take_str(obj: &mut Extra, key: &str) -> Option<String> {
    match obj.get(key) {
        Some(Value::String(_)) => match obj.remove(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// `obj`, or (when its fields were all taken) a map without an allocation:
/// a map emptied by removals keeps its node (over 600 bytes), one per
/// message and part of a transcript.
fn shrink(obj: Extra) -> Extra {
    if obj.is_empty() { Extra::new() } else { obj }
}

fn take_bool(obj: &mut Extra, key: &str) -> Option<bool> {
    let b = obj.get(key)?.as_bool()?;
    obj.remove(key);
    Some(b)
}

/// Removes `type` when it equals `expected`.
fn take_type(obj: &mut Extra, expected: &str) {
    if obj.get("type").and_then(Value::as_str) == Some(expected) {
        obj.remove("type");
    }
}

fn with_type(kind: &str, fields: Vec<(&str, Value)>, extra: &Extra) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(kind.into()));
    for (k, v) in fields {
        m.insert(k.into(), v);
    }
    for (k, v) in extra {
        m.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(m)
}

fn shape(path: &str, message: impl Into<String>) -> ChatError {
    ChatError::Shape {
        path: path.to_string(),
        message: message.into(),
    }
}

fn content_from(v: Option<Value>, format: Format, path: &str) -> Result<Content, ChatError> {
    match v {
        None => Ok(Content::Absent),
        Some(Value::Null) => Ok(Content::Null),
        Some(Value::String(s)) => Ok(Content::Text(s)),
        Some(Value::Array(parts)) => parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| part_from(p, format, &format!("{path}[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Content::Parts),
        Some(other) => Err(shape(
            path,
            format!(
                "content must be a string, an array or null, not {}",
                kind_of(&other)
            ),
        )),
    }
}

/// How a JSON value is named in an error: `a string`, `an object`, ...
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn content_to(c: &Content, format: Format) -> Option<Value> {
    match c {
        Content::Absent => None,
        Content::Null => Some(Value::Null),
        Content::Text(t) => Some(Value::String(t.clone())),
        Content::Parts(p) => Some(Value::Array(p.iter().map(|p| part_to(p, format)).collect())),
    }
}

fn part_from(v: Value, format: Format, path: &str) -> Result<Part, ChatError> {
    let Value::Object(mut obj) = v else {
        return Ok(Part::Other(v));
    };
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let part = match (format, kind.as_str()) {
        (_, "text") if obj.get("text").is_some_and(Value::is_string) => {
            take_type(&mut obj, "text");
            let text = take_str(&mut obj, "text").unwrap_or_default();
            Part::Text {
                text,
                extra: shrink(obj),
            }
        }
        (Format::OpenAi, "image_url") => return openai_image_part(obj, path),
        (Format::Anthropic, "image") => return anthropic_image_part(obj, path),
        (Format::Anthropic, "tool_use") => return tool_use_part(obj, path),
        (Format::Anthropic, "tool_result") => return tool_result_part(obj, format, path),
        (Format::Anthropic, "thinking") if obj.get("thinking").is_some_and(Value::is_string) => {
            take_type(&mut obj, "thinking");
            let thinking = take_str(&mut obj, "thinking").unwrap_or_default();
            let signature = take_str(&mut obj, "signature");
            Part::Thinking {
                thinking,
                signature,
                extra: shrink(obj),
            }
        }
        (Format::Anthropic, "redacted_thinking")
            if obj.get("data").is_some_and(Value::is_string) =>
        {
            take_type(&mut obj, "redacted_thinking");
            let data = take_str(&mut obj, "data").unwrap_or_default();
            Part::RedactedThinking {
                data,
                extra: shrink(obj),
            }
        }
        _ => Part::Other(Value::Object(obj)),
    };
    Ok(part)
}

/// An OpenAI `image_url` part.
fn openai_image_part(mut obj: Extra, path: &str) -> Result<Part, ChatError> {
    let Some(Value::Object(mut inner)) = obj.remove("image_url") else {
        return Err(shape(path, "an image_url part needs an `image_url` object"));
    };
    let Some(url) = take_str(&mut inner, "url") else {
        return Err(shape(path, "an image_url part needs `image_url.url`"));
    };
    take_type(&mut obj, "image_url");
    let detail = take_str(&mut inner, "detail");
    Ok(Part::Image(Image {
        source: ImageSource::Url(url),
        detail,
        source_extra: shrink(inner),
        extra: shrink(obj),
    }))
}

/// An Anthropic `image` block (a source this version does not model stays a block of its own).
fn anthropic_image_part(mut obj: Extra, path: &str) -> Result<Part, ChatError> {
    let Some(Value::Object(mut src)) = obj.remove("source") else {
        return Err(shape(path, "an image block needs a `source` object"));
    };
    let source = match src.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let (Some(media_type), Some(data)) =
                (take_str(&mut src, "media_type"), take_str(&mut src, "data"))
            else {
                return Err(shape(
                    path,
                    "a base64 image source needs `media_type` and `data`",
                ));
            };
            take_type(&mut src, "base64");
            ImageSource::Base64 { media_type, data }
        }
        _ => match take_str(&mut src, "url") {
            Some(url) => {
                take_type(&mut src, "url");
                ImageSource::Url(url)
            }
            None => {
                // A source this version does not model (e.g. a file id): keep the block.
                obj.insert("source".into(), Value::Object(src));
                return Ok(Part::Other(Value::Object(obj)));
            }
        },
    };
    take_type(&mut obj, "image");
    Ok(Part::Image(Image {
        source,
        detail: None,
        source_extra: shrink(src),
        extra: shrink(obj),
    }))
}

/// An Anthropic `tool_use` block.
fn tool_use_part(mut obj: Extra, path: &str) -> Result<Part, ChatError> {
    let (Some(id), Some(name)) = (take_str(&mut obj, "id"), take_str(&mut obj, "name")) else {
        return Err(shape(path, "a tool_use block needs string `id` and `name`"));
    };
    take_type(&mut obj, "tool_use");
    let arguments = obj.remove("input").unwrap_or(Value::Object(Map::new()));
    Ok(Part::ToolCall(ToolCall {
        id,
        name,
        arguments,
        extra: shrink(obj),
        function_extra: Extra::new(),
    }))
}

/// An Anthropic `tool_result` block.
fn tool_result_part(mut obj: Extra, format: Format, path: &str) -> Result<Part, ChatError> {
    let Some(call_id) = take_str(&mut obj, "tool_use_id") else {
        return Err(shape(
            path,
            "a tool_result block needs a string `tool_use_id`",
        ));
    };
    take_type(&mut obj, "tool_result");
    let content = content_from(obj.remove("content"), format, &format!("{path}.content"))?;
    let is_error = take_bool(&mut obj, "is_error");
    Ok(Part::ToolResult(ToolResult {
        call_id,
        content,
        is_error,
        extra: shrink(obj),
    }))
}

/// One part as `format` writes it (for a part another format made).
pub(crate) fn part_value(p: &Part, format: Format) -> Value {
    part_to(p, format)
}

fn part_to(p: &Part, format: Format) -> Value {
    match p {
        Part::Text { text, extra } => {
            with_type("text", vec![("text", Value::String(text.clone()))], extra)
        }
        Part::Image(img) => {
            let mut inner = Map::new();
            match (format, &img.source) {
                (Format::OpenAi | Format::Responses | Format::Gemini, source) => {
                    let url = match source {
                        ImageSource::Url(u) => u.clone(),
                        ImageSource::Base64 { media_type, data } => {
                            format!("data:{media_type};base64,{data}")
                        }
                    };
                    inner.insert("url".into(), Value::String(url));
                    if let Some(d) = &img.detail {
                        inner.insert("detail".into(), Value::String(d.clone()));
                    }
                    extend(&mut inner, &img.source_extra);
                    with_type(
                        "image_url",
                        vec![("image_url", Value::Object(inner))],
                        &img.extra,
                    )
                }
                (Format::Anthropic, ImageSource::Url(url)) => {
                    inner.insert("type".into(), Value::String("url".into()));
                    inner.insert("url".into(), Value::String(url.clone()));
                    extend(&mut inner, &img.source_extra);
                    with_type("image", vec![("source", Value::Object(inner))], &img.extra)
                }
                (Format::Anthropic, ImageSource::Base64 { media_type, data }) => {
                    inner.insert("type".into(), Value::String("base64".into()));
                    inner.insert("media_type".into(), Value::String(media_type.clone()));
                    inner.insert("data".into(), Value::String(data.clone()));
                    extend(&mut inner, &img.source_extra);
                    with_type("image", vec![("source", Value::Object(inner))], &img.extra)
                }
            }
        }
        Part::ToolCall(c) => with_type(
            "tool_use",
            vec![
                ("id", Value::String(c.id.clone())),
                ("name", Value::String(c.name.clone())),
                ("input", c.arguments.clone()),
            ],
            &c.extra,
        ),
        Part::ToolResult(r) => {
            let mut fields = vec![("tool_use_id", Value::String(r.call_id.clone()))];
            if let Some(c) = content_to(&r.content, format) {
                fields.push(("content", c));
            }
            if let Some(e) = r.is_error {
                fields.push(("is_error", Value::Bool(e)));
            }
            with_type("tool_result", fields, &r.extra)
        }
        Part::Thinking {
            thinking,
            signature,
            extra,
        } => {
            let mut fields = vec![("thinking", Value::String(thinking.clone()))];
            if let Some(s) = signature {
                fields.push(("signature", Value::String(s.clone())));
            }
            with_type("thinking", fields, extra)
        }
        Part::RedactedThinking { data, extra } => with_type(
            "redacted_thinking",
            vec![("data", Value::String(data.clone()))],
            extra,
        ),
        Part::Other(v) => v.clone(),
    }
}

fn extend(m: &mut Extra, extra: &Extra) {
    for (k, v) in extra {
        m.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

fn openai_call_from(v: Value, path: &str) -> Result<ToolCall, ChatError> {
    let Value::Object(mut obj) = v else {
        return Err(shape(path, "a tool call must be an object"));
    };
    let id = take_str(&mut obj, "id");
    let function = match obj.remove("function") {
        Some(Value::Object(f)) => Some(f),
        Some(other) => {
            obj.insert("function".into(), other);
            None
        }
        None => None,
    };
    let (Some(id), Some(mut function)) = (id, function) else {
        return Err(shape(
            path,
            "a tool call needs a string `id` and a `function` object",
        ));
    };
    let Some(name) = take_str(&mut function, "name") else {
        return Err(shape(path, "a tool call needs a string `function.name`"));
    };
    take_type(&mut obj, "function");
    let arguments = function
        .remove("arguments")
        .unwrap_or(Value::String(String::new()));
    Ok(ToolCall {
        id,
        name,
        arguments,
        extra: shrink(obj),
        function_extra: shrink(function),
    })
}

fn openai_call_to(c: &ToolCall) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(c.name.clone()));
    function.insert("arguments".into(), c.arguments.clone());
    extend(&mut function, &c.function_extra);
    let mut m = Map::new();
    m.insert("id".into(), Value::String(c.id.clone()));
    m.insert("type".into(), Value::String("function".into()));
    m.insert("function".into(), Value::Object(function));
    for (k, v) in &c.extra {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// Reads one message of `format` from a JSON value; `path` names it in errors
/// (`messages[3]`).
///
/// # Errors
/// [`ChatError::Shape`] when the value is not a message (no string `role`,
/// content of the wrong type, a tool call without an id, ...).
pub fn message_from_value(v: Value, format: Format, path: &str) -> Result<Message, ChatError> {
    match format {
        Format::Responses => return crate::formats::responses::item_from_value(v, path),
        Format::Gemini => return crate::formats::gemini::content_from_value(v, path),
        Format::OpenAi | Format::Anthropic => {}
    }
    let Value::Object(mut obj) = v else {
        return Err(shape(
            path,
            format!("a message must be an object, not {}", kind_of(&v)),
        ));
    };
    let Some(role) = take_str(&mut obj, "role") else {
        return Err(shape(path, "a message needs a string `role`"));
    };
    let role = Role::from_wire(&role);
    let content = content_from(obj.remove("content"), format, &format!("{path}.content"))?;
    let mut m = Message {
        role,
        content,
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: Extra::new(),
    };
    if format == Format::OpenAi {
        m.name = take_str(&mut obj, "name");
        m.tool_call_id = take_str(&mut obj, "tool_call_id");
        if let Some(Value::Array(_)) = obj.get("tool_calls")
            && let Some(Value::Array(calls)) = obj.remove("tool_calls")
        {
            m.tool_calls = Some(
                calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| openai_call_from(c, &format!("{path}.tool_calls[{i}]")))
                    .collect::<Result<_, _>>()?,
            );
        }
    }
    m.extra = shrink(obj);
    Ok(m)
}

/// Writes one message in `format` (the inverse of [`message_from_value`]).
pub fn message_to_value(m: &Message, format: Format) -> Value {
    match format {
        Format::Responses => return crate::formats::responses::item_to_value(m),
        Format::Gemini => return crate::formats::gemini::content_to_value(m),
        Format::OpenAi | Format::Anthropic => {}
    }
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(m.role.as_str().to_string()));
    if let Some(c) = content_to(&m.content, format) {
        obj.insert("content".into(), c);
    }
    if let Some(n) = &m.name {
        obj.insert("name".into(), Value::String(n.clone()));
    }
    if let Some(calls) = &m.tool_calls {
        obj.insert(
            "tool_calls".into(),
            Value::Array(calls.iter().map(openai_call_to).collect()),
        );
    }
    if let Some(id) = &m.tool_call_id {
        obj.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    extend(&mut obj, &m.extra);
    Value::Object(obj)
}

/// Reads Anthropic's top-level `system` (a string or an array of text blocks)
/// as a [`Role::System`] message.
pub(crate) fn anthropic_system_from(v: Value) -> Result<Message, ChatError> {
    let content = content_from(Some(v), Format::Anthropic, "system")?;
    Ok(Message {
        role: Role::System,
        content,
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: Extra::new(),
    })
}

/// Writes system messages as Anthropic's top-level `system`: the one
/// message's content as it was, or several messages' blocks concatenated.
pub(crate) fn anthropic_system_to(system: &[&Message]) -> Option<Value> {
    match system {
        [] => None,
        [one] => content_to(&one.content, Format::Anthropic),
        many => {
            let mut blocks = Vec::new();
            for m in many {
                match &m.content {
                    Content::Text(t) => blocks.push(with_type(
                        "text",
                        vec![("text", Value::String(t.clone()))],
                        &Extra::new(),
                    )),
                    Content::Parts(p) => {
                        blocks.extend(p.iter().map(|p| part_to(p, Format::Anthropic)))
                    }
                    Content::Absent | Content::Null => {}
                }
            }
            Some(Value::Array(blocks))
        }
    }
}
