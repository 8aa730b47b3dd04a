//! [`Transcript`]: a whole document (a bare array of messages, items or
//! contents, or a request body) in one of the wire formats, read and
//! written back.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::ChatError;
use crate::formats;
use crate::message::{Content, Message, Role};
use crate::raw::{self, Elem, Member, Span};
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
///
/// A transcript read from text ([`parse`](Self::parse),
/// [`parse_as`](Self::parse_as)) remembers that text, and
/// [`to_json`](Self::to_json) writes every message and field Cupel did
/// not change byte for byte as it was read: key order, number literals,
/// string escapes and whitespace. Two transcripts are equal when their
/// format, messages and other fields are; the text they came from does
/// not take part.
#[derive(Debug, Clone)]
pub struct Transcript {
    format: Format,
    messages: Vec<Message>,
    /// The request body without `messages` (and `system`); `None` for a bare array.
    body: Option<Map<String, Value>>,
    /// The text it was read from, when it was read from text.
    source: Option<Arc<Source>>,
    /// A Responses body whose `input` is a string (one user message).
    input_text: bool,
    /// Where each message came from in `source` (empty without a source).
    origins: Vec<Origin>,
}

impl PartialEq for Transcript {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format && self.messages == other.messages && self.body == other.body
    }
}

/// The text a transcript was read from and where its parts sit in it.
#[derive(Debug)]
struct Source {
    text: String,
    /// The whole document (array or object), without surrounding whitespace.
    span: Span,
    /// The top-level members of a request body (empty for a bare array).
    members: Vec<Member>,
    /// The whitespace before a body's closing `}`.
    members_tail: Span,
    /// Which member is the conversation (`messages`, `input`,
    /// `contents`), and which the system prompt (`system`,
    /// `instructions`, `systemInstruction`).
    messages_member: Option<usize>,
    system_member: Option<usize>,
    /// The messages array's elements and the whitespace before its `]`.
    elems: Vec<Elem>,
    elems_tail: Span,
    /// The conversation is a Responses `input` string (`elems` is its one
    /// element, the string).
    input_text: bool,
}

impl Source {
    /// The span of a Responses `input` string.
    fn span_of_input(&self) -> Span {
        self.elems.first().map_or(0..0, |e| e.value.clone())
    }
}

/// Where a message of a transcript read from text came from.
#[derive(Debug, Clone)]
enum Origin {
    /// Not from the text (added by the caller).
    New,
    /// The element (or, `None`, the Anthropic `system` member) as read.
    Read(Option<usize>),
    /// Read there, then changed by Cupel: the message as read, to tell
    /// what changed (everything else is copied).
    Changed(Option<usize>, Box<Message>),
}

impl Transcript {
    /// A transcript of `messages` in `format`, written as a bare array.
    pub fn new(format: Format, messages: Vec<Message>) -> Self {
        Transcript {
            format,
            messages,
            body: None,
            source: None,
            input_text: false,
            origins: Vec::new(),
        }
    }

    /// Parses JSON text, detecting the format (see [`detect`](Self::detect)).
    ///
    /// # Errors
    /// [`ChatError::Json`] for invalid JSON (with line and column),
    /// [`ChatError::Shape`] for JSON that is not a chat document.
    pub fn parse(json: &str) -> Result<Self, ChatError> {
        Self::parse_text(json, None)
    }

    /// Parses JSON text in the given format.
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn parse_as(json: &str, format: Format) -> Result<Self, ChatError> {
        Self::parse_text(json, Some(format))
    }

    /// [`parse`](Self::parse) (`format: None`) or [`parse_as`](Self::parse_as)
    /// taking the text by value: the transcript keeps it without a copy
    /// (for a large file read into a `String`, half the memory).
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn from_text(json: String, format: Option<Format>) -> Result<Self, ChatError> {
        Self::parse_owned(json, format)
    }

    /// Reads the text message by message: each message is decoded from its
    /// own slice of the text (the whole document is never held as a
    /// `Value`), and the text is kept so what is not changed is written
    /// back as it was.
    fn parse_text(json: &str, format: Option<Format>) -> Result<Self, ChatError> {
        Self::parse_owned(json.to_owned(), format)
    }

