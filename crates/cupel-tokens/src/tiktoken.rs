//! [`TiktokenCounter`]: a [`TokenCounter`] backed by OpenAI's BPE encodings
//! (feature `tiktoken`).
//!
//! It lives outside `cupel-core`, which stays small and free of heavy
//! dependencies (the rank tables are megabytes).

use cupel_core::TokenCounter;

use crate::TokenizerError;
use crate::bpe::Encoder;

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

/// Counts tokens with one of tiktoken's BPE encodings (the ranks are embedded
/// in the binary as tables read in place; no network access, and next to no
/// start-up cost).
///
/// Text is encoded as ordinary text: special-token spellings such as
/// `<|endoftext|>` inside a text count as the ordinary tokens they are made
/// of, which is how a chat API sees user-supplied text.
///
/// # Long texts are counted in pieces
///
/// A BPE pass needs memory many times the size of the piece it encodes (about
/// 50x for a text without spaces), so a text is counted in pieces of at most
/// [`TIKTOKEN_PIECE_BYTES`] bytes and the counts are added. A piece ends just before a
/// space or tab that follows a non-blank character: every encoding here
/// starts a new token there (a space only ever opens a token or belongs to a
/// run of whitespace), so for text with such a place at least every
/// [`TIKTOKEN_PIECE_BYTES`] bytes the sum is exactly the count of the whole text. A
/// longer run with no such place (a minified blob, base64) is cut at the last
/// character boundary that fits; there the count may differ from the whole
/// text's by about one token per cut. Memory stays bounded whatever the text.
///
/// ```
/// use cupel_core::TokenCounter;
/// use cupel_tokens::TiktokenCounter;
/// let counter = TiktokenCounter::new("cl100k_base")?;
/// // cl100k_base: "hello" is one token, " world" another.
/// assert_eq!(counter.count_tokens("hello world"), 2);
/// assert_eq!(TiktokenCounter::new("gpt-4o")?.encoding(), "o200k_base");
/// # Ok::<(), cupel_tokens::TokenizerError>(())
/// ```
pub struct TiktokenCounter {
    encoding: &'static str,
    encoder: Encoder,
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
    /// Names are trimmed and compared ignoring ASCII case. Loading takes a
    /// few milliseconds, nearly all of it compiling the encoding's
    /// pre-tokenizing regular expression: the ranks are tables built into
    /// the binary when this crate is compiled, read in place (nothing is
    /// decoded or hashed at start-up). [`shared`](Self::shared) loads each
    /// encoding once per process.
    ///
    /// Counts are tiktoken's: the same pattern, ranks and byte-pair merges
    /// (only what counting needs is built; there is no decoder).
    ///
    /// # Errors
    /// [`TokenizerError::UnknownEncoding`] for a name that is neither (see
    /// [`TIKTOKEN_ENCODINGS`]); [`TokenizerError::Load`] if the ranks fail to load.
    pub fn new(name: &str) -> Result<Self, TokenizerError> {
        let encoding = Self::encoding_of(name)?;
        let encoder =
            Encoder::new(encoding).map_err(|message| TokenizerError::Load { encoding, message })?;
        Ok(Self { encoding, encoder })
    }

    /// The canonical encoding `name` stands for (an encoding, `gpt2`, or an
    /// OpenAI model name), without loading it.
    ///
    /// ```
    /// use cupel_tokens::TiktokenCounter;
    /// assert_eq!(TiktokenCounter::encoding_of(" GPT-4o ")?, "o200k_base");
    /// assert_eq!(TiktokenCounter::encoding_of("gpt2")?, "r50k_base");
    /// assert!(TiktokenCounter::encoding_of("gpt-unknown").is_err());
    /// # Ok::<(), cupel_tokens::TokenizerError>(())
    /// ```
    ///
    /// # Errors
    /// [`TokenizerError::UnknownEncoding`] for a name that is neither.
    pub fn encoding_of(name: &str) -> Result<&'static str, TokenizerError> {
        use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};
        let wanted = name.trim().to_ascii_lowercase();
        if let Some(known) = TIKTOKEN_ENCODINGS.iter().find(|e| **e == wanted) {
            return Ok(known);
        }
        match get_tokenizer(&wanted) {
            Some(Tokenizer::Cl100kBase) => Ok("cl100k_base"),
            Some(Tokenizer::O200kBase) => Ok("o200k_base"),
            Some(Tokenizer::O200kHarmony) => Ok("o200k_harmony"),
            Some(Tokenizer::P50kBase) => Ok("p50k_base"),
            Some(Tokenizer::P50kEdit) => Ok("p50k_edit"),
            Some(Tokenizer::R50kBase | Tokenizer::Gpt2) => Ok("r50k_base"),
            None => Err(TokenizerError::UnknownEncoding {
                name: name.to_string(),
            }),
        }
    }

    /// The counter for `name`, loaded once per process and shared by every
    /// caller (the chat crate, the gate in the CLI, ...).
    ///
    /// # Errors
    /// As [`new`](Self::new); a load that failed is retried on the next call.
    pub fn shared(name: &str) -> Result<&'static TiktokenCounter, TokenizerError> {
        use std::sync::OnceLock;
        static LOADED: [OnceLock<TiktokenCounter>; 6] = [const { OnceLock::new() }; 6];
        let encoding = Self::encoding_of(name)?;
        let slot = TIKTOKEN_ENCODINGS
            .iter()
            .position(|e| *e == encoding)
            .and_then(|i| LOADED.get(i))
            .ok_or_else(|| TokenizerError::UnknownEncoding {
                name: name.to_string(),
            })?;
        if let Some(counter) = slot.get() {
            return Ok(counter);
        }
        let counter = Self::new(encoding)?;
        Ok(slot.get_or_init(|| counter))
    }

    /// The canonical name of the encoding in use (`cl100k_base`, ...).
    pub fn encoding(&self) -> &'static str {
        self.encoding
    }
}

