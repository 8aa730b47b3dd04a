//! Gemini `generateContent` contents, both directions.
//!
//! Each `Content` (`{role, parts}`) becomes one [`Message`]: `user` is
//! [`Role::User`], `model` [`Role::Assistant`]. Its parts:
//!
//! | part | model |
//! |---|---|
//! | `{text}` | [`Part::Text`] (`thought`, `thoughtSignature` kept on it) |
//! | `{functionCall: {name, args, id?}}` | [`Part::ToolCall`]; the part's other fields (its `thoughtSignature`) in `extra`, the call's in `function_extra` |
//! | `{functionResponse: {name, response, id?}}` | [`Part::ToolResult`], `response` as compact JSON text |
//! | anything else (`inlineData`, `fileData`, `executableCode`, ...) | [`Part::Other`] |
//!
//! Gemini calls need not carry an `id`; a response then answers the
//! earliest unanswered call of the same name in the turn before it.
//! Cupel names such calls itself (`~c{hash of the turn}.{part}`) and never
//! writes that name out; a real id that is empty or starts with `~` is
//! read with one more `~` in front and written without it.

use serde_json::{Map, Value};

use crate::error::ChatError;
use crate::message::{Content, Extra, Message, Part, Role, ToolCall, ToolResult};
use crate::wire::{kind_of, take_str};

const AS: &str = "read as Gemini content";

fn shape(path: &str, message: impl Into<String>) -> ChatError {
    ChatError::Shape {
        path: path.to_string(),
        message: format!("{} ({AS})", message.into()),
    }
}

/// A real id as held in the model: one that starts with `~`, or is empty,
/// gets one more `~` in front (an empty model id means "none").
fn id_in(id: String) -> String {
    if id.is_empty() || id.starts_with('~') {
        format!("~{id}")
    } else {
        id
    }
}

/// A model id as written: `None` for one Cupel made up (`~c…`, `~r…`) or
/// none at all.
fn id_out(id: &str) -> Option<&str> {
    match id.strip_prefix('~') {
        Some(rest) if rest.starts_with('c') || rest.starts_with('r') => None,
        Some(rest) => Some(rest),
        None if id.is_empty() => None,
        None => Some(id),
    }
}