    fn parse_owned(text: String, format: Option<Format>) -> Result<Self, ChatError> {
        check_json(&text)?;
        let s = text.as_bytes();
        let start = raw::skip_ws(s, 0);
        let end = raw::value_end(s, start).unwrap_or(s.len());
        let unreadable = || shape("", "the document could not be read back as JSON");
        let mut source = Source {
            span: start..end,
            members: Vec::new(),
            members_tail: 0..0,
            messages_member: None,
            system_member: None,
            elems: Vec::new(),
            elems_tail: 0..0,
            input_text: false,
            text: String::new(),
        };
        // The format as far as the body's keys tell it (`None`: `messages`,
        // Chat Completions or Anthropic, decided from the messages below).
        let mut known = format;
        let array = match s.get(start) {
            Some(b'[') => start..end,
            Some(b'{') => object_conversation(&text, start..end, &mut source, &mut known, format)?,
            _ => {
                return Err(shape(
                    "",
                    "a chat document is an array of messages or an object with `messages` (Chat Completions, Anthropic), `input` (OpenAI Responses) or `contents` (Gemini)",
                ));
            }
        };
        let (elems, elems_tail) = if source.input_text {
            let e = Elem {
                lead: array.start..array.start,
                value: array.clone(),
                trail: array.end..array.end,
            };
            (vec![e], array.end..array.end)
        } else {
            raw::elements(&text, array).ok_or_else(unreadable)?
        };
        let value = |span: &Span| -> Result<Value, ChatError> {
            serde_json::from_str(&text[span.clone()]).map_err(|_| unreadable())
        };
        // The body's other fields, decoded.
        let mut body = None;
        if !source.members.is_empty() {
            let mut b = Map::new();
            for (i, m) in source.members.iter().enumerate() {
                if Some(i) == source.messages_member {
                    continue;
                }
                let key = raw::key(&text, m).ok_or_else(unreadable)?;
                b.insert(key, value(&m.value)?);
            }
            body = Some(b);
        }
        let format = match known {
            Some(f) => f,
            None => undecided_format(body.as_ref(), &elems, value)?,
        };
        source.system_member = formats::system_key(format).and_then(|k| {
            source
                .members
                .iter()
                .rposition(|m| raw::key(&text, m).as_deref() == Some(k))
        });
        let mut messages = Vec::with_capacity(elems.len() + 1);
        let mut origins = Vec::with_capacity(elems.len() + 1);
        if let Some(key) = formats::system_key(format)
            && let Some(b) = body.as_mut()
            && let Some(system) = b.remove(key)
        {
            messages.push(formats::system_from(format, system)?);
            origins.push(Origin::Read(None));
        }
        let at = formats::conversation_key(format);
        for (i, e) in elems.iter().enumerate() {
            let v = value(&e.value)?;
            let m = match v {
                Value::String(t) if source.input_text => Message::user(t),
                v => wire::message_from_value(v, format, &format!("{at}[{i}]"))?,
            };
            messages.push(m);
            origins.push(Origin::Read(Some(i)));
        }
        formats::link(format, &mut messages);
        source.elems = elems;
        source.elems_tail = elems_tail;
        source.text = text;
        Ok(Transcript {
            format,
            messages,
            body,
            input_text: source.input_text,
            source: Some(Arc::new(source)),
            origins,
        })
    }

