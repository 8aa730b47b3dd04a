//! [`Transcript`]: a whole document (a bare `messages` array or a request
//! body) in one of the two wire formats, read and written back.

use serde_json::{Map, Value};

use crate::error::ChatError;
use crate::message::{Message, Role};
use crate::wire::{self, Format};

/// A chat document: its format, its messages, and (for a request body)
/// every other top-level field (`model`, `tools`, `max_tokens`, ...).
///
/// For Anthropic, the top-level `system` becomes a leading [`Role::System`]
/// message and is written back to `system`.
///
/// ```
/// use cupel_chat::{Format, Transcript};
/// let json = r#"{"model": "gpt-4o", "messages": [
///     {"role": "system", "content": "Be brief."},
///     {"role": "user", "content": "Hi", "x-trace": 7}]}"#;
/// let t = Transcript::parse(json)?;
/// assert_eq!(t.format(), Format::OpenAi);
/// assert_eq!(t.messages().len(), 2);
/// // Nothing dropped: the same JSON value comes back, unknown fields included.
/// let back = t.to_value();
/// assert_eq!(back, serde_json::from_str::<serde_json::Value>(json).unwrap());
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    format: Format,
    messages: Vec<Message>,
    /// The request body without `messages` (and `system`); `None` for a bare array.
    body: Option<Map<String, Value>>,
}

impl Transcript {
    /// A transcript of `messages` in `format`, written as a bare array.
    pub fn new(format: Format, messages: Vec<Message>) -> Self {
        Transcript {
            format,
            messages,
            body: None,
        }
    }

    /// Parses JSON text, detecting the format (see [`detect`](Self::detect)).
    ///
    /// # Errors
    /// [`ChatError::Json`] for invalid JSON (with line and column),
    /// [`ChatError::Shape`] for JSON that is not a chat document.
    pub fn parse(json: &str) -> Result<Self, ChatError> {
        Self::from_value(parse_json(json)?, None)
    }

    /// Parses JSON text in the given format.
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn parse_as(json: &str, format: Format) -> Result<Self, ChatError> {
        Self::from_value(parse_json(json)?, Some(format))
    }

    /// Reads a JSON value: a bare array of messages, or an object with a
    /// `messages` array. `format: None` detects it.
    ///
    /// # Errors
    /// [`ChatError::Shape`] when the value is neither, or a message is malformed.
    pub fn from_value(v: Value, format: Option<Format>) -> Result<Self, ChatError> {
        let format = format.unwrap_or_else(|| Self::detect(&v));
        let (items, mut body) = match v {
            Value::Array(items) => (items, None),
            Value::Object(mut obj) => match obj.remove("messages") {
                Some(Value::Array(items)) => (items, Some(obj)),
                _ => {
                    return Err(ChatError::Shape {
                        path: "messages".into(),
                        message: "a request body needs a `messages` array".into(),
                    });
                }
            },
            _ => {
                return Err(ChatError::Shape {
                    path: String::new(),
                    message: "a chat document is an array of messages or an object with `messages`"
                        .into(),
                });
            }
        };
        let mut messages = Vec::with_capacity(items.len() + 1);
        if format == Format::Anthropic
            && let Some(b) = body.as_mut()
            && let Some(system) = b.remove("system")
        {
            messages.push(wire::anthropic_system_from(system)?);
        }
        for (i, v) in items.into_iter().enumerate() {
            messages.push(wire::message_from_value(
                v,
                format,
                &format!("messages[{i}]"),
            )?);
        }
        Ok(Transcript {
            format,
            messages,
            body,
        })
    }

    /// Guesses the format of a document: Anthropic when it has a top-level
    /// `system`, tools with an `input_schema`, or content blocks only
    /// Anthropic uses (`tool_use`, `tool_result`, `thinking`,
    /// `redacted_thinking`, `image` with a `source`); OpenAI otherwise.
    pub fn detect(v: &Value) -> Format {
        let (messages, body) = match v {
            Value::Array(m) => (m.as_slice(), None),
            Value::Object(o) => (
                o.get("messages")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice),
                Some(o),
            ),
            _ => return Format::OpenAi,
        };
        if let Some(b) = body {
            if b.contains_key("system") {
                return Format::Anthropic;
            }
            let tools = b.get("tools").and_then(Value::as_array);
            if tools.is_some_and(|t| t.iter().any(|t| t.get("input_schema").is_some())) {
                return Format::Anthropic;
            }
        }
        for m in messages {
            let role = m.get("role").and_then(Value::as_str);
            if matches!(role, Some("system" | "developer" | "tool"))
                || m.get("tool_calls").is_some()
                || m.get("tool_call_id").is_some()
            {
                return Format::OpenAi;
            }
            let blocks = m.get("content").and_then(Value::as_array);
            for b in blocks.into_iter().flatten() {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking") => {
                        return Format::Anthropic;
                    }
                    Some("image") if b.get("source").is_some() => return Format::Anthropic,
                    Some("image_url") => return Format::OpenAi,
                    _ => {}
                }
            }
        }
        Format::OpenAi
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The messages, in order (an Anthropic `system` first).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The tool definitions of a request body (`tools`), if any.
    pub fn tools(&self) -> Option<&Value> {
        self.body.as_ref()?.get("tools")
    }

    /// The same document with other messages (e.g. the kept ones).
    pub fn with_messages(&self, messages: Vec<Message>) -> Self {
        Transcript {
            format: self.format,
            messages,
            body: self.body.clone(),
        }
    }

    /// Takes the messages out.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The document as JSON, in its format: a bare array stays an array, a
    /// body keeps its other fields.
    pub fn to_value(&self) -> Value {
        // Anthropic's system prompt goes back to the top-level `system` of a
        // body; a bare array (which has no such field) keeps every message.
        let (system, rest): (Vec<&Message>, Vec<&Message>) = match (self.format, &self.body) {
            (Format::Anthropic, Some(_)) => {
                self.messages.iter().partition(|m| m.role == Role::System)
            }
            _ => (Vec::new(), self.messages.iter().collect()),
        };
        let array = Value::Array(
            rest.iter()
                .map(|m| wire::message_to_value(m, self.format))
                .collect(),
        );
        match &self.body {
            None => array,
            Some(body) => {
                let mut obj = body.clone();
                if let Some(s) = wire::anthropic_system_to(&system) {
                    obj.insert("system".into(), s);
                }
                obj.insert("messages".into(), array);
                Value::Object(obj)
            }
        }
    }

    /// The document as pretty-printed JSON text.
    pub fn to_json_pretty(&self) -> String {
        // Serialising a `Value` cannot fail (its keys are strings).
        serde_json::to_string_pretty(&self.to_value()).unwrap_or_default()
    }
}

fn parse_json(json: &str) -> Result<Value, ChatError> {
    serde_json::from_str(json).map_err(|e| {
        // serde_json's message ends with its own " at line L column C".
        let mut message = e.to_string();
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        ChatError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    })
}