/// Reads one `Content`; `path` names it in errors (`contents[3]`).
pub(crate) fn content_from_value(v: Value, path: &str) -> Result<Message, ChatError> {
    let Value::Object(mut obj) = v else {
        return Err(shape(
            path,
            format!("a content must be an object, not {}", kind_of(&v)),
        ));
    };
    let role = match obj.get("role") {
        None => Role::User,
        Some(Value::String(r)) => match r.as_str() {
            "user" => Role::User,
            "model" => Role::Assistant,
            other => Role::Other(other.to_owned()),
        },
        Some(other) => {
            return Err(shape(
                &format!("{path}.role"),
                format!(
                    "`role` must be \"user\" or \"model\", not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    obj.remove("role");
    let parts = match obj.remove("parts") {
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(shape(
                &format!("{path}.parts"),
                format!("`parts` must be an array, not {}", kind_of(&other)),
            ));
        }
        None => return Err(shape(path, "a content needs a `parts` array")),
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| part_from(p, &format!("{path}.parts[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Message::with_parts(role, parts, obj))
}

fn part_from(v: Value, path: &str) -> Result<Part, ChatError> {
    let Value::Object(mut obj) = v else {
        return Err(shape(
            path,
            format!("a part must be an object, not {}", kind_of(&v)),
        ));
    };
    if let Some(call) = obj.get("functionCall") {
        let Value::Object(call) = call.clone() else {
            return Err(shape(
                &format!("{path}.functionCall"),
                format!("`functionCall` must be an object, not {}", kind_of(call)),
            ));
        };
        obj.remove("functionCall");
        return call_part(call, obj, path);
    }
    if let Some(resp) = obj.get("functionResponse") {
        let Value::Object(resp) = resp.clone() else {
            return Err(shape(
                &format!("{path}.functionResponse"),
                format!(
                    "`functionResponse` must be an object, not {}",
                    kind_of(resp)
                ),
            ));
        };
        obj.remove("functionResponse");
        return response_part(resp, obj, path);
    }
    if let Some(text) = take_str(&mut obj, "text") {
        return Ok(Part::Text { text, extra: obj });
    }
    Ok(Part::Other(Value::Object(obj)))
}

fn call_part(mut call: Extra, part: Extra, path: &str) -> Result<Part, ChatError> {
    let Some(name) = take_str(&mut call, "name") else {
        return Err(shape(
            &format!("{path}.functionCall"),
            "a functionCall needs a string `name`",
        ));
    };
    let id = take_str(&mut call, "id").map(id_in).unwrap_or_default();
    let arguments = match call.get("args") {
        Some(Value::Object(_)) => call.remove("args").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    Ok(Part::ToolCall(ToolCall {
        id,
        name,
        arguments,
        extra: part,
        function_extra: call,
    }))
}

fn response_part(mut resp: Extra, mut part: Extra, path: &str) -> Result<Part, ChatError> {
    if !resp.get("name").is_some_and(Value::is_string) {
        return Err(shape(
            &format!("{path}.functionResponse"),
            "a functionResponse needs a string `name`",
        ));
    }
    let call_id = take_str(&mut resp, "id").map(id_in).unwrap_or_default();
    let content = match resp.remove("response") {
        None => Content::Absent,
        Some(v) => Content::Text(v.to_string()),
    };
    part.insert("functionResponse".into(), Value::Object(resp));
    Ok(Part::ToolResult(ToolResult {
        call_id,
        content,
        is_error: None,
        extra: part,
    }))
}

/// The name a response part answers.
fn response_name(r: &ToolResult) -> &str {
    r.extra
        .get("functionResponse")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// FNV-1a (64 bits) of `text`, folded to 32: a short, stable tag.
fn tag(text: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// `v` as compact JSON with every object's keys in sorted order: the same
/// text whether or not serde_json keeps insertion order (its
/// `preserve_order` feature, which any crate of a build may turn on), so a
/// made-up call name never depends on the build.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Whether `id` is one [`link_calls`] made up.
pub(crate) fn is_made_up(id: &str) -> bool {
    id_out(id).is_none()
}

/// Gives calls and responses without an `id` the names Cupel pairs them
/// by: a call `~c{tag}.{k}`, with `tag` a hash of its turn's parts and
/// `k` the part's index (the same wherever the turn sits, so a window
/// read back names its calls as the whole transcript did); a response the
/// name of the earliest call of its function in the turn before it not
/// answered yet, or `~r{tag}.{k}` (an orphan) when there is none.
pub(crate) fn link_calls(messages: &mut [Message]) {
    // The calls of the latest model turn not answered yet: (name, id).
    let mut open: Vec<(String, String)> = Vec::new();
    for m in messages.iter_mut() {
        let Content::Parts(parts) = &mut m.content else {
            continue;
        };
        let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
        if has_calls {
            open.clear();
        }
        let mut text = String::new();
        canonical(
            &Value::Array(parts.iter().map(part_to).collect()),
            &mut text,
        );
        let t = tag(&text);
        for (k, p) in parts.iter_mut().enumerate() {
            match p {
                Part::ToolCall(c) => {
                    if c.id.is_empty() {
                        c.id = format!("~c{t:08x}.{k}");
                    }
                    open.push((c.name.clone(), c.id.clone()));
                }
                Part::ToolResult(r) if r.call_id.is_empty() => {
                    let name = response_name(r);
                    r.call_id = match open.iter().position(|(n, _)| n == name) {
                        Some(at) => open.remove(at).1,
                        None => format!("~r{t:08x}.{k}"),
                    };
                }
                Part::ToolResult(r) => {
                    if let Some(at) = open.iter().position(|(_, id)| *id == r.call_id) {
                        open.remove(at);
                    }
                }
                _ => {}
            }
        }
    }
}

fn part_to(p: &Part) -> Value {
    match p {
        Part::Text { text, extra } => {
            let mut m = Map::new();
            m.insert("text".into(), Value::String(text.clone()));
            extend(&mut m, extra);
            Value::Object(m)
        }
        Part::ToolCall(c) => {
            let mut call = Map::new();
            if let Some(id) = id_out(&c.id) {
                call.insert("id".into(), Value::String(id.to_owned()));
            }
            call.insert("name".into(), Value::String(c.name.clone()));
            if !c.arguments.is_null() {
                call.insert("args".into(), c.arguments.clone());
            }
            extend(&mut call, &c.function_extra);
            let mut m = Map::new();
            m.insert("functionCall".into(), Value::Object(call));
            extend(&mut m, &c.extra);
            Value::Object(m)
        }
        Part::ToolResult(r) => {
            let mut resp = match r.extra.get("functionResponse") {
                Some(Value::Object(f)) => f.clone(),
                _ => Map::new(),
            };
            if let Some(id) = id_out(&r.call_id) {
                resp.insert("id".into(), Value::String(id.to_owned()));
            }
            if let Some(v) = response_value(&r.content) {
                resp.insert("response".into(), v);
            }
            let mut m = Map::new();
            m.insert("functionResponse".into(), Value::Object(resp));
            extend(&mut m, &r.extra);
            Value::Object(m)
        }
        Part::Other(v) => v.clone(),
        // A part another format made: its text, or as Chat Completions writes it.
        other => crate::wire::part_value(other, crate::wire::Format::OpenAi),
    }
}

/// A response's `response` object: the JSON text as read, or a shortened
/// text as `{"output": text}` (the key Gemini documents for a function's
/// output).
fn response_value(c: &Content) -> Option<Value> {
    match c {
        Content::Absent => None,
        Content::Null => Some(Value::Null),
        Content::Text(t) => Some(match serde_json::from_str::<Value>(t) {
            Ok(v) => v,
            Err(_) => {
                let mut m = Map::new();
                m.insert("output".into(), Value::String(t.clone()));
                Value::Object(m)
            }
        }),
        Content::Parts(p) => {
            let texts: Vec<&str> = p
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let mut m = Map::new();
            m.insert("output".into(), Value::String(texts.join("\n")));
            Some(Value::Object(m))
        }
    }
}

fn extend(m: &mut Extra, extra: &Extra) {
    for (k, v) in extra {
        m.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// Writes one `Content` (the inverse of [`content_from_value`]).
pub(crate) fn content_to_value(m: &Message) -> Value {
    let mut obj = Map::new();
    let role = match &m.role {
        Role::Assistant => "model",
        Role::User | Role::Tool => "user",
        other => other.as_str(),
    };
    if !m.role.is_prompt() {
        obj.insert("role".into(), Value::String(role.to_owned()));
    }
    let parts: Vec<Value> = match &m.content {
        Content::Parts(p) => p.iter().map(part_to).collect(),
        Content::Text(t) => vec![part_to(&Part::Text {
            text: t.clone(),
            extra: Extra::new(),
        })],
        Content::Absent | Content::Null => Vec::new(),
    };
    obj.insert("parts".into(), Value::Array(parts));
    extend(&mut obj, &m.extra);
    Value::Object(obj)
}

/// Reads `systemInstruction` (a `Content`) as a [`Role::System`] message.
pub(crate) fn system_from(v: Value) -> Result<Message, ChatError> {
    let role = v.get("role").cloned();
    let mut m = content_from_value(v, "systemInstruction")?;
    // The role, when written, stays as it was (in `extra`).
    m.role = Role::System;
    if let Some(r) = role {
        m.extra.insert("role".into(), r);
    }
    Ok(m)
}

/// Writes system messages as one `systemInstruction`: the first message's
/// other fields, every message's parts.
pub(crate) fn system_to(system: &[&Message]) -> Option<Value> {
    let (first, rest) = system.split_first()?;
    let mut v = content_to_value(first);
    if let Some(Value::Array(parts)) = v.get_mut("parts") {
        for m in rest {
            if let Value::Array(more) = content_to_value(m)
                .get_mut("parts")
                .map(Value::take)
                .unwrap_or(Value::Null)
            {
                parts.extend(more);
            }
        }
    }
    Some(v)
}

/// Whether a JSON value looks like a Gemini content (for detection).
pub(crate) fn looks_like_content(v: &Value) -> bool {
    v.get("parts").is_some_and(Value::is_array)
        || v.get("role").and_then(Value::as_str) == Some("model")
}
