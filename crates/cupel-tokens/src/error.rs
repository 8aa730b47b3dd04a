//! [`TokenizerError`]: why a counter could not be built.

use cupel_core::CupelError;

/// Why a token counter could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// The name is neither a known tiktoken encoding nor a known model.
    #[error(
        "unknown encoding `{name}` (known: cl100k_base, o200k_base, o200k_harmony, p50k_base, p50k_edit, r50k_base, or an OpenAI model name)"
    )]
    UnknownEncoding {
        /// The name as given.
        name: String,
    },
    /// The encoding's ranks could not be loaded.
    #[error("could not load the {encoding} tokenizer: {message}")]
    Load {
        /// The canonical encoding name.
        encoding: &'static str,
        /// The loader's message.
        message: String,
    },
    /// A `tokenizer.json` could not be read or is not a tokenizer.
    #[error("could not load the tokenizer from {source_name}: {message}")]
    TokenizerFile {
        /// The file's path, or `bytes` for an in-memory document.
        source_name: String,
        /// What went wrong, in the reader's words.
        message: String,
    },
    /// A character estimate was given a ratio that is not a finite number
    /// above zero.
    #[error("characters per token must be a finite number above 0 (got {chars_per_token})")]
    InvalidRatio {
        /// The rejected ratio.
        chars_per_token: f64,
    },
}

impl From<TokenizerError> for CupelError {
    fn from(e: TokenizerError) -> Self {
        CupelError::InvalidArgument(e.to_string())
    }
}
