//! Anthropic's input count, estimated: Anthropic publishes no tokenizer for
//! its current models, so [`AnthropicEstimate`] counts text with a public
//! tokenizer and adds the framing, images, documents and reasoning Anthropic
//! bills, as documented or as measured against billed requests (see
//! `spec/19-chat-transcripts.md`, "Anthropic counting accuracy").

use cupel_core::TokenCounter;
use cupel_tokens::TiktokenCounter;
use serde_json::Value;

use super::media::{IMAGE_HEADER_BYTES, base64_decoded_len, base64_prefix, image_size, pdf_pages};
use super::{Calibration, MessageCounter};
use crate::message::{Content, Image, ImageSource, Message, Part, Role};

/// Text: Anthropic tokens per 1,000 `cl100k_base` tokens for the tokenizer
/// of Claude 3 to Claude 4.6. Fitted on the recorded requests (text and tool
/// traffic): their billed text runs 1.10 to 1.14 times the `cl100k_base`
/// count, for English prose, code and JSON alike.
const TEXT_PER_MILLE: i64 = 1_100;
/// Text for the tokenizer of Claude Opus 4.7 and later models, which Anthropic
/// documents as using up to 1.35 times as many tokens for the same text;
/// the recorded requests of those models run 1.4 times the `cl100k_base`
/// count (1.27 times the older tokenizer).
const TEXT_PER_MILLE_NEW: i64 = 1_400;
/// Framing of every message (role marker and separator), measured.
const PER_MESSAGE: i64 = 2;
/// Framing of every request (the turn the reply is primed with), measured.
const PER_REQUEST: i64 = 5;
/// Framing of each tool definition besides its JSON, measured.
const PER_TOOL: i64 = 15;
/// Framing of each `tool_use` and `tool_result` block besides its id, name,
/// input and content, measured.
const PER_TOOL_BLOCK: i64 = 8;
/// The tool-use system prompt of Claude Sonnet 3.7, 4 and Opus 4 / 4.1 with
/// `tool_choice` `auto` or `none` (Anthropic's tool-use pricing table).
const TOOL_SYSTEM_4: i64 = 346;
/// The same with `tool_choice` `any` or `tool`.
const TOOL_SYSTEM_4_FORCED: i64 = 313;
/// The tool-use system prompt of Claude 4.5 and 4.6 with `auto` or `none`,
/// which Anthropic does not publish: measured on the recorded requests.
const TOOL_SYSTEM_45: i64 = 445;
/// The same with `any` or `tool`, measured.
const TOOL_SYSTEM_45_FORCED: i64 = 545;
/// The tool-use system prompt of Claude Opus 4.7 and later (their own
/// tokenizer) with `auto` or `none`, measured on four recorded requests.
const TOOL_SYSTEM_47: i64 = 325;
/// The same with `any` or `tool`: no recorded request, so the difference
/// measured for Claude 4.5 (100) is added.
const TOOL_SYSTEM_47_FORCED: i64 = TOOL_SYSTEM_47 + (TOOL_SYSTEM_45_FORCED - TOOL_SYSTEM_45);
/// Extra request tokens with `thinking` `enabled` (Claude 3.7 to 4.6),
/// measured.
const THINKING_ENABLED: i64 = 28;
/// Extra request tokens with `thinking` `adaptive` (Claude Opus 4.6),
/// measured; later models show none.
const THINKING_ADAPTIVE: i64 = 16;
/// Anthropic's vision limits: images are scaled down to a long edge of
/// 1,568 px (and to about 1,600 tokens: [`ANTHROPIC_IMAGE_MAX_TOKENS`]).
const IMAGE_MAX_EDGE: u64 = 1_568;
/// The most tokens an image costs: Anthropic scales a larger image down to
/// about 1,600 tokens (and to a long edge of 1,568 px) before counting it
/// (2,576 px and 4,784 tokens for Claude Opus 4.7 and later). Also the
/// estimate for an image whose size cannot be known.
pub const ANTHROPIC_IMAGE_MAX_TOKENS: i64 = 1_600;
/// Claude Opus 4.7's larger limits: 2,576 px ...
const IMAGE_MAX_EDGE_HIGH: u64 = 2_576;
/// ... and 4,784 tokens.
const IMAGE_MAX_TOKENS_HIGH: i64 = 4_784;
/// One PDF page: its image (the vision cap, 1,600) plus 500 tokens of text,
/// between a page without text and a dense one (measured: a near-empty page
/// billed 1,580, a page of dense prose 2,660). Anthropic's PDF guide puts a
/// page at 1,500 to 3,000 tokens.
pub const ANTHROPIC_PDF_PAGE_TOKENS: i64 = ANTHROPIC_IMAGE_MAX_TOKENS + 500;
/// Framing of each `document` block (its source and title markup), measured
/// on text documents: 37 to 64 tokens over their text.
const PER_DOCUMENT: i64 = 50;
/// Decoded bytes of `redacted_thinking` data per token: the data is the
/// encrypted reasoning, so its decoded length stands for the length of the
/// hidden text, at about 4 bytes (characters of English) per token.
const REDACTED_BYTES_PER_TOKEN: usize = 4;

