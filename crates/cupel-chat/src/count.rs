//! Counting messages as the providers count them.
//!
//! * [`OpenAiCounter`]: OpenAI's documented chat overhead with a real
//!   tiktoken encoding (`o200k_base` for the GPT-4o family and newer,
//!   `cl100k_base` for GPT-4 / GPT-3.5).
//! * [`AnthropicEstimate`]: Anthropic publishes no tokenizer, so this is an
//!   estimate (a public tokenizer's count scaled, plus documented and
//!   measured framing, images, documents and thinking), made to track the
//!   provider by a [`Calibration`] fitted to the `usage.input_tokens` of
//!   earlier requests.

mod anthropic;
mod formats;
mod media;

use std::sync::Arc;

use cupel_core::TokenCounter;
use cupel_tokens::TiktokenCounter;
use serde_json::Value;

use crate::error::ChatError;
use crate::message::{Content, Image, Message, Part};

pub use anthropic::{
    ANTHROPIC_IMAGE_MAX_TOKENS, ANTHROPIC_PDF_PAGE_TOKENS, AnthropicEstimate, PreviousThinking,
    anthropic_image_tokens,
};
pub use formats::{GEMINI_CHARS_PER_TOKEN, GEMINI_IMAGE_TOKENS, GeminiEstimate, ResponsesCounter};
pub(crate) use media::{base64_prefix, image_header_dimensions};

/// Counts the tokens a message costs in a request.
///
/// Implement it for another provider or tokenizer and pass it with
/// [`Trim::counter`](crate::Trim::counter). Counts are non-negative.
pub trait MessageCounter: Send + Sync {
    /// The tokens one message costs (content plus the per-message overhead).
    fn count_message(&self, message: &Message) -> i64;

    /// The tokens each message of a request costs, in order. The default
    /// counts each on its own with [`count_message`](Self::count_message);
    /// a counter for which a message's place matters overrides it (Anthropic
    /// does not bill the thinking of earlier turns: see
    /// [`AnthropicEstimate`]). [`trim`](crate::trim) counts with this.
    fn count_messages(&self, messages: &[Message]) -> Vec<i64> {
        messages.iter().map(|m| self.count_message(m)).collect()
    }

    /// The tokens every request costs whatever its messages: the reply
    /// priming and the tool definitions (`tools` of the request body). The
    /// default is 0.
    fn count_request(&self, tools: Option<&Value>) -> i64 {
        let _ = tools;
        0
    }

    /// A short description for reports (`openai o200k_base`).
    fn describe(&self) -> String;
}

impl<T: MessageCounter + ?Sized> MessageCounter for Arc<T> {
    fn count_message(&self, message: &Message) -> i64 {
        (**self).count_message(message)
    }
    fn count_messages(&self, messages: &[Message]) -> Vec<i64> {
        (**self).count_messages(messages)
    }
    fn count_request(&self, tools: Option<&Value>) -> i64 {
        (**self).count_request(tools)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// Tokens of a message's content, the same walk for every counter: text
/// (and tool names, arguments, thinking, parts this crate does not model) by
/// `text`, images by `image`, tool results by their own content.
fn content_tokens(c: &Content, text: &dyn Fn(&str) -> i64, image: &dyn Fn(&Image) -> i64) -> i64 {
    match c {
        Content::Absent | Content::Null => 0,
        Content::Text(t) => text(t),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text { text: t, .. } => text(t),
                Part::Image(img) => image(img),
                Part::ToolCall(c) => text(&c.name).saturating_add(text(&c.arguments_text())),
                Part::ToolResult(r) => content_tokens(&r.content, text, image),
                Part::Thinking { thinking, .. } => text(thinking),
                Part::RedactedThinking { data, .. } => text(data),
                Part::Other(v) => text(&v.to_string()),
            })
            .fold(0, i64::saturating_add),
    }
}

fn load(name: &str) -> Result<&'static TiktokenCounter, ChatError> {
    // OpenAI's chat models use o200k_base or cl100k_base; the counter is
    // loaded once per process (a few milliseconds: its regular expression).
    let unknown = || ChatError::UnknownEncoding {
        name: name.to_string(),
    };
    match TiktokenCounter::encoding_of(name) {
        Ok("o200k_base" | "cl100k_base") => TiktokenCounter::shared(name).map_err(|_| unknown()),
        _ => Err(unknown()),
    }
}

