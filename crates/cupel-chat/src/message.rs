//! The message model: what OpenAI Chat Completions and Anthropic Messages
//! requests carry, with every field a parser does not model kept in `extra`.

use std::fmt;

use serde_json::{Map, Value};

/// A JSON object: the fields of a message or a part that the model does not
/// name, kept verbatim so that writing a message back loses nothing.
pub type Extra = Map<String, Value>;

/// Who wrote a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// The system prompt (OpenAI `system`; Anthropic's top-level `system`).
    System,
    /// OpenAI's `developer` prompt (the newer name of `system` for reasoning models).
    Developer,
    /// The user (Anthropic also sends tool results as `user` messages).
    User,
    /// The model.
    Assistant,
    /// An OpenAI tool result message.
    Tool,
    /// A role this version does not know (kept as written).
    Other(String),
}

impl Role {
    /// Reads a role name as written on the wire (exact, lowercase names).
    pub fn from_wire(name: &str) -> Self {
        match name {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => Role::Other(other.to_string()),
        }
    }

    /// The wire name (`"user"`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Other(s) => s,
        }
    }

    /// `system` or `developer`: the prompts pinned by default.
    pub fn is_prompt(&self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message's `content` field, in the shape it was written.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Content {
    /// The field was absent.
    #[default]
    Absent,
    /// The field was `null` (an OpenAI assistant message that only calls tools).
    Null,
    /// A plain string.
    Text(String),
    /// An array of parts (content blocks).
    Parts(Vec<Part>),
}

impl Content {
    /// The parts (empty for a string, `null` or absent content).
    pub fn parts(&self) -> &[Part] {
        match self {
            Content::Parts(p) => p,
            _ => &[],
        }
    }

    /// Every text this content holds (the string, or the text parts), in order.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Content::Text(t) => vec![t.as_str()],
            Content::Parts(p) => p
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
            Content::Absent | Content::Null => Vec::new(),
        }
    }
}

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ImageSource {
    /// A URL (OpenAI also sends base64 images as `data:` URLs).
    Url(String),
    /// Base64 data with its media type (Anthropic's `base64` source).
    Base64 {
        /// `image/png`, ...
        media_type: String,
        /// The base64 text.
        data: String,
    },
}

/// An image part.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// Where the image comes from.
    pub source: ImageSource,
    /// OpenAI's `detail` (`low`, `high`, `auto`), when given.
    pub detail: Option<String>,
    /// Unmodelled fields of the inner object (`image_url` for OpenAI,
    /// `source` for Anthropic).
    pub source_extra: Extra,
    /// Unmodelled fields of the part itself (e.g. Anthropic `cache_control`).
    pub extra: Extra,
}

impl Image {
    /// The pixel size, when it can be read from the data without decoding the
    /// image: PNG and GIF headers in base64 data or a `data:` URL.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        let b64 = match &self.source {
            ImageSource::Base64 { data, .. } => data.as_str(),
            ImageSource::Url(url) => url.strip_prefix("data:")?.split_once(";base64,")?.1,
        };
        let head = crate::count::base64_prefix(b64, 32);
        crate::count::image_header_dimensions(&head)
    }
}

/// A tool call made by the assistant.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call id results answer (`call_...`, `toolu_...`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON string for OpenAI (`function.arguments`), a JSON
    /// value for Anthropic (`input`).
    pub arguments: Value,
    /// Unmodelled fields of the call object.
    pub extra: Extra,
    /// Unmodelled fields of OpenAI's inner `function` object.
    pub function_extra: Extra,
}

impl ToolCall {
    /// The arguments as text: the string itself, or the value as compact JSON.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// A tool result inside an Anthropic `user` message (`tool_result` block).
/// OpenAI results are whole messages with role [`Role::Tool`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call this answers (`tool_use_id`).
    pub call_id: String,
    /// The result content.
    pub content: Content,
    /// `is_error`, when given.
    pub is_error: Option<bool>,
    /// Unmodelled fields.
    pub extra: Extra,
}