/// What the API does with the thinking blocks of earlier assistant turns
/// (`thinking` and `redacted_thinking`), which decides whether they are
/// counted.
///
/// A turn is earlier when it comes before the last user message that is not
/// made of tool results only. The blocks of the current turn (every
/// assistant message after that user message: a tool-use loop still
/// running) are always counted: the API requires them and keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousThinking {
    /// Removed by the API before the model sees the request, so not billed:
    /// the behaviour Anthropic's context-windows guide documents, and the
    /// default of Claude 3.7, Sonnet 4 and 4.5, Opus 4 and 4.1, Haiku 4.5.
    Stripped,
    /// Kept and billed: the default of Claude Opus 4.5 and later, Sonnet 4.6
    /// and later (Anthropic's extended-thinking guide); choose it too for a
    /// request whose `context_management` keeps every turn's thinking.
    Kept,
}

/// The parts of a model name that decide the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    family: Family,
    major: u32,
    minor: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Opus,
    Sonnet,
    Haiku,
    Other,
}

impl Version {
    /// Reads `claude-sonnet-4-5-20250929`, `claude-3-5-haiku-latest`,
    /// `claude-opus-4-1@20250805`, `anthropic.claude-3-7-sonnet-...-v1:0`:
    /// the family word and the first number below 100 (with the next one as
    /// its minor version).
    fn parse(model: &str) -> Option<Version> {
        let lower = model.to_ascii_lowercase();
        let rest = &lower[lower.find("claude")? + "claude".len()..];
        let tokens: Vec<&str> = rest
            .split(['-', '@', ':', '_', '/'])
            .filter(|t| !t.is_empty())
            .collect();
        let family = tokens
            .iter()
            .find_map(|t| match *t {
                "opus" => Some(Family::Opus),
                "sonnet" => Some(Family::Sonnet),
                "haiku" => Some(Family::Haiku),
                _ => None,
            })
            .unwrap_or(Family::Other);
        let small = |t: &str| t.parse::<u32>().ok().filter(|n| *n < 100);
        let (i, first) = tokens.iter().enumerate().find_map(|(i, t)| {
            // `2.1`, `1.2`: a version with a dot.
            if let Some((a, b)) = t.split_once('.') {
                return Some((i, (small(a)?, small(b)?)));
            }
            Some((i, (small(t)?, u32::MAX)))
        })?;
        let (major, minor) = match first {
            (major, u32::MAX) => (major, tokens.get(i + 1).and_then(|t| small(t)).unwrap_or(0)),
            dotted => dotted,
        };
        Some(Version {
            family,
            major,
            minor,
        })
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// Whether the model keeps earlier turns' thinking by default (Anthropic's
    /// extended thinking guide): Opus 4.5 and later, Sonnet 4.6 and later,
    /// every model from Claude 5 on.
    fn keeps_thinking(&self) -> bool {
        match self.family {
            Family::Opus => self.at_least(4, 5),
            Family::Sonnet => self.at_least(4, 6),
            _ => self.at_least(5, 0),
        }
    }

    /// The tool-use system prompt for `tool_choice` `auto`/`none` and
    /// `any`/`tool`: Anthropic's table up to Claude 4.1, measured after.
    fn tool_system(&self) -> (i64, i64) {
        if self.at_least(4, 7) {
            return (TOOL_SYSTEM_47, TOOL_SYSTEM_47_FORCED);
        }
        if self.at_least(4, 5) {
            return (TOOL_SYSTEM_45, TOOL_SYSTEM_45_FORCED);
        }
        match (self.family, self.major, self.minor) {
            (Family::Opus, 3, 0) => (530, 281),
            (Family::Sonnet, 3, 0) => (159, 235),
            (Family::Haiku, 3, _) => (264, 340),
            _ => (TOOL_SYSTEM_4, TOOL_SYSTEM_4_FORCED),
        }
    }
}

/// An estimate of the input tokens Anthropic bills for a request, made to
/// track the provider with a [`Calibration`].
///
/// Anthropic publishes no tokenizer for its current models (its
/// token-counting endpoint needs a network call), so the estimate is stated
/// here in full; each constant is documented by Anthropic or measured on
/// recorded, billed requests (`spec/19-chat-transcripts.md` gives the
/// sources and the error distribution):
///
/// * **text** (text blocks, tool names, inputs and ids, tool results,
///   thinking, documents' text, blocks this crate does not model as JSON):
///   its `cl100k_base` token count times 1.1, rounded up per message (times
///   1.4 for Claude Opus 4.7 and later, whose tokenizer Anthropic documents
///   as using up to 1.35 times as many tokens);
/// * **framing**: 2 tokens per message, 5 per request, 15 per tool
///   definition, 8 per `tool_use` or `tool_result` block, 50 per `document`
///   block (all measured);
/// * **tool definitions**: their JSON as text (without `cache_control`) plus
///   the tool-use system prompt: 346 tokens (313 when `tool_choice` forces a
///   tool) as Anthropic documents for Claude Sonnet 3.7 to Opus 4.1 (530 /
///   281, 159 / 235, 264 / 340 for Claude 3 Opus, Sonnet and Haiku); 445
///   (545) as measured for Claude 4.5 and 4.6, the default; 325 as measured
///   for Opus 4.7 and later;
/// * **images**: Anthropic's `width * height / 750`, after scaling the long
///   edge down to 1,568 px, at most 1,600 tokens (2,576 px and 4,784 tokens
///   for Opus 4.7 and later). The size is read from PNG, GIF, WebP and JPEG
///   data; an image given by URL or file id, or whose size cannot be read,
///   counts the cap, 1,600: what any larger image is scaled down to (set
///   another with [`url_image_tokens`](Self::url_image_tokens));
/// * **documents**: a PDF counts 2,100 tokens a page
///   ([`ANTHROPIC_PDF_PAGE_TOKENS`]: the page's image at the cap plus 500 of
///   text), its pages counted in the base64 data (`/Type /Page` objects, or a
///   linearized file's `/N`); a PDF by URL or file id, or whose pages cannot
///   be read, counts one page (set another with
///   [`unknown_pdf_pages`](Self::unknown_pdf_pages)); a `text` or `content`
///   document counts its text;
/// * **thinking**: earlier assistant turns' `thinking` and
///   `redacted_thinking` blocks count nothing where the API strips them
///   ([`PreviousThinking`]; [`count_messages`](MessageCounter::count_messages)
///   knows each message's place, [`count_message`](MessageCounter::count_message)
///   alone counts them); `redacted_thinking` counts one token per 4 bytes of
///   its decoded data;
/// * **request settings** ([`for_request`](Self::for_request)): `thinking`
///   `enabled` adds 28 tokens, `adaptive` 16 (none from Opus 4.7 on).
///
/// Server tools (web search, code execution, ...), MCP servers and
/// structured outputs make Anthropic add prompts of its own that this
/// estimate does not model; a [`Calibration`] fitted on your own requests
/// corrects the scale.
///
/// ```
/// use cupel_chat::{AnthropicEstimate, Message, MessageCounter};
/// let e = AnthropicEstimate::new();
/// // "Where is my parcel?" is 5 cl100k_base tokens: ceil(5 * 1.1) = 6, plus 2 of framing.
/// assert_eq!(e.count_message(&Message::user("Where is my parcel?")), 8);
/// assert_eq!(e.count_request(None), 5); // the request's framing
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicEstimate {
    model: Option<String>,
    text_per_mille: i64,
    tool_system: i64,
    settings: i64,
    previous_thinking: PreviousThinking,
    image_max_edge: u64,
    image_max_tokens: i64,
    url_image: i64,
    unknown_pdf_pages: i64,
    scale: f64,
}

impl Default for AnthropicEstimate {
    fn default() -> Self {
        Self::new()
    }
}

/// A message's count before scaling: `cl100k_base` tokens of its text, and
/// tokens already in Anthropic's units (framing, images, documents).
#[derive(Debug, Default)]
struct Tally {
    text: i64,
    fixed: i64,
}

impl AnthropicEstimate {
    /// The estimate for a model not named: the text and tool numbers of
    /// Claude 4.5 and 4.6, earlier thinking stripped (the documented general
    /// rule), `tool_choice` `auto`, uncalibrated (scale 1). Prefer
    /// [`for_request`](Self::for_request) or [`for_model`](Self::for_model)
    /// when the model is known: the tool-use prompt and the thinking rule
    /// depend on it.
    pub fn new() -> Self {
        AnthropicEstimate {
            model: None,
            text_per_mille: TEXT_PER_MILLE,
            tool_system: TOOL_SYSTEM_45,
            settings: 0,
            previous_thinking: PreviousThinking::Stripped,
            image_max_edge: IMAGE_MAX_EDGE,
            image_max_tokens: ANTHROPIC_IMAGE_MAX_TOKENS,
            url_image: ANTHROPIC_IMAGE_MAX_TOKENS,
            unknown_pdf_pages: 1,
            scale: 1.0,
        }
    }

