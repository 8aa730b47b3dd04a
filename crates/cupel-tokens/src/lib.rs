//! Token counters for Cupel: implementations of
//! [`TokenCounter`](cupel_core::TokenCounter) for the components that count
//! text themselves — the context gate's compaction, the chat crate's message
//! counting and the CLI's `--encoding`.
//!
//! * [`TiktokenCounter`] (feature `tiktoken`, on by default): OpenAI's BPE
//!   encodings (`o200k_base`, `cl100k_base`, ...) or an OpenAI model name,
//!   exact, with long texts counted in bounded pieces.
//! * [`HuggingFaceCounter`] (feature `huggingface`): any tokenizer saved as a
//!   `tokenizer.json` (Llama, Mistral, Qwen, ...), read from a file or bytes
//!   you supply; nothing is downloaded.
//! * [`CharEstimate`]: a documented estimate, one token per N characters,
//!   for providers that publish no tokenizer; pair it with a calibration
//!   against the counts the provider reports (as `cupel-chat` does).
//!
//! ```
//! use cupel_core::TokenCounter;
//! use cupel_tokens::CharEstimate;
//!
//! // ceil(35 characters / 3.5) = 10.
//! let estimate = CharEstimate::new(3.5)?;
//! assert_eq!(estimate.count_tokens("Where is my parcel? It is so late."), 10);
//! # Ok::<(), cupel_tokens::TokenizerError>(())
//! ```
//!
//! Depends only on `cupel-core` (and the tokenizer crates its features name).
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(all(doctest, feature = "tiktoken"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "tiktoken")]
mod bpe;
mod error;
mod estimate;
#[cfg(feature = "huggingface")]
mod huggingface;
#[cfg(feature = "tiktoken")]
mod rank_layout;
#[cfg(feature = "tiktoken")]
mod tiktoken;

pub use error::TokenizerError;
pub use estimate::CharEstimate;
#[cfg(feature = "huggingface")]
#[cfg_attr(docsrs, doc(cfg(feature = "huggingface")))]
pub use huggingface::HuggingFaceCounter;
#[cfg(feature = "tiktoken")]
#[cfg_attr(docsrs, doc(cfg(feature = "tiktoken")))]
pub use tiktoken::{TIKTOKEN_ENCODINGS, TIKTOKEN_PIECE_BYTES, TiktokenCounter};
