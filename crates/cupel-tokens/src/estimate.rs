//! [`CharEstimate`]: one token per N characters.

use cupel_core::TokenCounter;

use crate::TokenizerError;

/// An estimate for providers that publish no tokenizer: `ceil(characters /
/// chars_per_token)`, counting Unicode scalar values.
///
/// It is only an estimate — real tokenizers give fewer tokens per character
/// for common English words and more for code, numbers and other scripts —
/// so calibrate it against counts the provider reports (the chat crate's
/// `Calibration` does) and keep a margin. For OpenAI models use
/// [`TiktokenCounter`](crate::TiktokenCounter), which is exact.
///
/// ```
/// use cupel_core::TokenCounter;
/// use cupel_tokens::CharEstimate;
///
/// let e = CharEstimate::new(4.0)?;
/// assert_eq!(e.count_tokens(""), 0);
/// assert_eq!(e.count_tokens("abcd"), 1); // 4 / 4
/// assert_eq!(e.count_tokens("abcde"), 2); // ceil(5 / 4)
/// assert_eq!(e.count_tokens("日本語"), 1); // 3 characters (9 bytes): ceil(3 / 4)
/// assert!(CharEstimate::new(0.0).is_err());
/// # Ok::<(), cupel_tokens::TokenizerError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CharEstimate {
    chars_per_token: f64,
}

impl CharEstimate {
    /// An estimate of one token per `chars_per_token` characters.
    ///
    /// # Errors
    /// [`TokenizerError::InvalidRatio`] unless `chars_per_token` is finite and
    /// above zero.
    pub fn new(chars_per_token: f64) -> Result<Self, TokenizerError> {
        Self::checked(chars_per_token).ok_or(TokenizerError::InvalidRatio { chars_per_token })
    }

    /// [`new`](Self::new) for constants: `None` unless `chars_per_token` is
    /// finite and above zero.
    ///
    /// ```
    /// use cupel_tokens::CharEstimate;
    /// const FOUR: Option<CharEstimate> = CharEstimate::checked(4.0);
    /// assert!(FOUR.is_some());
    /// assert!(CharEstimate::checked(f64::NAN).is_none());
    /// ```
    pub const fn checked(chars_per_token: f64) -> Option<Self> {
        if chars_per_token.is_finite() && chars_per_token > 0.0 {
            Some(Self { chars_per_token })
        } else {
            None
        }
    }

    /// The ratio in use.
    pub const fn chars_per_token(&self) -> f64 {
        self.chars_per_token
    }
}

impl TokenCounter for CharEstimate {
    fn count_tokens(&self, text: &str) -> i64 {
        let chars = text.chars().count() as f64;
        let tokens = (chars / self.chars_per_token).ceil();
        // A ratio far below 1 on a huge text could pass i64::MAX.
        if tokens < i64::MAX as f64 {
            tokens as i64
        } else {
            i64::MAX
        }
    }
}
