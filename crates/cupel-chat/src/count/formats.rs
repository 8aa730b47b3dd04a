//! Counting for the OpenAI Responses and Gemini formats.
//!
//! * [`ResponsesCounter`]: OpenAI's tokenizer (`o200k_base` by default)
//!   with the Chat Completions framing carried over item by item (OpenAI
//!   documents none for Responses; see `spec/19-chat-transcripts.md`,
//!   "Responses and Gemini"), calibrated from `usage.input_tokens`.
//! * [`GeminiEstimate`]: Google's rule of thumb of about four characters
//!   per token, 258 tokens per image, calibrated from
//!   `usageMetadata.promptTokenCount`.

use cupel_core::TokenCounter;
use cupel_tokens::TiktokenCounter;
use serde_json::Value;

use super::{Calibration, MessageCounter, OPENAI_IMAGE_MAX_TOKENS, OPENAI_TOKENS_PER_MESSAGE};
use crate::error::ChatError;
use crate::formats::responses;
use crate::message::{Content, Message, Part};

/// `raw * scale`, rounded up, saturating.
fn scaled(raw: i64, scale: f64) -> i64 {
    if scale == 1.0 {
        return raw;
    }
    let v = (raw as f64 * scale).ceil();
    if v.is_finite() && v >= 0.0 && v < i64::MAX as f64 {
        v as i64
    } else {
        i64::MAX
    }
}

/// Counts OpenAI Responses input items with OpenAI's tokenizer.
///
/// Each item costs [`OPENAI_TOKENS_PER_MESSAGE`] (3) plus:
///
/// * a message: its role and its text (an `input_image` part
///   [`OPENAI_IMAGE_MAX_TOKENS`], other parts their JSON text);
/// * a `function_call`: its name and its arguments text;
/// * a `function_call_output`: its output text;
/// * a `reasoning` item: its summary texts (the `encrypted_content` is
///   not counted: its size in tokens is not knowable from outside); one
///   before the last user message nothing at all (see
///   [`count_messages`](MessageCounter::count_messages));
/// * a `compaction` item: nothing more (opaque);
/// * any other item: the JSON text of its fields but `type`, `id`,
///   `status` and `encrypted_content`.
///
/// A request adds 3 for priming the reply and its `tools` as Chat
/// Completions counts them. [`calibrated`](Self::calibrated) scales every
/// count to the `usage.input_tokens` OpenAI reported.
///
/// ```
/// use cupel_chat::{MessageCounter, Message, ResponsesCounter};
/// let c = ResponsesCounter::new("o200k_base")?;
/// // 3 per item + "user" (1 token) + "hello world" (2 tokens).
/// assert_eq!(c.count_message(&Message::user("hello world")), 6);
/// assert_eq!(c.count_request(None), 3);
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ResponsesCounter {
    inner: super::OpenAiCounter,
    bpe: &'static TiktokenCounter,
    scale: f64,
}

impl ResponsesCounter {
    /// A counter with the encoding `name` (`o200k_base`, `cl100k_base`,
    /// or an OpenAI model name), uncalibrated.
    ///
    /// # Errors
    /// [`ChatError::UnknownEncoding`] for any other name.
    pub fn new(name: &str) -> Result<Self, ChatError> {
        Ok(ResponsesCounter {
            inner: super::OpenAiCounter::new(name)?,
            bpe: super::load(name)?,
            scale: 1.0,
        })
    }

    /// Applies a calibration: every count is multiplied by its scale and
    /// rounded up.
    #[must_use]
    pub fn calibrated(mut self, calibration: &Calibration) -> Self {
        self.scale = calibration.scale();
        self
    }

    /// The scale in use (1 uncalibrated).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The uncalibrated count of a whole request: its items (the reasoning
    /// of earlier turns free), the reply priming and its tools (what a
    /// calibration fits against `usage.input_tokens`).
    pub fn raw_request(&self, messages: &[Message], tools: Option<&Value>) -> i64 {
        raw_counts(self, messages)
            .into_iter()
            .fold(self.inner.count_request(tools), i64::saturating_add)
    }