    /// The estimate for the model named `model` (`claude-sonnet-4-5`,
    /// `claude-3-5-haiku-20241022`, a Bedrock or Vertex id): its tokenizer,
    /// tool-use system prompt, image limits and what it does with earlier
    /// thinking. A name it cannot read gets [`new`](Self::new)'s numbers.
    ///
    /// ```
    /// use cupel_chat::{AnthropicEstimate, MessageCounter};
    /// use serde_json::json;
    /// let tools = json!([{"name": "a"}]); // {"name":"a"}: 5 cl100k_base tokens -> 6
    /// // Claude Sonnet 4: 5 framing + 6 + 15 per tool + 346 (Anthropic's table).
    /// let e = AnthropicEstimate::for_model("claude-sonnet-4-20250514");
    /// assert_eq!(e.count_request(Some(&tools)), 372);
    /// // Claude Sonnet 4.5: the measured 445.
    /// assert_eq!(AnthropicEstimate::for_model("claude-sonnet-4-5").count_request(Some(&tools)), 471);
    /// ```
    pub fn for_model(model: &str) -> Self {
        let mut e = Self::new();
        e.model = Some(model.to_string());
        let Some(v) = Version::parse(model) else {
            return e;
        };
        if v.at_least(4, 7) {
            e.text_per_mille = TEXT_PER_MILLE_NEW;
            e.image_max_edge = IMAGE_MAX_EDGE_HIGH;
            e.image_max_tokens = IMAGE_MAX_TOKENS_HIGH;
        }
        e.tool_system = v.tool_system().0;
        if v.keeps_thinking() {
            e.previous_thinking = PreviousThinking::Kept;
        }
        e
    }

