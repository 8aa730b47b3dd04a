//! `--count-tokens`: a [`TokenCounter`] backed by a real BPE tokenizer.
//!
//! Only built with the `tiktoken` feature (on by default). There is no
//! fallback: a character-count heuristic would silently give wrong budgets.

use cupel_core::TokenCounter;

use crate::error::CliError;

/// The encodings `--count-tokens` accepts, in the order the hint lists them.
#[cfg(feature = "tiktoken")]
pub(crate) const ENCODINGS: &[&str] = &[
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "p50k_base",
    "p50k_edit",
    "r50k_base",
];

/// Builds the counter for `--count-tokens <name>`.
///
/// `name` is an encoding (`cl100k_base`, ...; `gpt2` is `r50k_base`) or an
/// OpenAI model name (`gpt-4o`, `gpt-4`, ...), resolved to its encoding.
#[cfg(feature = "tiktoken")]
pub(crate) fn counter(name: &str) -> Result<TiktokenCounter, CliError> {
    TiktokenCounter::new(name)
}

/// Without the `tiktoken` feature there is no tokenizer to count with.
#[cfg(not(feature = "tiktoken"))]
pub(crate) fn counter(_name: &str) -> Result<NoCounter, CliError> {
    Err(
        CliError::input("--count-tokens needs a tokenizer, and this cupel was built without one")
            .hint("rebuild with the `tiktoken` feature (on by default), or give every item a `tokens` count"),
    )
}

/// Placeholder type for builds without the `tiktoken` feature (never constructed).
#[cfg(not(feature = "tiktoken"))]
#[derive(Debug)]
pub(crate) enum NoCounter {}

#[cfg(not(feature = "tiktoken"))]
impl NoCounter {
    /// Never called: the type has no values.
    pub(crate) fn encoding(&self) -> &'static str {
        match *self {}
    }
}

#[cfg(not(feature = "tiktoken"))]
impl TokenCounter for NoCounter {
    fn count_tokens(&self, _text: &str) -> i64 {
        match *self {}
    }
}

/// Counts tokens with one of tiktoken's BPE encodings.
///
/// Text is encoded as ordinary text: special-token spellings such as
/// `<|endoftext|>` inside item content count as the ordinary tokens they are
/// made of, which is how a chat API sees user-supplied text.
#[cfg(feature = "tiktoken")]
pub(crate) struct TiktokenCounter {
    encoding: &'static str,
    bpe: tiktoken_rs::CoreBPE,
}

#[cfg(feature = "tiktoken")]
impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "tiktoken")]
impl TiktokenCounter {
    /// Loads the encoding `name` (or the encoding of model `name`).
    pub(crate) fn new(name: &str) -> Result<Self, CliError> {
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
            return Err(
                CliError::input(format!("unknown encoding `{name}`")).hint(format!(
                    "use one of: {} (or an OpenAI model name such as gpt-4o)",
                    ENCODINGS.join(", ")
                )),
            );
        };
        let (encoding, bpe) = match tokenizer {
            Tokenizer::Cl100kBase => ("cl100k_base", tiktoken_rs::cl100k_base()),
            Tokenizer::O200kBase => ("o200k_base", tiktoken_rs::o200k_base()),
            Tokenizer::O200kHarmony => ("o200k_harmony", tiktoken_rs::o200k_harmony()),
            Tokenizer::P50kBase => ("p50k_base", tiktoken_rs::p50k_base()),
            Tokenizer::P50kEdit => ("p50k_edit", tiktoken_rs::p50k_edit()),
            Tokenizer::R50kBase | Tokenizer::Gpt2 => ("r50k_base", tiktoken_rs::r50k_base()),
        };
        let bpe = bpe.map_err(|e| {
            CliError::input(format!("could not load the {encoding} tokenizer: {e}"))
        })?;
        Ok(Self { encoding, bpe })
    }

    /// The canonical name of the encoding in use (`cl100k_base`, ...).
    pub(crate) fn encoding(&self) -> &'static str {
        self.encoding
    }
}

#[cfg(feature = "tiktoken")]
impl TokenCounter for TiktokenCounter {
    fn count_tokens(&self, text: &str) -> i64 {
        i64::try_from(self.bpe.count_ordinary(text)).unwrap_or(i64::MAX)
    }
}

#[cfg(all(test, feature = "tiktoken"))]
mod tests {
    use super::*;

    #[test]
    fn counts_with_the_real_encoding() {
        let c = TiktokenCounter::new("cl100k_base").unwrap();
        assert_eq!(c.encoding(), "cl100k_base");
        // cl100k_base: "hello" is one token, " world" another.
        assert_eq!(c.count_tokens("hello world"), 2);
        assert_eq!(c.count_tokens(""), 0);
        // A special-token spelling is counted as ordinary text (several tokens), not as 1.
        assert!(c.count_tokens("<|endoftext|>") > 1);
    }

    #[test]
    fn model_names_resolve_to_their_encoding() {
        assert_eq!(
            TiktokenCounter::new("gpt-4o").unwrap().encoding(),
            "o200k_base"
        );
        assert_eq!(
            TiktokenCounter::new("GPT2").unwrap().encoding(),
            "r50k_base"
        );
    }

    #[test]
    fn unknown_encoding_lists_the_known_ones() {
        let e = TiktokenCounter::new("bogus_base").unwrap_err();
        assert_eq!(e.message, "unknown encoding `bogus_base`");
        assert!(e.hint.unwrap_or_default().contains("cl100k_base"));
    }
}
