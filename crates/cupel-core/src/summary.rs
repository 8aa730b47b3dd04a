//! [`Summary`]: the running summary of what a window evicted, shared by the
//! pipeline's two-step summary (`cupel-pipeline`'s `SummaryPlan`) and the
//! chat path's compaction (`cupel-chat`'s `RunningSummary`).
//!
//! **The folding rule** (`spec/22-variants.md`, "Summaries of what was
//! evicted"): every new summary is made from at most one previous summary
//! and the raw units evicted since it was made. The previous summary is
//! passed on its own, never as one of the evicted units, so no summary is
//! ever made from a summary of summaries.

use crate::CupelError;

/// A summary text and its caller-counted tokens (non-empty text,
/// non-negative tokens).
///
/// ```
/// use cupel_core::Summary;
/// let s = Summary::new("Turns 1-3: greetings.", 6)?;
/// assert_eq!((s.text(), s.tokens()), ("Turns 1-3: greetings.", 6));
/// assert!(Summary::new("", 0).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Summary {
    text: String,
    tokens: i64,
}

impl Summary {
    /// A summary text and its caller-counted tokens.
    ///
    /// # Errors
    /// [`CupelError::EmptyContent`] for empty text;
    /// [`CupelError::InvalidArgument`] for negative tokens.
    pub fn new(text: impl Into<String>, tokens: i64) -> Result<Self, CupelError> {
        let text = text.into();
        if text.is_empty() {
            return Err(CupelError::EmptyContent);
        }
        if tokens < 0 {
            return Err(CupelError::InvalidArgument(format!(
                "a summary cannot hold {tokens} tokens"
            )));
        }
        Ok(Self { text, tokens })
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its tokens.
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// The text, taken out.
    pub fn into_text(self) -> String {
        self.text
    }
}
