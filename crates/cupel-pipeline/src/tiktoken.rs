//! [`TiktokenCounter`]: a [`TokenCounter`] backed by a real BPE tokenizer
//! (feature `tiktoken`).
//!
//! There is deliberately no fallback: a character-count heuristic would give
//! wrong budgets without a word.
//!
//! It lives here rather than in `cupel-core` because the core crate stays
//! small and free of heavy dependencies (tiktoken-rs embeds megabytes of
//! ranks), and the context gate — the library's main user of a counter — is
//! in this crate; the `cupel` facade re-exports it behind its own `tiktoken`
//! feature, and the CLI uses it from here.

use cupel_core::{CupelError, TokenCounter};

/// The encodings [`TiktokenCounter::new`] accepts by name, in the order error
/// messages list them. `gpt2` is accepted as another name of `r50k_base`, and
/// OpenAI model names (`gpt-4o`, `gpt-4`, ...) resolve to their encoding.
pub const TIKTOKEN_ENCODINGS: &[&str] = &[
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "p50k_base",
    "p50k_edit",
    "r50k_base",
];

/// Why a [`TiktokenCounter`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// The name is neither a known encoding nor a known model.
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
}

impl From<TokenizerError> for CupelError {
    fn from(e: TokenizerError) -> Self {
        CupelError::InvalidArgument(e.to_string())
    }
}

/// Counts tokens with one of tiktoken's BPE encodings (the ranks are embedded
/// in the binary; no network access).
///
/// Text is encoded as ordinary text: special-token spellings such as
/// `<|endoftext|>` inside a text count as the ordinary tokens they are made
/// of, which is how a chat API sees user-supplied text.
///
/// ```
/// use cupel_core::TokenCounter;
/// use cupel_pipeline::TiktokenCounter;
/// let counter = TiktokenCounter::new("cl100k_base")?;
/// // cl100k_base: "hello" is one token, " world" another.
/// assert_eq!(counter.count_tokens("hello world"), 2);
/// assert_eq!(TiktokenCounter::new("gpt-4o")?.encoding(), "o200k_base");
/// # Ok::<(), cupel_pipeline::TokenizerError>(())
/// ```
pub struct TiktokenCounter {
    encoding: &'static str,
    bpe: tiktoken_rs::CoreBPE,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl TiktokenCounter {
    /// Loads the encoding `name` (or the encoding of the OpenAI model `name`).
    ///
    /// Names are trimmed and compared ignoring ASCII case.
    ///
    /// # Errors
    /// [`TokenizerError::UnknownEncoding`] for a name that is neither (see
    /// [`TIKTOKEN_ENCODINGS`]); [`TokenizerError::Load`] if the ranks fail to load.
    pub fn new(name: &str) -> Result<Self, TokenizerError> {
        use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};
        let wanted = name.trim().to_ascii_lowercase();
        let tokenizer = match wanted.as_str() {
            "cl100k_base" => Some(Tokenizer::Cl100kBase),
            "o200k_base" => Some(Tokenizer::O200kBase),
            "o200k_harmony" => Some(Tokenizer::O200kHarmony),
            "p50k_base" => Some(Tokenizer::P50kBase),
            "p50k_edit" => Some(Tokenizer::P50kEdit),
            "r50k_base" | "gpt2" => Some(Tokenizer::R50kBase),
            model => get_tokenizer(model),
        };
        let Some(tokenizer) = tokenizer else {
            return Err(TokenizerError::UnknownEncoding {
                name: name.to_string(),
            });
        };
        let (encoding, bpe) = match tokenizer {
            Tokenizer::Cl100kBase => ("cl100k_base", tiktoken_rs::cl100k_base()),
            Tokenizer::O200kBase => ("o200k_base", tiktoken_rs::o200k_base()),
            Tokenizer::O200kHarmony => ("o200k_harmony", tiktoken_rs::o200k_harmony()),
            Tokenizer::P50kBase => ("p50k_base", tiktoken_rs::p50k_base()),
            Tokenizer::P50kEdit => ("p50k_edit", tiktoken_rs::p50k_edit()),
            Tokenizer::R50kBase | Tokenizer::Gpt2 => ("r50k_base", tiktoken_rs::r50k_base()),
        };
        let bpe = bpe.map_err(|e| TokenizerError::Load {
            encoding,
            message: e.to_string(),
        })?;
        Ok(Self { encoding, bpe })
    }

    /// The canonical name of the encoding in use (`cl100k_base`, ...).
    pub fn encoding(&self) -> &'static str {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn count_tokens(&self, text: &str) -> i64 {
        i64::try_from(self.bpe.count_ordinary(text)).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_the_real_encoding() {
        let c = TiktokenCounter::new("cl100k_base").unwrap();
        assert_eq!(c.encoding(), "cl100k_base");
        assert_eq!(c.count_tokens("hello world"), 2);
        assert_eq!(c.count_tokens(""), 0);
        // A special-token spelling is ordinary text (several tokens), not 1.
        assert!(c.count_tokens("<|endoftext|>") > 1);
    }

    #[test]
    fn model_names_resolve_to_their_encoding() {
        assert_eq!(
            TiktokenCounter::new("gpt-4o").unwrap().encoding(),
            "o200k_base"
        );
        assert_eq!(
            TiktokenCounter::new(" GPT2 ").unwrap().encoding(),
            "r50k_base"
        );
    }

    #[test]
    fn unknown_encoding_is_a_typed_error() {
        let e = TiktokenCounter::new("bogus_base").unwrap_err();
        assert_eq!(
            e,
            TokenizerError::UnknownEncoding {
                name: "bogus_base".into()
            }
        );
        let c: CupelError = e.into();
        assert!(c.to_string().contains("cl100k_base"));
    }
}