/// OpenAI's chat token count, as documented in OpenAI's cookbook
/// ("How to count tokens with tiktoken"):
///
/// * every message costs 3 tokens plus the tokens of each of its string
///   fields (`role`, the text content, `tool_call_id`), and a `name` costs its
///   tokens plus 1;
/// * every request costs 3 more: the reply is primed with
///   `<|start|>assistant<|message|>`;
/// * tool calls cost the tokens of their function name and arguments (an
///   estimate: OpenAI does not document their framing);
/// * tool definitions follow the cookbook's function-counting recipe (7
///   tokens per function for `o200k_base`, 10 for `cl100k_base`, plus name,
///   description and each parameter's `name:type:description` line, 3 per
///   parameter, 3 per enum value plus its tokens, 12 at the end);
/// * images follow OpenAI's tile rule: `low` detail costs 85; `high` and
///   `auto` scale the image to fit 2048 x 2048, then its shortest side down
///   to 768, and cost 170 per 512-pixel tile plus 85. When the size cannot be
///   read from the data (only PNG and GIF headers are read), the image
///   counts as the rule's maximum, 8 tiles: 1,445 tokens.
///
/// ```
/// use cupel_chat::{Message, MessageCounter, OpenAiCounter};
/// let c = OpenAiCounter::new("o200k_base")?;
/// // 3 per message + "user" (1 token) + "hello world" (2 tokens).
/// assert_eq!(c.count_message(&Message::user("hello world")), 6);
/// assert_eq!(c.count_request(None), 3); // reply priming
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct OpenAiCounter {
    bpe: &'static TiktokenCounter,
}

/// Tokens every OpenAI message costs before its fields.
pub const OPENAI_TOKENS_PER_MESSAGE: i64 = 3;
/// Tokens a `name` field costs on top of its text.
pub const OPENAI_TOKENS_PER_NAME: i64 = 1;
/// Tokens every OpenAI request costs for priming the reply.
pub const OPENAI_REPLY_PRIMING: i64 = 3;

impl OpenAiCounter {
    /// A counter with the encoding `name` (`o200k_base`, `cl100k_base`, or an
    /// OpenAI model name such as `gpt-4o`). The encoding is loaded once per
    /// process.
    ///
    /// # Errors
    /// [`ChatError::UnknownEncoding`] for any other name.
    pub fn new(name: &str) -> Result<Self, ChatError> {
        Ok(OpenAiCounter { bpe: load(name)? })
    }

    /// The encoding's name.
    pub fn encoding(&self) -> &'static str {
        self.bpe.encoding()
    }

    fn text(&self, s: &str) -> i64 {
        self.bpe.count_tokens(s)
    }

    fn content(&self, c: &Content) -> i64 {
        content_tokens(c, &|t| self.text(t), &openai_image)
    }

    fn tools(&self, tools: &Value) -> i64 {
        let Some(tools) = tools.as_array() else {
            return 0;
        };
        if tools.is_empty() {
            return 0;
        }
        let func_init = if self.encoding() == "cl100k_base" {
            10
        } else {
            7
        };
        let mut n: i64 = 0;
        for t in tools {
            let f = t.get("function").unwrap_or(t);
            let name = f.get("name").and_then(Value::as_str).unwrap_or("");
            let desc = f.get("description").and_then(Value::as_str).unwrap_or("");
            let desc = desc.strip_suffix('.').unwrap_or(desc);
            n = n
                .saturating_add(func_init)
                .saturating_add(self.text(&format!("{name}:{desc}")));
            let props = f
                .get("parameters")
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object);
            if let Some(props) = props.filter(|p| !p.is_empty()) {
                n = n.saturating_add(3);
                for (key, p) in props {
                    n = n.saturating_add(3);
                    if let Some(values) = p.get("enum").and_then(Value::as_array) {
                        n = n.saturating_sub(3);
                        for v in values {
                            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                            n = n.saturating_add(3).saturating_add(self.text(&v));
                        }
                    }
                    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
                    let d = p.get("description").and_then(Value::as_str).unwrap_or("");
                    let d = d.strip_suffix('.').unwrap_or(d);
                    n = n.saturating_add(self.text(&format!("{key}:{ty}:{d}")));
                }
            }
        }
        n.saturating_add(12)
    }
}

impl MessageCounter for OpenAiCounter {
    fn count_message(&self, m: &Message) -> i64 {
        let mut n = OPENAI_TOKENS_PER_MESSAGE
            .saturating_add(self.text(m.role.as_str()))
            .saturating_add(self.content(&m.content));
        if let Some(name) = &m.name {
            n = n
                .saturating_add(self.text(name))
                .saturating_add(OPENAI_TOKENS_PER_NAME);
        }
        if let Some(id) = &m.tool_call_id {
            n = n.saturating_add(self.text(id));
        }
        for c in m.tool_calls.iter().flatten() {
            n = n
                .saturating_add(self.text(&c.name))
                .saturating_add(self.text(&c.arguments_text()));
        }
        // A legacy `function_call` is counted as a tool call: its name and
        // its arguments text.
        if let Some((name, args)) = m.legacy_call() {
            n = n
                .saturating_add(self.text(name))
                .saturating_add(self.text(args));
        }
        n
    }

