//! [`HuggingFaceCounter`]: any tokenizer saved as a `tokenizer.json`.

use std::path::Path;

use cupel_core::TokenCounter;
use tokenizers::Tokenizer;

use crate::TokenizerError;

/// Counts tokens with a Hugging Face tokenizer read from a `tokenizer.json`
/// (the file open models ship: Llama, Mistral, Qwen, Gemma, ...). You supply
/// the file; nothing is downloaded.
///
/// Texts are encoded without the tokenizer's special tokens (no BOS/EOS):
/// the count of the text itself, as the other counters give it. A text the
/// tokenizer cannot encode counts `i64::MAX`, so it never fits a budget
/// silently.
///
/// ```
/// use cupel_core::TokenCounter;
/// use cupel_tokens::HuggingFaceCounter;
///
/// // A word-level tokenizer with a whitespace pre-tokenizer: one token per
/// // word, unknown words included (they become `[UNK]`).
/// let json = r#"{
///   "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
///   "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
///   "post_processor": null, "decoder": null,
///   "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2},
///             "unk_token": "[UNK]"}
/// }"#;
/// let counter = HuggingFaceCounter::from_bytes(json.as_bytes())?;
/// assert_eq!(counter.count_tokens("hello world again"), 3);
/// # Ok::<(), cupel_tokens::TokenizerError>(())
/// ```
pub struct HuggingFaceCounter {
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for HuggingFaceCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HuggingFaceCounter")
            .field("vocab_size", &self.tokenizer.get_vocab_size(true))
            .finish_non_exhaustive()
    }
}

impl HuggingFaceCounter {
    /// Reads a `tokenizer.json` file.
    ///
    /// # Errors
    /// [`TokenizerError::TokenizerFile`] when the file cannot be read or does
    /// not hold a tokenizer.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| TokenizerError::TokenizerFile {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&bytes, &path.display().to_string())
    }

    /// Reads a `tokenizer.json` document held in memory.
    ///
    /// # Errors
    /// [`TokenizerError::TokenizerFile`] when the bytes are not a tokenizer.
    pub fn from_bytes(json: &[u8]) -> Result<Self, TokenizerError> {
        Self::parse(json, "bytes")
    }

    fn parse(json: &[u8], source_name: &str) -> Result<Self, TokenizerError> {
        let tokenizer = Tokenizer::from_bytes(json).map_err(|e| TokenizerError::TokenizerFile {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        Ok(Self { tokenizer })
    }
}

impl TokenCounter for HuggingFaceCounter {
    fn count_tokens(&self, text: &str) -> i64 {
        match self.tokenizer.encode(text, false) {
            Ok(encoding) => i64::try_from(encoding.len()).unwrap_or(i64::MAX),
            Err(_) => i64::MAX,
        }
    }
}