/// One content part (content block).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Unmodelled fields (`cache_control`, `citations`, ...).
        extra: Extra,
    },
    /// An image.
    Image(Image),
    /// An Anthropic `tool_use` block (OpenAI calls live in [`Message::tool_calls`]).
    ToolCall(ToolCall),
    /// An Anthropic `tool_result` block.
    ToolResult(ToolResult),
    /// Reasoning the model showed (Anthropic `thinking`), with its signature.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// The signature the provider checks when the block is sent back.
        signature: Option<String>,
        /// Unmodelled fields.
        extra: Extra,
    },
    /// Encrypted reasoning (Anthropic `redacted_thinking`).
    RedactedThinking {
        /// The opaque data.
        data: String,
        /// Unmodelled fields.
        extra: Extra,
    },
    /// A part this version does not model (audio, files, documents, ...),
    /// kept verbatim.
    Other(Value),
}

/// One chat message.
///
/// The fields are the union of what the two wire formats use; a parser fills
/// the ones its format has and keeps every other field in [`extra`](Self::extra).
///
/// ```
/// use cupel_chat::{Message, Role};
/// let m = Message::user("Where is my parcel?");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "Where is my parcel?");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The content, in the shape it was written.
    pub content: Content,
    /// OpenAI's optional participant `name`.
    pub name: Option<String>,
    /// OpenAI assistant `tool_calls` (`None` when the field was absent).
    pub tool_calls: Option<Vec<ToolCall>>,
    /// OpenAI tool message `tool_call_id`.
    pub tool_call_id: Option<String>,
    /// Every other field, verbatim.
    pub extra: Extra,
}

