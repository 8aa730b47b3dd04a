//! The [`TokenCounter`] trait for components that must count tokens themselves.

use std::sync::Arc;

/// Counts the tokens of a text with a real tokenizer.
///
/// The pipeline never counts tokens (callers supply counts); components that
/// produce new text — the context gate's compaction, the CLI's
/// `--encoding` — take a `TokenCounter`. Implementations ship in
/// `cupel-rs-tokens` (and the `cupel` facade's `tokens` module):
/// `TiktokenCounter` for OpenAI's encodings, `HuggingFaceCounter` for a
/// `tokenizer.json`, and `CharEstimate`, a documented estimate to calibrate
/// for providers that publish no tokenizer.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens in `text`.
    fn count_tokens(&self, text: &str) -> i64;
}

impl<T: TokenCounter + ?Sized> TokenCounter for &T {
    fn count_tokens(&self, text: &str) -> i64 {
        (**self).count_tokens(text)
    }
}
impl<T: TokenCounter + ?Sized> TokenCounter for Box<T> {
    fn count_tokens(&self, text: &str) -> i64 {
        (**self).count_tokens(text)
    }
}
impl<T: TokenCounter + ?Sized> TokenCounter for Arc<T> {
    fn count_tokens(&self, text: &str) -> i64 {
        (**self).count_tokens(text)
    }
}

use crate::error::TokenSign;
use crate::{ContextItem, CupelError};

/// Checks that an item set's token counts can be summed in `i64` without overflow.
///
/// Non-negative counts must sum to at most `i64::MAX` and negative counts to at
/// least `i64::MIN`. When this holds, *every* partial sum of the set's
/// non-negative counts fits in an `i64`, so stages can add tokens with plain
/// arithmetic. The pipeline calls this at the start of every run.
///
/// # Errors
/// [`CupelError::TokenOverflow`] with the exact total.
///
/// ```
/// use cupel_core::{check_token_totals, ContextItem};
/// let big = ContextItem::new("a", i64::MAX)?;
/// let one = ContextItem::new("b", 1)?;
/// assert!(check_token_totals([&big]).is_ok());
/// assert!(check_token_totals([&big, &one]).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn check_token_totals<'a>(
    items: impl IntoIterator<Item = &'a ContextItem>,
) -> Result<(), CupelError> {
    let mut totals = TokenTotals::new();
    for item in items {
        totals.add(item.tokens());
    }
    totals.check()
}

/// [`check_token_totals`] in parts: add the counts one at a time (in a pass
/// that reads the items anyway), then check once.
///
/// The sums are kept in `i128`, which a count of `i64` values cannot
/// overflow before there are 2^64 of them.
///
/// ```
/// use cupel_core::TokenTotals;
/// let mut totals = TokenTotals::new();
/// totals.add(i64::MAX);
/// assert!(totals.check().is_ok());
/// totals.add(1);
/// assert!(totals.check().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    positive: i128,
    negative: i128,
}

impl TokenTotals {
    /// No counts yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one item's count to the sum of its sign.
    #[inline]
    pub fn add(&mut self, tokens: i64) {
        let t = i128::from(tokens);
        if t >= 0 {
            self.positive += t;
        } else {
            self.negative += t;
        }
    }

    /// Whether both sums fit in `i64`.
    ///
    /// # Errors
    /// [`CupelError::TokenOverflow`] with the exact total of the sign that
    /// does not fit (the non-negative one first).
    pub fn check(&self) -> Result<(), CupelError> {
        if self.positive > i128::from(i64::MAX) {
            return Err(CupelError::TokenOverflow {
                sign: TokenSign::Positive,
                total: self.positive,
            });
        }
        if self.negative < i128::from(i64::MIN) {
            return Err(CupelError::TokenOverflow {
                sign: TokenSign::Negative,
                total: self.negative,
            });
        }
        Ok(())
    }
}