    /// The estimate for a request body: [`for_model`](Self::for_model) of its
    /// `model`, the tool-use system prompt of its `tool_choice` (`any` and
    /// `tool` have their own), and the tokens its `thinking` setting adds.
    /// The messages and `tools` are counted as usual
    /// ([`count_messages`](MessageCounter::count_messages),
    /// [`count_request`](MessageCounter::count_request)).
    ///
    /// ```
    /// use cupel_chat::{AnthropicEstimate, MessageCounter};
    /// use serde_json::json;
    /// let body = json!({"model": "claude-sonnet-4-20250514",
    ///                   "thinking": {"type": "enabled", "budget_tokens": 2048},
    ///                   "tool_choice": {"type": "any"}, "messages": []});
    /// let e = AnthropicEstimate::for_request(&body);
    /// // 5 framing + 28 for thinking.
    /// assert_eq!(e.count_request(None), 33);
    /// // ... + 6 (the tool's JSON) + 15 + 313 (a forced tool choice).
    /// assert_eq!(e.count_request(Some(&json!([{"name": "a"}]))), 367);
    /// ```
    pub fn for_request(body: &Value) -> Self {
        let model = body.get("model").and_then(Value::as_str);
        let mut e = model.map_or_else(Self::new, Self::for_model);
        let version = model.and_then(Version::parse);
        let forced = matches!(
            body.pointer("/tool_choice/type").and_then(Value::as_str),
            Some("any" | "tool")
        );
        if forced {
            e.tool_system = version.map_or(TOOL_SYSTEM_45_FORCED, |v| v.tool_system().1);
        }
        let new_models = version.is_some_and(|v| v.at_least(4, 7));
        e.settings = match body.pointer("/thinking/type").and_then(Value::as_str) {
            _ if new_models => 0,
            Some("enabled") => THINKING_ENABLED,
            Some("adaptive") => THINKING_ADAPTIVE,
            _ => 0,
        };
        e
    }