    fn text(&self, s: &str) -> i64 {
        self.bpe.count_tokens(s)
    }

    fn content(&self, c: &Content) -> i64 {
        match c {
            Content::Text(t) => self.text(t),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text { text, .. } => self.text(text),
                    Part::Other(v)
                        if v.get("type").and_then(Value::as_str) == Some("input_image") =>
                    {
                        OPENAI_IMAGE_MAX_TOKENS
                    }
                    Part::Other(v) => self.text(&v.to_string()),
                    _ => 0,
                })
                .fold(0, i64::saturating_add),
            Content::Absent | Content::Null => 0,
        }
    }

    fn raw_message(&self, m: &Message) -> i64 {
        let body = match responses::kind(m) {
            "message" => self
                .text(m.role.as_str())
                .saturating_add(self.content(&m.content)),
            "function_call" => m
                .calls()
                .map(|c| {
                    self.text(&c.name)
                        .saturating_add(self.text(&c.arguments_text()))
                })
                .fold(0, i64::saturating_add),
            "function_call_output" => self.content(&m.content),
            "reasoning" => m
                .extra
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("text").and_then(Value::as_str))
                .map(|t| self.text(t))
                .fold(0, i64::saturating_add),
            "compaction" => 0,
            _ => {
                let mut rest = m.extra.clone();
                for k in ["type", "id", "status", "encrypted_content"] {
                    rest.remove(k);
                }
                let mut n = if rest.is_empty() {
                    0
                } else {
                    self.text(&Value::Object(rest).to_string())
                };
                for c in m.calls() {
                    n = n.saturating_add(self.text(&c.arguments_text()));
                }
                n.saturating_add(self.content(&m.content))
            }
        };
        OPENAI_TOKENS_PER_MESSAGE.saturating_add(body)
    }
}

impl MessageCounter for ResponsesCounter {
    fn count_message(&self, m: &Message) -> i64 {
        scaled(self.raw_message(m), self.scale)
    }

    /// As [`count_message`](Self::count_message), except that a
    /// `reasoning` item before the last user message costs nothing: OpenAI
    /// drops the reasoning of earlier turns from the context.
    fn count_messages(&self, messages: &[Message]) -> Vec<i64> {
        raw_counts(self, messages)
            .into_iter()
            .map(|raw| scaled(raw, self.scale))
            .collect()
    }

    fn count_request(&self, tools: Option<&Value>) -> i64 {
        scaled(self.inner.count_request(tools), self.scale)
    }

    fn describe(&self) -> String {
        if self.scale == 1.0 {
            format!("responses {}", self.inner.encoding())
        } else {
            format!(
                "responses {}, calibrated x{:.3}",
                self.inner.encoding(),
                self.scale
            )
        }
    }
}

/// Each item's uncalibrated count in its place: a `reasoning` item before
/// the last user message counts 0 (OpenAI keeps only the reasoning since
/// the last user message in context: platform.openai.com/docs/guides/reasoning,
/// "Keeping reasoning items in context", read 2026-11-27).
fn raw_counts(c: &ResponsesCounter, messages: &[Message]) -> Vec<i64> {
    let last_user = messages
        .iter()
        .rposition(|m| m.role == crate::message::Role::User && responses::kind(m) == "message");
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if responses::is_reasoning(m) && last_user.is_some_and(|u| i < u) {
                0
            } else {
                c.raw_message(m)
            }
        })
        .collect()
}

/// Characters per token in Google's rule of thumb for Gemini ("a token is
/// about four characters"; ai.google.dev/gemini-api/docs/tokens, read
/// 2026-11-27).
pub const GEMINI_CHARS_PER_TOKEN: i64 = 4;

/// Tokens of an image part whose size is not read: 258, what Gemini
/// bills an image of at most 384 pixels on both sides, and each 768x768
/// tile of a larger one (ai.google.dev/gemini-api/docs/tokens, read
/// 2026-11-27). Larger images cost a multiple: calibrate.
pub const GEMINI_IMAGE_TOKENS: i64 = 258;