    fn count_request(&self, tools: Option<&Value>) -> i64 {
        OPENAI_REPLY_PRIMING.saturating_add(tools.map_or(0, |t| self.tools(t)))
    }

    fn describe(&self) -> String {
        format!("openai {}", self.encoding())
    }
}

/// A [`MessageCounter`] from any text [`TokenCounter`](cupel_core::TokenCounter):
/// for an open model counted with its own tokenizer
/// (`cupel_tokens::HuggingFaceCounter` from the model's `tokenizer.json`),
/// or any other counter you trust.
///
/// A message costs `per_message` tokens of chat-template framing (what the
/// model's template wraps each message in: role markers, separators; read it
/// off the template, or calibrate it) plus the tokens of its role, name, text
/// parts, tool-call names and arguments, tool-call id, thinking text and any
/// part this crate does not model. Images cost `image_tokens` each (0 by
/// default: most open chat models take text only). A request costs
/// `per_request` tokens (the generation prompt the template appends) plus its
/// tool definitions' JSON as text.
///
/// ```
/// use cupel_chat::{Message, MessageCounter, TextCounter};
/// use cupel_core::TokenCounter;
///
/// /// Counts words, standing in for a real tokenizer.
/// struct Words;
/// impl TokenCounter for Words {
///     fn count_tokens(&self, text: &str) -> i64 {
///         text.split_whitespace().count() as i64
///     }
/// }
/// let counter = TextCounter::new(Words, "words").per_message(4).per_request(2);
/// // 4 framing + "user" (1) + "where is my parcel" (4) = 9.
/// assert_eq!(counter.count_message(&Message::user("where is my parcel")), 9);
/// assert_eq!(counter.count_request(None), 2);
/// assert_eq!(counter.describe(), "words");
/// ```
pub struct TextCounter<C> {
    counter: C,
    name: String,
    per_message: i64,
    per_request: i64,
    image_tokens: i64,
}

impl<C> std::fmt::Debug for TextCounter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCounter")
            .field("name", &self.name)
            .field("per_message", &self.per_message)
            .field("per_request", &self.per_request)
            .field("image_tokens", &self.image_tokens)
            .finish_non_exhaustive()
    }
}

impl<C: cupel_core::TokenCounter> TextCounter<C> {
    /// Counts with `counter`, described in reports as `name`; no framing
    /// until set.
    pub fn new(counter: C, name: impl Into<String>) -> Self {
        TextCounter {
            counter,
            name: name.into(),
            per_message: 0,
            per_request: 0,
            image_tokens: 0,
        }
    }

    /// Tokens of chat-template framing per message (negative counts as 0).
    #[must_use]
    pub fn per_message(mut self, tokens: i64) -> Self {
        self.per_message = tokens.max(0);
        self
    }

    /// Tokens every request costs besides its messages (negative counts as 0).
    #[must_use]
    pub fn per_request(mut self, tokens: i64) -> Self {
        self.per_request = tokens.max(0);
        self
    }

    /// Tokens one image costs (negative counts as 0).
    #[must_use]
    pub fn image_tokens(mut self, tokens: i64) -> Self {
        self.image_tokens = tokens.max(0);
        self
    }
}

impl<C: cupel_core::TokenCounter> MessageCounter for TextCounter<C> {
    fn count_message(&self, m: &Message) -> i64 {
        let text = |t: &str| self.counter.count_tokens(t);
        let image = |_: &Image| self.image_tokens;
        let mut n = self
            .per_message
            .saturating_add(text(m.role.as_str()))
            .saturating_add(content_tokens(&m.content, &text, &image));
        if let Some(name) = &m.name {
            n = n.saturating_add(text(name));
        }
        if let Some(id) = &m.tool_call_id {
            n = n.saturating_add(text(id));
        }
        for c in m.tool_calls.iter().flatten() {
            n = n
                .saturating_add(text(&c.name))
                .saturating_add(text(&c.arguments_text()));
        }
        n
    }