    /// Sets the tokens of the tool-use system prompt (0 to leave it out).
    #[must_use]
    pub fn tool_system_tokens(mut self, tokens: i64) -> Self {
        self.tool_system = tokens.max(0);
        self
    }

    /// Sets what happens to earlier turns' thinking (see [`PreviousThinking`]).
    #[must_use]
    pub fn previous_thinking(mut self, previous: PreviousThinking) -> Self {
        self.previous_thinking = previous;
        self
    }

    /// Sets the tokens of an image whose size cannot be known (given by URL
    /// or file id; negative counts as 0). The default is the vision cap, 1,600.
    #[must_use]
    pub fn url_image_tokens(mut self, tokens: i64) -> Self {
        self.url_image = tokens.max(0);
        self
    }

    /// Sets the pages of a PDF whose pages cannot be counted (given by URL
    /// or file id, or compressed past reading; negative counts as 0). The
    /// default is 1.
    #[must_use]
    pub fn unknown_pdf_pages(mut self, pages: i64) -> Self {
        self.unknown_pdf_pages = pages.max(0);
        self
    }

    /// Applies a calibration: every count is multiplied by its scale
    /// (rounded up).
    #[must_use]
    pub fn calibrated(mut self, calibration: &Calibration) -> Self {
        self.scale = calibration.scale();
        self
    }

    /// The scale in use (1 uncalibrated).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// What earlier turns' thinking counts (see [`PreviousThinking`]).
    pub fn thinking(&self) -> PreviousThinking {
        self.previous_thinking
    }

    /// The model the estimate was made for, if one was named.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The estimate before calibration of a whole request: its messages
    /// (earlier thinking stripped as [`PreviousThinking`] says), tool
    /// definitions and request framing. Use it to make a calibration
    /// [`Observation`](crate::Observation) next to the request's reported
    /// `usage`.
    pub fn raw_request(&self, messages: &[Message], tools: Option<&Value>) -> i64 {
        self.raw_messages(messages)
            .into_iter()
            .fold(self.raw_overhead(tools), i64::saturating_add)
    }

    fn scaled(&self, raw: i64) -> i64 {
        let v = (raw as f64 * self.scale).ceil();
        if v.is_finite() && v >= 0.0 && v < i64::MAX as f64 {
            v as i64
        } else {
            i64::MAX
        }
    }

    /// `cl100k_base` tokens of `s`; see [`cl100k`].
    fn cl100k(&self, s: &str) -> i64 {
        cl100k(s)
    }

    /// `cl100k_base` tokens in this model's tokens, rounded up.
    fn text_tokens(&self, cl100k: i64) -> i64 {
        let n = i128::from(cl100k) * i128::from(self.text_per_mille);
        i64::try_from((n + 999).div_euclid(1000)).unwrap_or(i64::MAX)
    }