    /// Reads a JSON value: a bare array of messages, or an object with a
    /// `messages` array. `format: None` detects it.
    ///
    /// # Errors
    /// [`ChatError::Shape`] when the value is neither, or a message is malformed.
    pub fn from_value(v: Value, format: Option<Format>) -> Result<Self, ChatError> {
        let format = format.unwrap_or_else(|| Self::detect(&v));
        let key = formats::conversation_key(format);
        let mut input_text = false;
        let (items, mut body) = match v {
            Value::Array(items) => (items, None),
            Value::Object(mut obj) => match obj.remove(key) {
                Some(Value::Array(items)) => (items, Some(obj)),
                Some(Value::String(t)) if format == Format::Responses => {
                    input_text = true;
                    (vec![Value::String(t)], Some(obj))
                }
                _ => return Err(missing_conversation(Some(format), true, key)),
            },
            _ => {
                return Err(ChatError::Shape {
                    path: String::new(),
                    message: "a chat document is an array of messages or an object with `messages` (Chat Completions, Anthropic), `input` (OpenAI Responses) or `contents` (Gemini)"
                        .into(),
                });
            }
        };
        let mut messages = Vec::with_capacity(items.len() + 1);
        if let Some(k) = formats::system_key(format)
            && let Some(b) = body.as_mut()
            && let Some(system) = b.remove(k)
        {
            messages.push(formats::system_from(format, system)?);
        }
        for (i, v) in items.into_iter().enumerate() {
            messages.push(match v {
                Value::String(t) if input_text => Message::user(t),
                v => wire::message_from_value(v, format, &format!("{key}[{i}]"))?,
            });
        }
        formats::link(format, &mut messages);
        Ok(Transcript {
            format,
            messages,
            body,
            source: None,
            input_text,
            origins: Vec::new(),
        })
    }