impl Message {
    /// A message with `role` and string content.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: Content::Text(text.into()),
            name: None,
            tool_calls: None,
            tool_call_id: None,
            extra: Extra::new(),
        }
    }

    /// A message of content parts with its own extra fields and no
    /// OpenAI-style call fields: what a format whose calls and results are
    /// parts (Gemini, rig) reads.
    pub(crate) fn with_parts(role: Role, parts: Vec<Part>, extra: Extra) -> Self {
        Message {
            role,
            content: Content::Parts(parts),
            name: None,
            tool_calls: None,
            tool_call_id: None,
            extra,
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// An OpenAI assistant message that calls tools (`content: null`); each
    /// call is `(id, name, arguments JSON text)`.
    pub fn assistant_calls<'a>(
        calls: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Self {
        let calls = calls
            .into_iter()
            // `type: "function"` is written for every call and dropped when
            // read: the call equals its own round trip (a resumed session
            // finds it in the state it stored).
            .map(|(id, name, args)| ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: Value::String(args.into()),
                extra: Extra::new(),
                function_extra: Extra::new(),
            })
            .collect();
        Message {
            role: Role::Assistant,
            content: Content::Null,
            name: None,
            tool_calls: Some(calls),
            tool_call_id: None,
            extra: Extra::new(),
        }
    }

    /// An OpenAI tool result message answering `call_id`.
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, text)
        }
    }

    /// The text of the message: its string content or its text parts joined
    /// by newlines (tool result blocks included).
    pub fn text(&self) -> String {
        let mut out: Vec<String> = self.content.texts().iter().map(|s| s.to_string()).collect();
        for p in self.content.parts() {
            if let Part::ToolResult(r) = p {
                out.extend(r.content.texts().iter().map(|s| s.to_string()));
            }
        }
        out.join("\n")
    }

    /// Every tool call this message makes (OpenAI `tool_calls` and Anthropic
    /// `tool_use` blocks), in order.
    pub fn calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.tool_calls
            .iter()
            .flatten()
            .chain(self.content.parts().iter().filter_map(|p| match p {
                Part::ToolCall(c) => Some(c),
                _ => None,
            }))
    }

    /// The ids of the calls this message answers (OpenAI `tool_call_id`,
    /// Anthropic `tool_result` blocks), in order.
    pub fn answered_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_call_id
            .as_deref()
            .into_iter()
            .chain(self.content.parts().iter().filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            }))
    }

    /// Whether the message answers tool calls and says nothing else: an
    /// OpenAI tool message (also one whose `tool_call_id` is missing or
    /// malformed), a legacy OpenAI `function` message, or an Anthropic
    /// user message of `tool_result` blocks only.
    pub fn is_tool_result(&self) -> bool {
        match &self.role {
            Role::Tool => true,
            Role::Other(r) => r == "function",
            Role::User => {
                let parts = self.content.parts();
                !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::ToolResult(_)))
            }
            _ => false,
        }
    }

    /// Whether the message is an Anthropic user turn that carries tool
    /// results *and* something else (text, images): `[tool_result, ...,
    /// text]`, the usual shape of a user turn that answers tool calls and
    /// goes on talking. A trim treats its two halves as parts of two
    /// units: the results belong to the previous assistant message's tool
    /// group, the rest to the exchange it starts.
    pub fn is_mixed_turn(&self) -> bool {
        if self.role != Role::User {
            return false;
        }
        let parts = self.content.parts();
        parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
            && parts.iter().any(|p| !matches!(p, Part::ToolResult(_)))
    }

    /// The message without some of its parts: `keep_results` keeps the
    /// `tool_result` blocks and drops the rest, `!keep_results` the other
    /// way round (the two halves of a [mixed turn](Self::is_mixed_turn)).
    pub(crate) fn half(&self, keep_results: bool) -> Message {
        let mut out = self.clone();
        if let Content::Parts(parts) = &mut out.content {
            parts.retain(|p| matches!(p, Part::ToolResult(_)) == keep_results);
        }
        out
    }

    /// The legacy OpenAI function call this message makes
    /// (`function_call: {name, arguments}`, before `tool_calls`): its name
    /// and its arguments text.
    pub fn legacy_call(&self) -> Option<(&str, &str)> {
        let call = self.extra.get("function_call")?;
        let name = call.get("name")?.as_str()?;
        let args = call.get("arguments").and_then(Value::as_str).unwrap_or("");
        Some((name, args))
    }

    /// Whether this is a legacy OpenAI `function` message (the result of a
    /// [`legacy_call`](Self::legacy_call), named by the function).
    pub fn is_legacy_result(&self) -> bool {
        matches!(&self.role, Role::Other(r) if r == "function")
    }

    /// A short label for reports: `user`, `assistant tool call lookup (call_1)`,
    /// `tool result for call_1`, ...
    pub fn label(&self) -> String {
        let mut out = String::new();
        self.write_label(&mut out);
        out
    }

    /// Appends [`label`](Self::label) to `out` (the report writes every
    /// message's label into one buffer, allocating nothing per message).
    pub(crate) fn write_label(&self, out: &mut String) {
        if self.is_legacy_result() {
            out.push_str("function result for ");
            out.push_str(self.name.as_deref().unwrap_or("?"));
            return;
        }
        if self.role == Role::Tool && self.tool_call_id.is_none() {
            out.push_str("tool result without a tool_call_id");
            return;
        }
        if self.is_tool_result() {
            out.push_str("tool result for ");
            push_joined(out, self.answered_ids());
            return;
        }
        out.push_str(self.role.as_str());
        if self.is_mixed_turn() {
            out.push_str(" (tool results for ");
            push_joined(out, self.answered_ids());
            out.push_str(", then text)");
        }
        if let Some((name, _)) = self.legacy_call() {
            out.push_str(" function call ");
            out.push_str(name);
            return;
        }
        let mut calls = self.calls().peekable();
        let Some(first) = calls.next() else {
            return;
        };
        out.push_str(if calls.peek().is_some() {
            " tool calls "
        } else {
            " tool call "
        });
        for (i, c) in std::iter::once(first).chain(calls).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&c.name);
            out.push_str(" (");
            out.push_str(&c.id);
            out.push(')');
        }
    }
}

/// Appends `items` to `out`, separated by `, `.
fn push_joined<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(item);
    }
}