    /// Each message's estimate before calibration, with earlier turns'
    /// thinking counted as [`PreviousThinking`] says.
    fn raw_messages(&self, messages: &[Message]) -> Vec<i64> {
        // The last user message that is not only tool results: assistant
        // messages before it are earlier turns; after it, the current turn.
        let last_user = messages
            .iter()
            .rposition(|m| m.role == Role::User && !m.is_tool_result());
        messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let earlier = last_user.is_some_and(|u| i < u);
                let keep = self.previous_thinking == PreviousThinking::Kept || !earlier;
                self.raw_message(m, keep)
            })
            .collect()
    }

    fn raw_message(&self, m: &Message, keep_thinking: bool) -> i64 {
        let mut t = Tally::default();
        self.content(&m.content, keep_thinking, &mut t);
        // OpenAI-shaped fields, should a caller build such a message.
        for c in m.tool_calls.iter().flatten() {
            self.tool_call(c, &mut t);
        }
        if let Some(id) = &m.tool_call_id {
            t.text = t.text.saturating_add(self.cl100k(id));
            t.fixed = t.fixed.saturating_add(PER_TOOL_BLOCK);
        }
        PER_MESSAGE
            .saturating_add(self.text_tokens(t.text))
            .saturating_add(t.fixed)
    }

    /// A tool call: its id, name and arguments as text, and a block's framing.
    fn tool_call(&self, c: &crate::message::ToolCall, t: &mut Tally) {
        t.text = t
            .text
            .saturating_add(self.cl100k(&c.id))
            .saturating_add(self.cl100k(&c.name))
            .saturating_add(self.cl100k(&c.arguments_text()));
        t.fixed = t.fixed.saturating_add(PER_TOOL_BLOCK);
    }

    fn content(&self, c: &Content, keep_thinking: bool, t: &mut Tally) {
        match c {
            Content::Absent | Content::Null => {}
            Content::Text(s) => t.text = t.text.saturating_add(self.cl100k(s)),
            Content::Parts(parts) => {
                for p in parts {
                    self.part(p, keep_thinking, t);
                }
            }
        }
    }

    fn part(&self, p: &Part, keep_thinking: bool, t: &mut Tally) {
        match p {
            Part::Text { text, .. } => t.text = t.text.saturating_add(self.cl100k(text)),
            Part::Image(img) => t.fixed = t.fixed.saturating_add(self.image(img)),
            Part::ToolCall(c) => self.tool_call(c, t),
            Part::ToolResult(r) => {
                t.text = t.text.saturating_add(self.cl100k(&r.call_id));
                t.fixed = t.fixed.saturating_add(PER_TOOL_BLOCK);
                self.content(&r.content, keep_thinking, t);
            }
            Part::Thinking { thinking, .. } if keep_thinking => {
                t.text = t.text.saturating_add(self.cl100k(thinking));
            }
            Part::RedactedThinking { data, .. } if keep_thinking => {
                t.fixed = t.fixed.saturating_add(redacted_thinking_tokens(data));
            }
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            Part::Other(v) => self.other(v, t),
        }
    }

    /// Blocks this crate keeps verbatim: documents, images from a file id,
    /// and anything else as JSON text.
    fn other(&self, v: &Value, t: &mut Tally) {
        match v.get("type").and_then(Value::as_str) {
            Some("document") => self.document(v, t),
            Some("image") => t.fixed = t.fixed.saturating_add(self.image_value(v)),
            _ => t.text = t.text.saturating_add(self.cl100k(&v.to_string())),
        }
    }

    fn document(&self, v: &Value, t: &mut Tally) {
        t.fixed = t.fixed.saturating_add(PER_DOCUMENT);
        for key in ["title", "context"] {
            if let Some(s) = v.get(key).and_then(Value::as_str) {
                t.text = t.text.saturating_add(self.cl100k(s));
            }
        }
        let source = v.get("source");
        let str_of = |k: &str| source.and_then(|s| s.get(k)).and_then(Value::as_str);
        let pages = match str_of("type") {
            Some("text") => {
                t.text = t
                    .text
                    .saturating_add(self.cl100k(str_of("data").unwrap_or("")));
                return;
            }
            Some("content") => {
                match source.and_then(|s| s.get("content")) {
                    Some(Value::String(s)) => t.text = t.text.saturating_add(self.cl100k(s)),
                    Some(Value::Array(blocks)) => {
                        for b in blocks {
                            match b.get("type").and_then(Value::as_str) {
                                Some("text") => {
                                    let s = b.get("text").and_then(Value::as_str).unwrap_or("");
                                    t.text = t.text.saturating_add(self.cl100k(s));
                                }
                                Some("image") => {
                                    t.fixed = t.fixed.saturating_add(self.image_value(b));
                                }
                                _ => t.text = t.text.saturating_add(self.cl100k(&b.to_string())),
                            }
                        }
                    }
                    _ => {}
                }
                return;
            }
            Some("base64") => {
                let bytes = base64_prefix(str_of("data").unwrap_or(""), usize::MAX);
                pdf_pages(&bytes).map(|p| i64::try_from(p).unwrap_or(i64::MAX))
            }
            // `url`, `file` and sources this version does not know.
            _ => None,
        };
        let pages = pages.unwrap_or(self.unknown_pdf_pages);
        t.fixed = t
            .fixed
            .saturating_add(pages.saturating_mul(ANTHROPIC_PDF_PAGE_TOKENS));
    }

    fn image_tokens(&self, size: Option<(u32, u32)>) -> i64 {
        size.map_or(self.image_max_tokens, |(w, h)| {
            image_tokens_within(w, h, self.image_max_edge, self.image_max_tokens)
        })
    }

    fn image(&self, img: &Image) -> i64 {
        let data = match &img.source {
            ImageSource::Base64 { data, .. } => data.as_str(),
            ImageSource::Url(url) => {
                match url
                    .strip_prefix("data:")
                    .and_then(|u| u.split_once(";base64,"))
                {
                    Some((_, data)) => data,
                    None => return self.url_image,
                }
            }
        };
        self.image_tokens(image_size(&base64_prefix(data, IMAGE_HEADER_BYTES)))
    }

    /// An image block kept as JSON (a file id source, or inside a document).
    fn image_value(&self, v: &Value) -> i64 {
        let source = v.get("source");
        match (
            source.and_then(|s| s.get("type")).and_then(Value::as_str),
            source.and_then(|s| s.get("data")).and_then(Value::as_str),
        ) {
            (Some("base64"), Some(data)) => {
                self.image_tokens(image_size(&base64_prefix(data, IMAGE_HEADER_BYTES)))
            }
            _ => self.url_image,
        }
    }

    /// Request framing, settings, and the tool definitions with the tool-use
    /// system prompt.
    fn raw_overhead(&self, tools: Option<&Value>) -> i64 {
        let base = PER_REQUEST.saturating_add(self.settings);
        let Some(tools) = tools.and_then(Value::as_array).filter(|t| !t.is_empty()) else {
            return base;
        };
        let json: i64 = tools
            .iter()
            .map(|tool| match tool {
                Value::Object(o) => {
                    let mut o = o.clone();
                    o.remove("cache_control");
                    self.cl100k(&Value::Object(o).to_string())
                }
                other => self.cl100k(&other.to_string()),
            })
            .fold(0, i64::saturating_add);
        let per_tool = i64::try_from(tools.len())
            .unwrap_or(i64::MAX)
            .saturating_mul(PER_TOOL);
        base.saturating_add(self.text_tokens(json))
            .saturating_add(per_tool)
            .saturating_add(self.tool_system)
    }
}