/// The largest piece [`TiktokenCounter`] hands to the encoder at once.
pub const TIKTOKEN_PIECE_BYTES: usize = 8 * 1024;

impl TokenCounter for TiktokenCounter {
    fn count_tokens(&self, text: &str) -> i64 {
        let total = pieces(text, TIKTOKEN_PIECE_BYTES)
            .map(|p| self.encoder.count(p))
            .fold(0usize, usize::saturating_add);
        i64::try_from(total).unwrap_or(i64::MAX)
    }
}

/// Splits `text` into pieces of at most `max` bytes (at least one character
/// each), ending where a token must start when possible (see
/// [`TiktokenCounter`]'s "Long texts are counted in pieces").
fn pieces(text: &str, max: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= max {
            return Some(std::mem::take(&mut rest));
        }
        let b = rest.as_bytes();
        // The last space or tab within the limit that follows a non-blank
        // byte (bytes of a multi-byte character are never ASCII blanks).
        let exact = (1..=max)
            .rev()
            .find(|&p| matches!(b[p], b' ' | b'\t') && !b[p - 1].is_ascii_whitespace());
        let cut = exact.unwrap_or_else(|| {
            let mut p = max;
            while p > 0 && !rest.is_char_boundary(p) {
                p -= 1;
            }
            // A first character longer than `max` (impossible for max >= 4).
            if p == 0 {
                rest.char_indices().nth(1).map_or(rest.len(), |(i, _)| i)
            } else {
                p
            }
        });
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_before_a_space_that_follows_a_word() {
        let p: Vec<&str> = pieces("ab cd  ef", 4).collect();
        // Cuts before " cd" (after "ab") and before "  ef" (after "cd").
        assert_eq!(p, ["ab", " cd", "  ef"]);
        // No blank: a hard cut at a character boundary (é is two bytes).
        let p: Vec<&str> = pieces("ééé", 3).collect();
        assert_eq!(p, ["é", "é", "é"]);
        assert_eq!(pieces("", 4).count(), 0);
    }

    #[test]
    fn piecewise_counts_are_exact_where_spaces_allow() {
        // Every encoding: text with a space at least every few bytes, far
        // longer than a piece, counts exactly as the whole text does.
        let mut text = String::new();
        for i in 0..6_000 {
            text.push_str(["The ", "quick,\n", "brown  ", "fox's\t", "42 ", "ünïcode. "][i % 6]);
        }
        assert!(text.len() > 4 * TIKTOKEN_PIECE_BYTES);
        for name in ["cl100k_base", "o200k_base", "r50k_base"] {
            let c = TiktokenCounter::new(name).unwrap();
            let whole = i64::try_from(c.encoder.count(&text)).unwrap();
            assert_eq!(c.count_tokens(&text), whole, "{name}");
        }
    }

    #[test]
    fn a_blob_without_spaces_is_counted_in_bounded_pieces() {
        // 64 KiB of `x`: eight pieces of 8 KiB. cl100k_base encodes a run of
        // x in tokens of 8 characters ("xxxxxxxx"), so each piece counts
        // 8192 / 8 = 1024 and the whole 65536 / 8 = 8192: equal here.
        let c = TiktokenCounter::new("cl100k_base").unwrap();
        let blob = "x".repeat(64 * 1024);
        assert_eq!(c.encoder.count(&blob[..TIKTOKEN_PIECE_BYTES]), 1024);
        assert_eq!(c.count_tokens(&blob), 8192);
    }

    #[test]
    fn shared_counters_are_loaded_once_per_encoding() {
        let a = TiktokenCounter::shared("gpt-4o").unwrap();
        let b = TiktokenCounter::shared("o200k_base").unwrap();
        assert!(std::ptr::eq(a, b), "one counter per encoding");
        assert_eq!(a.encoding(), "o200k_base");
        assert!(TiktokenCounter::shared("nope").is_err());
    }

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
        let c: cupel_core::CupelError = e.into();
        assert!(c.to_string().contains("cl100k_base"));
    }
}
