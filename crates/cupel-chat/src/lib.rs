//! Trim OpenAI and Anthropic chat transcripts to a token budget: tool calls
//! stay with their results, the window is one the provider accepts, tokens
//! are counted as the provider counts them, and every message's fate is
//! explained.
//!
//! * [`Transcript`] reads and writes four wire formats ([`Format`]): OpenAI
//!   Chat Completions, Anthropic Messages, OpenAI Responses (`input`
//!   items) and Gemini (`contents`), a bare array or a whole request body. Every field it does not model is kept, so a
//!   document trimmed of nothing is written back as the same JSON value.
//! * [`Message`] (with [`Role`], [`Content`], [`Part`], [`ToolCall`],
//!   [`ToolResult`], [`Image`]) is the model both formats map to.
//! * [`trim`] / [`trim_transcript`] with [`Trim`] options keep the newest
//!   units that fit (a [`Granularity`]: messages with their tool groups,
//!   exchanges or turns), contiguously, with the system prompt pinned, and
//!   return a [`Trimmed`]: the kept messages, their input positions, token
//!   totals, one [`MessageRow`] per input message and a
//!   [`SelectionReport`](cupel_core::SelectionReport).
//! * Recall: [`Trim::recall`] with [`RecallOptions`] keeps the newest turns
//!   up to a share of the budget and brings back the older turns most
//!   relevant to the query (BM25) as one context message after the pinned
//!   prompts ([`Recall`]; each message's [`Relevance`] in its row).
//! * Counting: [`OpenAiCounter`] (tiktoken `o200k_base` / `cl100k_base` with
//!   OpenAI's documented message overhead, tool definitions and image tiles),
//!   [`AnthropicEstimate`] (Anthropic's documented image, PDF and thinking
//!   rules, measured framing) with a [`Calibration`] fitted to reported
//!   `usage.input_tokens`; [`ResponsesCounter`] and [`GeminiEstimate`]
//!   for the other two formats; or any [`MessageCounter`].
//! * Prompt caching: a [`CacheSession`] keeps the previous turn's window
//!   byte-identical and appends to it, cutting once and deep to a
//!   [`LowWater`] mark when the budget is reached; [`CacheProfile`] holds a
//!   provider's cache rules and prices, [`PromptCache`] bills requests as
//!   read / written / uncached, [`plan_breakpoints`] and
//!   [`apply_breakpoints`] place Anthropic `cache_control` markers (never
//!   more than [`MAX_CACHE_MARKERS`]; [`count_cache_markers`] counts them),
//!   and [`simulate`] replays a transcript under three strategies.
//!
//! ```
//! use cupel_chat::{Transcript, Trim, trim_transcript};
//!
//! let doc = Transcript::parse(r#"[
//!   {"role": "system", "content": "You are a support agent."},
//!   {"role": "user", "content": "My parcel is late."},
//!   {"role": "assistant", "content": null, "tool_calls": [
//!     {"id": "call_1", "type": "function",
//!      "function": {"name": "track", "arguments": "{\"order\": 42}"}}]},
//!   {"role": "tool", "tool_call_id": "call_1", "content": "In transit, due Friday."},
//!   {"role": "assistant", "content": "It is in transit and due on Friday."},
//!   {"role": "user", "content": "Thanks! Can I change the address?"}
//! ]"#)?;
//! let (window, out) = trim_transcript(&doc, &Trim::openai(60))?;
//! // The tool call and its result moved together; the window starts with a user message.
//! assert_eq!(out.positions, vec![0, 5]);
//! for row in out.dropped() {
//!     println!("{row}"); // "#3 tool result for call_1 dropped with its call: ..."
//! }
//! println!("{}", window.to_json_pretty());
//! # Ok::<(), cupel_chat::ChatError>(())
//! ```
//!
//! Depends on `cupel-core`, `cupel-tokens` (for its tiktoken counter) and
//! `cupel-scorers` (BM25, for recall).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod aging;
mod cache;
mod compact;
#[cfg(feature = "async-openai")]
mod compat;
mod count;
mod error;
mod formats;
pub mod inject;
mod message;
mod raw;
#[cfg(feature = "rig")]
mod rig_compat;
mod transcript;
mod trim;
mod wire;

pub use aging::AgeToolResults;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use cache::RedisSessionStore;
#[allow(deprecated)]
pub use cache::{
    AttributeValue, Block, CacheError, CacheMode, CacheProfile, CacheRow, CacheSession,
    CacheStatus, CacheTurn, CacheUsage, Cut, CutFront, Expiry, LowWater, MAX_CACHE_MARKERS,
    PrefixBreak, PromptCache, SimStrategy, SimTurn, Simulation, StrategyRun, apply_breakpoints,
    cache_marker_paths, count_cache_markers, plan_breakpoints, request_ends, simulate,
    simulate_with,
};
#[allow(deprecated)]
pub use cache::{
    FileSessionStore, MemorySessionStore, Planned, Replan, SESSION_STATE_FORMAT, SessionError,
    SessionLedger, SessionPlan, SessionState, SessionStore, SessionStoreError, StoredTurn,
    serve_loaded, serve_turn, serve_turn_retrying,
};
pub use compact::{
    AsyncSummarizer, CommandSummarizer, Compaction, DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SUMMARY_TOKENS, DigestSummarizer, Evicted, Oversize,
    RunningSummary, SUMMARY_HEADER, SummarizeError, Summarizer, SummaryFailure, SummaryFuture,
    SummaryInput, SummaryReport, SummaryStatus, trim_summarized_async,
};
#[cfg(feature = "async-openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
pub use compat::{
    from_async_openai, from_async_openai_responses, to_async_openai, to_async_openai_responses,
};
pub use count::{
    ANTHROPIC_IMAGE_MAX_TOKENS, ANTHROPIC_PDF_PAGE_TOKENS, AnthropicEstimate, Calibration,
    GEMINI_CHARS_PER_TOKEN, GEMINI_IMAGE_TOKENS, GeminiEstimate, MessageCounter,
    OPENAI_IMAGE_MAX_TOKENS, OPENAI_REPLY_PRIMING, OPENAI_TOKENS_PER_MESSAGE,
    OPENAI_TOKENS_PER_NAME, Observation, OpenAiCounter, PreviousThinking, ResponsesCounter,
    TextCounter, anthropic_image_tokens, openai_image_tokens,
};
pub use error::ChatError;
pub use message::{Content, Extra, Image, ImageSource, Message, Part, Role, ToolCall, ToolResult};
#[cfg(feature = "rig")]
#[cfg_attr(docsrs, doc(cfg(feature = "rig")))]
pub use rig_compat::{from_rig, to_rig};
pub use transcript::{Transcript, compact_json};
#[allow(deprecated)]
pub use trim::TokenTotals;
pub use trim::{
    Decision, Granularity, InputNote, MessageRow, Strategy, Trim, TrimReport, TrimTokens, Trimmed,
    TurnHalf, document_options, group_digits, trim, trim_or_rows, trim_transcript,
};
pub use trim::{Recall, RecallOptions, RecallSkip, Relevance};
pub use wire::{Format, message_from_value, message_to_value};