/// Texts at least this long have their count remembered ([`cl100k`]).
const MEMO_MIN_BYTES: usize = 8;
/// The most counts remembered; the memory is emptied when it is full.
const MEMO_MAX_ENTRIES: usize = 1 << 16;

/// `cl100k_base` tokens of `s` (one per 4 characters should the encoding
/// ever fail to load; it is embedded, so it does not).
///
/// A trim counts every message of every request, and a session or a
/// simulation makes a request per turn from the same growing transcript, so
/// the counts of long texts are remembered for the process, by a 64-bit hash
/// of the text and its length: hashing is far cheaper than encoding.
fn cl100k(s: &str) -> i64 {
    use std::collections::HashMap;
    use std::hash::BuildHasher;
    use std::sync::{Mutex, OnceLock};
    static MEMO: OnceLock<Mutex<HashMap<(u64, usize), i64>>> = OnceLock::new();
    let count = |s: &str| match TiktokenCounter::shared("cl100k_base") {
        Ok(bpe) => bpe.count_tokens(s),
        Err(_) => i64::try_from(s.chars().count().div_ceil(4)).unwrap_or(i64::MAX),
    };
    if s.len() < MEMO_MIN_BYTES {
        return count(s);
    }
    // foldhash's quality hasher, fixed seed: several times faster than
    // SipHash on long texts, and a session re-hashes its window each turn.
    let key = (
        foldhash::quality::FixedState::with_seed(0x636c_3130_306b).hash_one(s),
        s.len(),
    );
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    // A poisoned memory is only a cache: count without it.
    if let Some(n) = memo.lock().ok().and_then(|m| m.get(&key).copied()) {
        return n;
    }
    let n = count(s);
    if let Ok(mut m) = memo.lock() {
        if m.len() >= MEMO_MAX_ENTRIES {
            m.clear();
        }
        m.insert(key, n);
    }
    n
}

/// The tokens of `redacted_thinking` data: one per 4 bytes of decoded data,
/// rounded up.
fn redacted_thinking_tokens(data: &str) -> i64 {
    i64::try_from(base64_decoded_len(data).div_ceil(REDACTED_BYTES_PER_TOKEN)).unwrap_or(i64::MAX)
}

/// `width * height / 750` (rounded up) after scaling the long edge down to
/// `max_edge`, at most `max_tokens`.
fn image_tokens_within(width: u32, height: u32, max_edge: u64, max_tokens: i64) -> i64 {
    let (mut w, mut h) = (u64::from(width), u64::from(height));
    let longest = w.max(h);
    if longest > max_edge {
        w = w * max_edge / longest;
        h = h * max_edge / longest;
    }
    i64::try_from((w * h).div_ceil(750))
        .unwrap_or(i64::MAX)
        .min(max_tokens)
}