/// An estimate of Gemini's input tokens: Google publishes no tokenizer
/// for its API models, so each text counts `ceil(chars / 4)`
/// ([`GEMINI_CHARS_PER_TOKEN`]), each part on its own:
///
/// * a `text` part: its text;
/// * a `functionCall`: its name and its `args` as compact JSON;
/// * a `functionResponse`: its name and its `response` as compact JSON;
/// * an `inlineData` or `fileData` part: [`GEMINI_IMAGE_TOKENS`];
/// * any other part: its JSON text.
///
/// `thoughtSignature`s are not counted, nor is any framing per turn
/// (none is documented); a request adds its `tools` as compact JSON.
/// [`calibrated`](Self::calibrated) scales every count to the
/// `usageMetadata.promptTokenCount` Gemini reported, which absorbs what
/// the rule of thumb misses.
///
/// ```
/// use cupel_chat::{GeminiEstimate, MessageCounter, Message};
/// // "hello world" is 11 characters: ceil(11 / 4) = 3.
/// assert_eq!(GeminiEstimate::new().count_message(&Message::user("hello world")), 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiEstimate {
    scale: f64,
}

impl Default for GeminiEstimate {
    fn default() -> Self {
        Self::new()
    }
}

impl GeminiEstimate {
    /// The uncalibrated estimate.
    pub fn new() -> Self {
        GeminiEstimate { scale: 1.0 }
    }

    /// Applies a calibration: every count is multiplied by its scale and
    /// rounded up.
    #[must_use]
    pub fn calibrated(mut self, calibration: &Calibration) -> Self {
        self.scale = calibration.scale();
        self
    }

    /// The scale in use (1 uncalibrated).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The uncalibrated estimate of a whole request (what a calibration
    /// fits against `usageMetadata.promptTokenCount`).
    pub fn raw_request(&self, messages: &[Message], tools: Option<&Value>) -> i64 {
        messages
            .iter()
            .map(raw_message)
            .fold(raw_tools(tools), i64::saturating_add)
    }
}

/// `ceil(chars / 4)`.
fn chars(s: &str) -> i64 {
    let n = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
    n.saturating_add(GEMINI_CHARS_PER_TOKEN - 1) / GEMINI_CHARS_PER_TOKEN
}

fn raw_tools(tools: Option<&Value>) -> i64 {
    match tools {
        None | Some(Value::Null) => 0,
        Some(Value::Array(t)) if t.is_empty() => 0,
        Some(t) => chars(&t.to_string()),
    }
}

fn raw_part(p: &Part) -> i64 {
    match p {
        Part::Text { text, .. } => chars(text),
        Part::ToolCall(c) => {
            let args = if c.arguments.is_null() {
                String::new()
            } else {
                c.arguments.to_string()
            };
            chars(&format!("{}{args}", c.name))
        }
        Part::ToolResult(r) => {
            let name = r
                .extra
                .get("functionResponse")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            chars(&format!("{name}{}", r.content.texts().join("\n")))
        }
        Part::Other(v) if v.get("inlineData").is_some() || v.get("fileData").is_some() => {
            GEMINI_IMAGE_TOKENS
        }
        Part::Other(v) => chars(&v.to_string()),
        Part::Image(_) => GEMINI_IMAGE_TOKENS,
        _ => 0,
    }
}

fn raw_message(m: &Message) -> i64 {
    match &m.content {
        Content::Text(t) => chars(t),
        Content::Parts(p) => p.iter().map(raw_part).fold(0, i64::saturating_add),
        Content::Absent | Content::Null => 0,
    }
}

impl MessageCounter for GeminiEstimate {
    fn count_message(&self, m: &Message) -> i64 {
        scaled(raw_message(m), self.scale)
    }

    fn count_request(&self, tools: Option<&Value>) -> i64 {
        scaled(raw_tools(tools), self.scale)
    }

    fn describe(&self) -> String {
        if self.scale == 1.0 {
            "gemini estimate (4 chars/token)".into()
        } else {
            format!(
                "gemini estimate (4 chars/token), calibrated x{:.3}",
                self.scale
            )
        }
    }
}