    fn count_request(&self, tools: Option<&Value>) -> i64 {
        let tools = tools.map_or(0, |t| self.counter.count_tokens(&t.to_string()));
        self.per_request.saturating_add(tools)
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

/// OpenAI's image cost: `low` detail 85; otherwise 170 per 512-px tile after
/// scaling to fit 2048 x 2048 and the shortest side to 768, plus 85.
///
/// ```
/// use cupel_chat::openai_image_tokens;
/// assert_eq!(openai_image_tokens(1024, 1024, "high"), 765); // 768x768: 4 tiles
/// assert_eq!(openai_image_tokens(2048, 4096, "high"), 1105); // 768x1536: 6 tiles
/// assert_eq!(openai_image_tokens(4096, 4096, "low"), 85);
/// ```
pub fn openai_image_tokens(width: u32, height: u32, detail: &str) -> i64 {
    if detail.eq_ignore_ascii_case("low") {
        return 85;
    }
    let (mut w, mut h) = (u64::from(width.max(1)), u64::from(height.max(1)));
    let longest = w.max(h);
    if longest > 2048 {
        w = (w * 2048 / longest).max(1);
        h = (h * 2048 / longest).max(1);
    }
    let shortest = w.min(h);
    if shortest > 768 {
        w = (w * 768 / shortest).max(1);
        h = (h * 768 / shortest).max(1);
    }
    let tiles = w.div_ceil(512) * h.div_ceil(512);
    // tiles <= 8 here (the longest side is at most 2048, the shortest at most 768).
    i64::try_from(tiles).unwrap_or(8) * 170 + 85
}

/// The OpenAI cost of an image part when its size is unknown: 8 tiles.
pub const OPENAI_IMAGE_MAX_TOKENS: i64 = 8 * 170 + 85;

fn openai_image(img: &Image) -> i64 {
    let detail = img.detail.as_deref().unwrap_or("auto");
    if detail.eq_ignore_ascii_case("low") {
        return 85;
    }
    match img.dimensions() {
        Some((w, h)) => openai_image_tokens(w, h, detail),
        None => OPENAI_IMAGE_MAX_TOKENS,
    }
}

/// One earlier request: what the estimate said, and what the provider
/// reported (`usage.input_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    /// The uncalibrated estimate ([`AnthropicEstimate::raw_request`]).
    pub estimate: i64,
    /// The provider's count.
    pub actual: i64,
}

/// A fit of the estimate to the provider's counts: `actual ≈ scale *
/// estimate` (least squares through the origin), with the errors before and
/// after, so a caller knows how far to trust it.
///
/// ```
/// use cupel_chat::{Calibration, Observation};
/// // The estimate runs 20% low on every request.
/// let obs = [Observation { estimate: 1000, actual: 1200 }, Observation { estimate: 500, actual: 600 }];
/// let c = Calibration::fit(&obs)?;
/// assert!((c.scale() - 1.2).abs() < 1e-9);
/// assert!(c.mean_abs_error_after() < 1e-9);
/// assert!((c.mean_abs_error_before() - 1.0 / 6.0).abs() < 1e-9); // |1000-1200|/1200
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    scale: f64,
    observations: usize,
    before: f64,
    after: f64,
    max_after: f64,
}

impl Calibration {
    /// Fits the scale. Observations with a non-positive estimate or actual
    /// count are ignored.
    ///
    /// # Errors
    /// [`ChatError::NoObservations`] when none is usable.
    pub fn fit(observations: &[Observation]) -> Result<Self, ChatError> {
        let usable: Vec<(f64, f64)> = observations
            .iter()
            .filter(|o| o.estimate > 0 && o.actual > 0)
            .map(|o| (o.estimate as f64, o.actual as f64))
            .collect();
        if usable.is_empty() {
            return Err(ChatError::NoObservations {
                observations: observations.len(),
            });
        }
        let ey: f64 = usable.iter().map(|(e, y)| e * y).sum();
        let ee: f64 = usable.iter().map(|(e, _)| e * e).sum();
        let scale = ey / ee;
        let n = usable.len() as f64;
        let rel = |s: f64| usable.iter().map(move |(e, y)| (s * e - y).abs() / y);
        Ok(Calibration {
            scale,
            observations: usable.len(),
            before: rel(1.0).sum::<f64>() / n,
            after: rel(scale).sum::<f64>() / n,
            max_after: rel(scale).fold(0.0, f64::max),
        })
    }

    /// The fitted scale.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// How many observations were used.
    pub fn observations(&self) -> usize {
        self.observations
    }

    /// Mean absolute relative error of the uncalibrated estimate (0.1 = 10%).
    pub fn mean_abs_error_before(&self) -> f64 {
        self.before
    }

    /// Mean absolute relative error once calibrated, on the same observations.
    pub fn mean_abs_error_after(&self) -> f64 {
        self.after
    }

    /// The largest absolute relative error once calibrated.
    pub fn max_abs_error_after(&self) -> f64 {
        self.max_after
    }
}