/// Anthropic's documented image cost: `width * height / 750` (rounded up)
/// after scaling the long edge down to 1,568 px, at most about 1,600 tokens
/// (larger images are scaled down to that).
///
/// ```
/// use cupel_chat::anthropic_image_tokens;
/// assert_eq!(anthropic_image_tokens(1000, 1000), 1334); // 1,000,000 / 750, rounded up
/// assert_eq!(anthropic_image_tokens(200, 200), 54); // 40,000 / 750 = 53.3
/// // 4000 x 3000: the long edge to 1,568 -> 1568 x 1176, 2,456 tokens: the cap.
/// assert_eq!(anthropic_image_tokens(4000, 3000), 1600);
/// ```
pub fn anthropic_image_tokens(width: u32, height: u32) -> i64 {
    image_tokens_within(width, height, IMAGE_MAX_EDGE, ANTHROPIC_IMAGE_MAX_TOKENS)
}

impl MessageCounter for AnthropicEstimate {
    /// One message on its own, its thinking counted (its place in the
    /// request is unknown here; [`count_messages`](Self::count_messages)
    /// knows it).
    fn count_message(&self, m: &Message) -> i64 {
        self.scaled(self.raw_message(m, true))
    }

    fn count_messages(&self, messages: &[Message]) -> Vec<i64> {
        self.raw_messages(messages)
            .into_iter()
            .map(|raw| self.scaled(raw))
            .collect()
    }

    fn count_request(&self, tools: Option<&Value>) -> i64 {
        self.scaled(self.raw_overhead(tools))
    }

    fn describe(&self) -> String {
        let model = self
            .model
            .as_deref()
            .map_or_else(String::new, |m| format!(" for {m}"));
        if self.scale == 1.0 {
            format!("anthropic estimate{model} (uncalibrated)")
        } else {
            format!("anthropic estimate{model}, calibrated x{:.3}", self.scale)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_read() {
        let v = |s: &str| Version::parse(s).map(|v| (v.family, v.major, v.minor));
        assert_eq!(
            v("claude-sonnet-4-5-20250929"),
            Some((Family::Sonnet, 4, 5))
        );
        assert_eq!(v("claude-sonnet-4-20250514"), Some((Family::Sonnet, 4, 0)));
        assert_eq!(v("claude-3-5-haiku-latest"), Some((Family::Haiku, 3, 5)));
        assert_eq!(v("claude-opus-4-1@20250805"), Some((Family::Opus, 4, 1)));
        assert_eq!(
            v("anthropic.claude-3-7-sonnet-20250219-v1:0"),
            Some((Family::Sonnet, 3, 7))
        );
        assert_eq!(v("claude-2.1"), Some((Family::Other, 2, 1)));
        assert_eq!(v("claude-fable-5"), Some((Family::Other, 5, 0)));
        assert_eq!(v("gpt-4o"), None);
    }

    #[test]
    fn models_keep_or_strip_thinking_as_documented() {
        let keeps = |s: &str| AnthropicEstimate::for_model(s).thinking() == PreviousThinking::Kept;
        assert!(!keeps("claude-3-7-sonnet-20250219"));
        assert!(!keeps("claude-sonnet-4-5"));
        assert!(!keeps("claude-haiku-4-5-20251001"));
        assert!(!keeps("claude-opus-4-1"));
        assert!(keeps("claude-opus-4-5-20251101"));
        assert!(keeps("claude-sonnet-4-6"));
        assert!(keeps("claude-opus-5"));
        assert!(!keeps("not a claude model"));
    }

    #[test]
    fn images_are_capped_per_model() {
        // 2000 x 1500: 1568 x 1176 = 1,843,968 px -> 2,459 tokens, capped at 1,600.
        assert_eq!(image_tokens_within(2000, 1500, 1568, 1600), 1600);
        // Opus 4.7: long edge 2,576 is not reached; 3,000,000 / 750 = 4,000 < 4,784.
        assert_eq!(image_tokens_within(2000, 1500, 2576, 4784), 4000);
        // 400 x 300 = 120,000 / 750 = 160 exactly.
        assert_eq!(image_tokens_within(400, 300, 1568, 1600), 160);
    }

    #[test]
    fn redacted_thinking_counts_its_decoded_bytes() {
        // 16 base64 characters = 12 bytes -> 3 tokens; 20 = 15 bytes -> 4.
        assert_eq!(redacted_thinking_tokens("AAAAAAAAAAAAAAAA"), 3);
        assert_eq!(redacted_thinking_tokens("AAAAAAAAAAAAAAAAAAAA"), 4);
    }
}
