//! `--encoding` (the one flag name in every command; `--count-tokens` is its
//! hidden alias): the tokenizer-backed counter from
//! `cupel-tokens` (feature `tiktoken`), with the CLI's messages.
//!
//! Only built with the `tiktoken` feature (on by default). There is no
//! fallback: a character-count heuristic would silently give wrong budgets.

#[cfg(feature = "tiktoken")]
pub(crate) use cupel_tokens::TiktokenCounter;

use crate::error::CliError;

/// Builds the counter for an encoding or model name.
///
/// `name` is an encoding (`cl100k_base`, ...; `gpt2` is `r50k_base`) or an
/// OpenAI model name (`gpt-4o`, `gpt-4`, ...), resolved to its encoding.
#[cfg(feature = "tiktoken")]
pub(crate) fn counter(name: &str) -> Result<TiktokenCounter, CliError> {
    use cupel_tokens::{TIKTOKEN_ENCODINGS, TokenizerError};
    TiktokenCounter::new(name).map_err(|e| match e {
        TokenizerError::UnknownEncoding { name } => {
            CliError::input(format!("unknown encoding `{name}`")).hint(format!(
                "use one of: {} (or an OpenAI model name such as gpt-4o)",
                TIKTOKEN_ENCODINGS.join(", ")
            ))
        }
        other => CliError::input(other.to_string()),
    })
}

/// Without the `tiktoken` feature there is no tokenizer to count with.
#[cfg(not(feature = "tiktoken"))]
pub(crate) fn counter(_name: &str) -> Result<NoCounter, CliError> {
    Err(
        CliError::input("counting tokens needs a tokenizer, and this cupel was built without one")
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
impl cupel_core::TokenCounter for NoCounter {
    fn count_tokens(&self, _text: &str) -> i64 {
        match *self {}
    }
}

#[cfg(all(test, feature = "tiktoken"))]
mod tests {
    use super::*;
    use cupel_core::TokenCounter;

    #[test]
    fn counts_with_the_real_encoding() {
        let c = counter("cl100k_base").unwrap();
        assert_eq!(c.encoding(), "cl100k_base");
        // cl100k_base: "hello" is one token, " world" another.
        assert_eq!(c.count_tokens("hello world"), 2);
    }

    #[test]
    fn unknown_encoding_lists_the_known_ones() {
        let e = counter("bogus_base").unwrap_err();
        assert_eq!(e.message, "unknown encoding `bogus_base`");
        assert!(e.hint.unwrap_or_default().contains("cl100k_base"));
    }
}