    /// Guesses the format of a document: Gemini when a body has
    /// `contents` or an array holds contents (`parts`, role `model`);
    /// OpenAI Responses when a body has `input` (and no `messages`) or an
    /// array holds Responses items (`function_call`, `reasoning`,
    /// `input_text` parts, ...); Anthropic when it has a top-level
    /// `system`, tools with an `input_schema`, or content blocks only
    /// Anthropic uses (`tool_use`, `tool_result`, `thinking`,
    /// `redacted_thinking`, `image` with a `source`); OpenAI Chat
    /// Completions otherwise.
    pub fn detect(v: &Value) -> Format {
        let (messages, body) = match v {
            Value::Array(m) => {
                if let Some(f) = formats::detect_array(m.iter()) {
                    return f;
                }
                (m.as_slice(), None)
            }
            Value::Object(o) => {
                if let Some(f) = body_format(
                    o.contains_key("messages"),
                    o.contains_key("input"),
                    o.contains_key("contents"),
                ) {
                    return f;
                }
                (
                    o.get("messages")
                        .and_then(Value::as_array)
                        .map_or(&[][..], Vec::as_slice),
                    Some(o),
                )
            }
            _ => return Format::OpenAi,
        };
        let found: Result<Format, ChatError> = detect_parts(body, messages.iter().map(Ok));
        found.unwrap_or(Format::OpenAi)
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The messages, in order (an Anthropic `system` first).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The JSON text message `i` was read from, byte for byte (for an
    /// Anthropic body's system prompt, #0, the `system` value); `None`
    /// for a transcript not read from text, or a message added or changed
    /// since.
    ///
    /// ```
    /// let doc = cupel_chat::Transcript::parse(r#"[ {"role":"user", "content":"hi" ,"n":1.0} ]"#)?;
    /// assert_eq!(doc.message_json(0), Some(r#"{"role":"user", "content":"hi" ,"n":1.0}"#));
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn message_json(&self, i: usize) -> Option<&str> {
        let src = self.source.as_deref()?;
        let span = match self.origins.get(i)? {
            Origin::Read(Some(at)) => src.elems.get(*at)?.value.clone(),
            Origin::Read(None) => src.members.get(src.system_member?)?.value.clone(),
            _ => return None,
        };
        src.text.get(span)
    }

    /// The request body's fields other than `messages` (and an Anthropic
    /// `system`) as a JSON object: `model`, `tools`, `tool_choice`,
    /// `thinking`, ... (an empty object for a bare messages array).
    pub fn body_value(&self) -> Value {
        Value::Object(self.body.clone().unwrap_or_default())
    }

    /// The tool definitions of a request body (`tools`), if any.
    pub fn tools(&self) -> Option<&Value> {
        self.body.as_ref()?.get("tools")
    }

    /// The same document with other messages (e.g. the kept ones).
    ///
    /// The document's other fields are still written as they were read;
    /// the new messages are written as compact JSON (see
    /// [`to_json`](Self::to_json)).
    pub fn with_messages(&self, messages: Vec<Message>) -> Self {
        Transcript {
            format: self.format,
            origins: if self.source.is_some() {
                vec![Origin::New; messages.len()]
            } else {
                Vec::new()
            },
            messages,
            body: self.body.clone(),
            source: self.source.clone(),
            input_text: self.input_text,
        }
    }

    /// The same document with the messages at `positions` (ascending) of
    /// this one, each in its form from `forms` when it has one there (a
    /// changed form: written as a change of the message as read): a
    /// window made elsewhere, such as a [`CacheTurn`](crate::CacheTurn)'s
    /// `positions` and `shortened`. [`to_json`](Self::to_json) writes it
    /// faithfully to this document's text.
    pub fn window(&self, positions: &[usize], forms: &BTreeMap<usize, Message>) -> Self {
        let mut messages = Vec::with_capacity(positions.len());
        let mut origins = Vec::with_capacity(positions.len());
        for &p in positions {
            let Some(m) = self.messages.get(p) else {
                continue;
            };
            let origin = self.origins.get(p).cloned().unwrap_or(Origin::New);
            match forms.get(&p) {
                Some(form) if form != m => {
                    messages.push(form.clone());
                    origins.push(match origin {
                        Origin::Read(at) => Origin::Changed(at, Box::new(m.clone())),
                        other => other,
                    });
                }
                _ => {
                    messages.push(m.clone());
                    origins.push(origin);
                }
            }
        }
        if self.source.is_none() {
            origins.clear();
        }
        Transcript {
            format: self.format,
            messages,
            body: self.body.clone(),
            source: self.source.clone(),
            input_text: self.input_text,
            origins,
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
        // A system message read from inside `messages` stays there.
        let system_field = formats::system_key(self.format).filter(|_| self.body.is_some());
        let (system, rest): (Vec<&Message>, Vec<&Message>) = match system_field {
            Some(_) => {
                let (system, rest): (Vec<_>, Vec<_>) =
                    self.messages.iter().enumerate().partition(|(i, m)| {
                        m.role == Role::System
                            && !matches!(
                                self.origins.get(*i),
                                Some(Origin::Read(Some(_)) | Origin::Changed(Some(_), _))
                            )
                    });
                (
                    system.into_iter().map(|(_, m)| m).collect(),
                    rest.into_iter().map(|(_, m)| m).collect(),
                )
            }
            _ => (Vec::new(), self.messages.iter().collect()),
        };
        let array = match (self.input_text, rest.as_slice()) {
            (true, [one]) if input_string(one).is_some() => {
                Value::String(input_string(one).unwrap_or_default().to_owned())
            }
            _ => Value::Array(
                rest.iter()
                    .map(|m| wire::message_to_value(m, self.format))
                    .collect(),
            ),
        };
        match &self.body {
            None => array,
            Some(body) => {
                let mut obj = body.clone();
                if let (Some(key), Some(s)) =
                    (system_field, formats::system_to(self.format, &system))
                {
                    obj.insert(key.into(), s);
                }
                obj.insert(formats::conversation_key(self.format).into(), array);
                Value::Object(obj)
            }
        }
    }

    /// The document as pretty-printed JSON text, written afresh from the
    /// model (keys sorted; see [`to_json`](Self::to_json) for the
    /// document as it was read).
    pub fn to_json_pretty(&self) -> String {
        // Serialising a `Value` cannot fail (its keys are strings).
        serde_json::to_string_pretty(&self.to_value()).unwrap_or_default()
    }

    /// The document as JSON text, faithful to the text it was read from:
    /// every message and field Cupel did not change is copied byte for
    /// byte (key order, number literals, string escapes, whitespace);
    /// a message Cupel changed is written as a change of the message as
    /// read, its unchanged members and parts still copied. A transcript
    /// not read from text is written as [`to_json_pretty`](Self::to_json_pretty).
    ///
    /// ```
    /// use cupel_chat::{Transcript, Trim, trim_transcript};
    /// let text = r#"[{"role":"user","content":"caf\u00e9","x":1.50},
    ///   {"role":"assistant","content":"ok","n":12345678901234567890}]"#;
    /// let doc = Transcript::parse(text)?;
    /// assert_eq!(doc.to_json(), text); // nothing changed: the same bytes
    /// let (window, _) = trim_transcript(&doc, &Trim::openai(100))?;
    /// assert_eq!(window.to_json(), text);
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn to_json(&self) -> String {
        if self.source.is_none() {
            return self.to_json_pretty();
        }
        let entries: Vec<Entry<'_>> = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| match self.origins.get(i) {
                Some(Origin::Read(at)) => Entry::Read(*at, m),
                Some(Origin::Changed(at, was)) => Entry::Changed(*at, was, m),
                _ => Entry::New(m),
            })
            .collect();
        self.render(&entries)
    }

    /// The window `out` made of this document (by [`trim`](crate::trim)
    /// of its messages, or [`trim_transcript`](crate::trim_transcript)),
    /// as a transcript: the kept messages in the forms sent.
    /// A running summary ([`Trim::summarize`](crate::Trim::summarize)) is
    /// in it, right after the pinned prefix.
    pub fn window_of(&self, out: &crate::Trimmed<'_>) -> Transcript {
        let mut w = self.window(&out.positions, &out.shortened);
        // A running summary or a recall window's context message (never
        // both: `Trim::recall` refuses a compaction).
        if let Some((at, m)) = crate::compact::placed(out).or_else(|| out.recall_message()) {
            w.insert_new(at, m.clone());
        }
        w
    }

    /// Inserts `message` at index `at` (clamped to the end): a message not
    /// read from the text (such as a running summary, placed with
    /// [`inject`](crate::inject)), written afresh while every message read
    /// stays byte for byte.
    pub fn insert_message(&mut self, at: usize, message: Message) {
        self.insert_new(at, message);
    }

    /// Inserts a message Cupel made (not read from the text) at `at`.
    pub(crate) fn insert_new(&mut self, at: usize, message: Message) {
        let at = at.min(self.messages.len());
        self.messages.insert(at, message);
        if self.source.is_some() {
            let at = at.min(self.origins.len());
            self.origins.insert(at, Origin::New);
        }
    }

    /// The window `out` made of this document as JSON text, as
    /// [`window_of`](Self::window_of)`(out).`[`to_json`](Self::to_json)`()`
    /// writes it, without copying the kept messages first (for a large
    /// transcript this is what `cupel chat` does).
    ///
    /// ```
    /// use cupel_chat::{Transcript, Trim, trim};
    /// let text = r#"[{"role": "user", "content": "Hi"},
    ///  {"role": "assistant", "content": "Hello", "id": 1e2},
    ///  {"role": "user", "content": "Bye"}]"#;
    /// let doc = Transcript::parse(text)?;
    /// let out = trim(doc.messages(), &Trim::openai(1_000))?;
    /// assert_eq!(doc.window_json(&out), text);
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn window_json(&self, out: &crate::Trimmed<'_>) -> String {
        if self.source.is_none() {
            return self.window_of(out).to_json();
        }
        let entries: Vec<Entry<'_>> = out
            .positions
            .iter()
            .filter_map(|&p| {
                let m = self.messages.get(p)?;
                let at = match self.origins.get(p) {
                    Some(Origin::Read(at)) => *at,
                    _ => return Some(Entry::New(out.shortened.get(&p).unwrap_or(m))),
                };
                Some(match out.shortened.get(&p) {
                    Some(form) if form != m => Entry::Changed(at, m, form),
                    _ => Entry::Read(at, m),
                })
            })
            .collect();
        let mut entries = entries;
        if let Some((at, m)) = crate::compact::placed(out).or_else(|| out.recall_message()) {
            entries.insert(at.min(entries.len()), Entry::New(m));
        }
        self.render(&entries)
    }

    /// [`to_json`](Self::to_json) on one line: the whitespace outside
    /// strings removed, nothing else touched.
    pub fn to_json_compact(&self) -> String {
        raw::compact(&self.to_json())
    }

    /// Writes `value`, a change of this document's [`to_value`](Self::to_value)
    /// (such as [`apply_breakpoints`](crate::apply_breakpoints) makes), as
    /// text faithful to [`to_json`](Self::to_json): what `value` did not
    /// change is copied, the rest written as compact JSON.
    pub fn json_of(&self, value: &Value) -> String {
        let text = self.to_json();
        let mut out = String::with_capacity(text.len());
        raw::patch(&mut out, &text, 0..text.len(), &self.to_value(), value);
        out
    }

    /// The document's text with `entries` as its messages.
    fn render(&self, entries: &[Entry<'_>]) -> String {
        let Some(src) = self.source.as_deref() else {
            return String::new();
        };
        let t = src.text.as_str();
        // Room for a newline a caller may add (no doubling for one byte).
        let mut out = String::with_capacity(t.len() + 1);
        out.push_str(&t[..src.span.start]);
        // A body writes system prompts to its system member (Anthropic
        // `system`, Responses `instructions`, Gemini `systemInstruction`).
        let system_key = formats::system_key(self.format).filter(|_| self.body.is_some());
        let system_field = system_key.is_some();
        let (system, rest): (Vec<&Entry<'_>>, Vec<&Entry<'_>>) = entries.iter().partition(|e| {
            // A system message read from inside `messages` stays there.
            system_field
                && e.message().role == Role::System
                && !matches!(e, Entry::Read(Some(_), _) | Entry::Changed(Some(_), _, _))
        });
        if src.members.is_empty() {
            write_messages(&mut out, src, &rest, self.format);
            out.push_str(&t[src.span.end..]);
            return out;
        }
        // The members written, in input order; `system` is added at the
        // end when the window has a system prompt the body had not.
        let keep: Vec<usize> = (0..src.members.len())
            .filter(|&i| !(Some(i) == src.system_member && system.is_empty()))
            .collect();
        let add_system = !system.is_empty() && src.system_member.is_none();
        out.push('{');
        for (k, &i) in keep.iter().enumerate() {
            let m = &src.members[i];
            out.push_str(&t[m.lead.clone()]);
            out.push_str(&t[m.key.clone()]);
            out.push_str(&t[m.sep.clone()]);
            if Some(i) == src.messages_member {
                write_messages(&mut out, src, &rest, self.format);
            } else if Some(i) == src.system_member {
                write_system(&mut out, src, &system, Some(m), self.format);
            } else {
                out.push_str(&t[m.value.clone()]);
            }
            let last = k + 1 == keep.len() && !add_system;
            raw::separate(&mut out, t, &m.trail, last, &src.members_tail);
        }
        if add_system {
            let (lead, sep) = src
                .members
                .last()
                .map_or(("", ":"), |m| (&t[m.lead.clone()], &t[m.sep.clone()]));
            out.push_str(lead);
            raw::write_value(
                &mut out,
                &Value::String(system_key.unwrap_or("system").into()),
            );
            out.push_str(sep);
            write_system(&mut out, src, &system, None, self.format);
            out.push_str(&t[src.members_tail.clone()]);
        }
        if keep.is_empty() && !add_system {
            out.push_str(&t[src.members_tail.clone()]);
        }
        out.push('}');
        out.push_str(&t[src.span.end..]);
        out
    }
}

/// One message to write: as read (at an element, or `None`: the Anthropic
/// `system` member), changed from what was read there, or new.
enum Entry<'m> {
    Read(Option<usize>, &'m Message),
    Changed(Option<usize>, &'m Message, &'m Message),
    New(&'m Message),
}

impl Entry<'_> {
    /// The message as it is written.
    fn message(&self) -> &Message {
        match self {
            Entry::Read(_, m) | Entry::Changed(_, _, m) | Entry::New(m) => m,
        }
    }
}

/// Writes a body's `system` value: as read, patched, or new.
fn write_system(
    out: &mut String,
    src: &Source,
    system: &[&Entry<'_>],
    read: Option<&Member>,
    format: Format,
) {
    let t = src.text.as_str();
    if let ([one], Some(m)) = (system, read) {
        match one {
            Entry::Read(None, _) => return out.push_str(&t[m.value.clone()]),
            Entry::Changed(None, was, now) => {
                let old = formats::system_to(format, &[was]).unwrap_or(Value::Null);
                let new = formats::system_to(format, &[now]).unwrap_or(Value::Null);
                return raw::patch(out, t, m.value.clone(), &old, &new);
            }
            _ => {}
        }
    }
    let msgs: Vec<&Message> = system.iter().map(|e| e.message()).collect();
    raw::write_value(
        out,
        &formats::system_to(format, &msgs).unwrap_or(Value::Null),
    );
}

/// The text of a message a Responses `input` string can stand for: a
/// user message of plain text and nothing else.
fn input_string(m: &Message) -> Option<&str> {
    match (&m.role, &m.content) {
        (Role::User, Content::Text(t)) if m.extra.is_empty() && m.tool_calls.is_none() => Some(t),
        _ => None,
    }
}

/// Writes the messages array: elements read copied with the whitespace
/// before them, changed ones patched, new ones written compact.
fn write_messages(out: &mut String, src: &Source, entries: &[&Entry<'_>], format: Format) {
    let t = src.text.as_str();
    if src.input_text {
        // A Responses `input` string: as read while it is the one message.
        if let [Entry::Read(Some(0), _)] = entries {
            return out.push_str(&t[src.span_of_input()]);
        }
        if let [one] = entries
            && let Some(text) = input_string(one.message())
        {
            return raw::write_value(out, &Value::String(text.to_owned()));
        }
        let items: Vec<Value> = entries
            .iter()
            .map(|e| wire::message_to_value(e.message(), format))
            .collect();
        return raw::write_value(out, &Value::Array(items));
    }
    let default_lead = src.elems.first().map_or("", |e| &t[e.lead.clone()]);
    out.push('[');
    let last = entries.len().saturating_sub(1);
    for (k, e) in entries.iter().enumerate() {
        let trail = match e {
            Entry::Read(Some(at), _) | Entry::Changed(Some(at), _, _) if *at < src.elems.len() => {
                let el = &src.elems[*at];
                out.push_str(&t[el.lead.clone()]);
                match e {
                    Entry::Changed(_, was, now) => raw::patch(
                        out,
                        t,
                        el.value.clone(),
                        &wire::message_to_value(was, format),
                        &wire::message_to_value(now, format),
                    ),
                    _ => out.push_str(&t[el.value.clone()]),
                }
                el.trail.clone()
            }
            other => {
                out.push_str(default_lead);
                raw::write_value(out, &wire::message_to_value(other.message(), format));
                0..0
            }
        };
        raw::separate(out, t, &trail, k == last, &src.elems_tail);
    }
    if entries.is_empty() {
        out.push_str(&t[src.elems_tail.clone()]);
    }
    out.push(']');
}

/// [`Transcript::to_json_compact`] for any JSON text: the whitespace
/// outside strings removed, literals and escapes untouched.
///
/// ```
/// assert_eq!(cupel_chat::compact_json("[ {\"a\" : 1.50} ]"), "[{\"a\":1.50}]");
/// ```
pub fn compact_json(text: &str) -> String {
    raw::compact(text)
}

/// The format a body's keys decide: Gemini for `contents`, Responses for
/// `input` without `messages`; `None` to read `messages`.
/// The conversation array (or Responses input text) of the object at
/// `span`: the members go to `source`, the format its keys tell to `known`
/// (unless `asked`).
fn object_conversation(
    text: &str,
    span: Span,
    source: &mut Source,
    known: &mut Option<Format>,
    asked: Option<Format>,
) -> Result<Span, ChatError> {
    let s = text.as_bytes();
    let unreadable = || shape("", "the document could not be read back as JSON");
    let (members, tail) = raw::members(text, span).ok_or_else(unreadable)?;
    let keys: Vec<Option<String>> = members.iter().map(|m| raw::key(text, m)).collect();
    let has = |k: &str| keys.iter().any(|x| x.as_deref() == Some(k));
    if known.is_none() {
        *known = body_format(has("messages"), has("input"), has("contents"));
    }
    let key = formats::conversation_key(known.unwrap_or(Format::OpenAi));
    // Of repeated keys, the last counts (as when decoding a `Value`).
    source.messages_member = keys.iter().rposition(|k| k.as_deref() == Some(key));
    let Some(at) = source.messages_member else {
        return Err(missing_conversation(*known, asked.is_some(), key));
    };
    let span = members[at].value.clone();
    let array = match (s.get(span.start), *known) {
        (Some(b'['), _) => span,
        (Some(b'"'), Some(Format::Responses)) => {
            source.input_text = true;
            span
        }
        _ => return Err(missing_conversation(*known, asked.is_some(), key)),
    };
    source.members = members;
    source.members_tail = tail;
    Ok(array)
}

/// The format of a document whose keys did not tell it: from its
/// messages (a bare array: the first message that tells), or from the body
/// and its messages' parts.
fn undecided_format(
    body: Option<&Map<String, Value>>,
    elems: &[Elem],
    value: impl Fn(&Span) -> Result<Value, ChatError>,
) -> Result<Format, ChatError> {
    if body.is_some() {
        return detect_parts(body, elems.iter().map(|e| value(&e.value)));
    }
    let mut decoded = Vec::new();
    for e in elems {
        let v = value(&e.value)?;
        let found = formats::detect_array(std::iter::once(&v));
        decoded.push(v);
        if let Some(f) = found {
            return Ok(f);
        }
    }
    detect_parts(None, decoded.into_iter().map(Ok))
}

fn body_format(messages: bool, input: bool, contents: bool) -> Option<Format> {
    if contents && !messages {
        Some(Format::Gemini)
    } else if input && !messages {
        Some(Format::Responses)
    } else {
        None
    }
}

/// A body without the conversation member its format needs (`asked`:
/// the format was given, not detected).
fn missing_conversation(format: Option<Format>, asked: bool, key: &str) -> ChatError {
    let how = if asked {
        ", as asked"
    } else {
        ", from its keys"
    };
    let message = match format {
        Some(Format::Responses) => format!(
            "an OpenAI Responses request body needs `input`, a string or an array of items (read as OpenAI Responses{how})"
        ),
        Some(f) if asked || f == Format::Gemini => format!(
            "{} {} request body needs a `{key}` array (read as {}{how})",
            if f.title().starts_with(['A', 'O']) {
                "an"
            } else {
                "a"
            },
            f.title(),
            f.title()
        ),
        _ => "a request body needs a `messages` array (Chat Completions, Anthropic), `input` (OpenAI Responses) or `contents` (Gemini)".to_owned(),
    };
    ChatError::Shape {
        path: key.into(),
        message,
    }
}

fn shape(path: &str, message: &str) -> ChatError {
    ChatError::Shape {
        path: path.into(),
        message: message.into(),
    }
}

/// The format of a document from its body's fields and its messages
/// (decoded one at a time, until one decides).
fn detect_parts<V: Borrow<Value>>(
    body: Option<&Map<String, Value>>,
    messages: impl Iterator<Item = Result<V, ChatError>>,
) -> Result<Format, ChatError> {
    if let Some(b) = body {
        if b.contains_key("system") {
            return Ok(Format::Anthropic);
        }
        let tools = b.get("tools").and_then(Value::as_array);
        if tools.is_some_and(|t| t.iter().any(|t| t.get("input_schema").is_some())) {
            return Ok(Format::Anthropic);
        }
    }
    for m in messages {
        let m = m?;
        let m: &Value = m.borrow();
        let role = m.get("role").and_then(Value::as_str);
        if matches!(role, Some("system" | "developer" | "tool" | "function"))
            || m.get("tool_calls").is_some()
            || m.get("tool_call_id").is_some()
            || m.get("function_call").is_some()
        {
            return Ok(Format::OpenAi);
        }
        let blocks = m.get("content").and_then(Value::as_array);
        for b in blocks.into_iter().flatten() {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking") => {
                    return Ok(Format::Anthropic);
                }
                Some("image") if b.get("source").is_some() => return Ok(Format::Anthropic),
                Some("image_url") => return Ok(Format::OpenAi),
                _ => {}
            }
        }
    }
    Ok(Format::OpenAi)
}

/// Checks that `json` is JSON, without building it, for an error with
/// its line and column.
fn check_json(json: &str) -> Result<(), ChatError> {
    serde_json::from_str::<serde::de::IgnoredAny>(json)
        .map(|_| ())
        .map_err(json_error)
}

fn json_error(e: serde_json::Error) -> ChatError {
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
}
