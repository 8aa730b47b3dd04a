//! Item variants (an extension to the specification; see
//! `spec/22-variants.md`): cheaper forms of one [`ContextItem`] that a
//! slicer may take instead of the whole item, and what a slicer says about
//! the form it took.
//!
//! An item with variants is still one item: the window holds at most one of
//! its forms. Form 0 is the item itself; forms `1..=n` are its variants,
//! most complete first, each no larger than the form before it.

use crate::{ContextItem, CupelError, SliceOutcome};

/// The metadata key a window item carries when it is a variant of an input
/// item: its value is the variant's number (`"1"`, `"2"`, ...).
pub const VARIANT_METADATA_KEY: &str = "cupel:variant";

/// One cheaper form of an item: its text, its token count and, optionally,
/// the share of the item's score it keeps.
///
/// ```
/// use cupel_core::{ContextItem, ItemVariant};
/// let log = ContextItem::builder("…16,000 tokens of log…", 16_000)
///     .variant(ItemVariant::new("head … tail", 500))
///     .variant(ItemVariant::new("[tool output omitted]", 6).value(0.05))
///     .build()?;
/// assert_eq!(log.variants().len(), 2);
/// assert_eq!(log.variant_tokens(1), Some(500));
/// // Without a value, a variant keeps a share of the score in proportion
/// // to its tokens: 500 / 16,000.
/// assert_eq!(log.variant_value(1), Some(0.031_25));
/// assert_eq!(log.variant_value(2), Some(0.05));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ItemVariant {
    content: String,
    tokens: i64,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    value: Option<f64>,
}

impl ItemVariant {
    /// A variant with this text and caller-counted token cost. It is checked
    /// when the item is built (see
    /// [`ContextItemBuilder::build`](crate::ContextItemBuilder::build)).
    pub fn new(content: impl Into<String>, tokens: i64) -> Self {
        Self {
            content: content.into(),
            tokens,
            value: None,
        }
    }

    /// Sets the share of the item's score this variant keeps, in `[0, 1]`
    /// (checked when the item is built). Without it the share is the
    /// variant's tokens over the item's, so the variant is exactly as dense
    /// as the whole item and is only taken when the whole item does not fit.
    #[must_use]
    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }

    /// The variant's text.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The variant's token count.
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// The share of the score set with [`value`](Self::value), if any.
    pub fn declared_value(&self) -> Option<f64> {
        self.value
    }

    /// Checks variant `number` (1-based) of an item whose previous form
    /// holds `previous_tokens`.
    pub(crate) fn check(&self, number: usize, previous_tokens: i64) -> Result<(), CupelError> {
        if self.content.is_empty() {
            return Err(CupelError::InvalidVariant {
                variant: number,
                detail: "its content is empty".into(),
            });
        }
        if self.tokens < 0 || self.tokens > previous_tokens {
            return Err(CupelError::InvalidVariant {
                variant: number,
                detail: format!(
                    "it holds {} tokens; a variant must hold between 0 and the {previous_tokens} tokens of the form before it",
                    self.tokens
                ),
            });
        }
        if let Some(v) = self.value
            && !(0.0..=1.0).contains(&v)
        {
            return Err(CupelError::InvalidVariant {
                variant: number,
                detail: format!("its value is {v}; a value must be within [0, 1]"),
            });
        }
        Ok(())
    }
}

/// Why a slicer took a variant instead of the whole item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum VariantReason {
    /// Every more complete form was larger than the room the slicer had
    /// left for it.
    DidNotFit,
    /// A more complete form would have fitted, but this one was worth more
    /// score per token (only for variants with a declared
    /// [`value`](ItemVariant::value)).
    Denser,
}

impl VariantReason {
    /// The wire name: `"did_not_fit"` or `"denser"`.
    pub fn name(self) -> &'static str {
        match self {
            VariantReason::DidNotFit => "did_not_fit",
            VariantReason::Denser => "denser",
        }
    }
}

/// A slicer's choice of a variant for one selected item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VariantPick {
    /// Index into the slicer's input; the index must also be selected.
    pub index: usize,
    /// The variant taken, `1..=item.variants().len()`.
    pub variant: usize,
    /// Why.
    pub reason: VariantReason,
}

impl VariantPick {
    /// Variant `variant` of the item at `index`, for `reason`.
    pub fn new(index: usize, variant: usize, reason: VariantReason) -> Self {
        Self {
            index,
            variant,
            reason,
        }
    }
}

/// What a variant-aware slicer decided: the usual [`SliceOutcome`] plus the
/// variant taken for each selected item that does not go in whole.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VariantOutcome {
    /// Selection, shortfalls, cap exclusions, rooms.
    pub outcome: SliceOutcome,
    /// One entry per selected item taken as a variant (at most one per
    /// index); a selected item without an entry goes in whole.
    #[cfg_attr(feature = "serde", serde(default))]
    pub picks: Vec<VariantPick>,
}

impl From<SliceOutcome> for VariantOutcome {
    fn from(outcome: SliceOutcome) -> Self {
        Self {
            outcome,
            picks: Vec::new(),
        }
    }
}

/// The variant row of a report: which form of the item the window holds,
/// why, and how many tokens that saved against the whole item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VariantChoice {
    /// The variant's number (1 is the most complete variant).
    pub variant: usize,
    /// Why the slicer took it.
    pub reason: VariantReason,
    /// The whole item's tokens minus the variant's.
    pub tokens_saved: i64,
}

impl ContextItem {
    /// The tokens of form `form` (0: the item itself), if it exists.
    pub fn variant_tokens(&self, form: usize) -> Option<i64> {
        match form {
            0 => Some(self.tokens()),
            k => self.variants().get(k - 1).map(ItemVariant::tokens),
        }
    }

    /// The share of the item's score that form `form` keeps (1.0 for the
    /// item itself), if the form exists: the variant's declared value, else
    /// its tokens over the item's (1.0 when the item holds no tokens).
    pub fn variant_value(&self, form: usize) -> Option<f64> {
        if form == 0 {
            return Some(1.0);
        }
        let v = self.variants().get(form - 1)?;
        Some(v.value.unwrap_or_else(|| {
            if self.tokens() <= 0 {
                1.0
            } else {
                v.tokens as f64 / self.tokens() as f64
            }
        }))
    }

    /// The item as variant `form` presents it (form 0: the item itself): the
    /// variant's content and tokens, no variants, `original_tokens` set to
    /// the whole item's count (unless already set) and the metadata entry
    /// [`VARIANT_METADATA_KEY`] naming the variant. Every other field is the
    /// item's. `None` when the item has no such variant.
    ///
    /// ```
    /// use cupel_core::{ContextItem, ItemVariant};
    /// let item = ContextItem::builder("the whole text", 40)
    ///     .variant(ItemVariant::new("the gist", 8))
    ///     .build()?;
    /// let short = item.as_variant(1).expect("variant 1 exists");
    /// assert_eq!((short.content(), short.tokens()), ("the gist", 8));
    /// assert_eq!(short.original_tokens(), Some(40));
    /// assert_eq!(short.metadata()["cupel:variant"], "1");
    /// assert!(item.as_variant(2).is_none());
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn as_variant(&self, form: usize) -> Option<ContextItem> {
        if form == 0 {
            return Some(self.clone());
        }
        let v = self.variants().get(form - 1)?;
        let original = self.original_tokens().unwrap_or(self.tokens());
        self.to_builder()
            .content(v.content.clone())
            .tokens(v.tokens)
            .clear_variants()
            .original_tokens(original)
            .metadata(VARIANT_METADATA_KEY, form.to_string())
            .build()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_must_shrink_and_be_non_empty() {
        let err = ContextItem::builder("full", 10)
            .variant(ItemVariant::new("a", 8))
            .variant(ItemVariant::new("b", 9))
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::InvalidVariant {
                variant: 2,
                detail: "it holds 9 tokens; a variant must hold between 0 and the 8 tokens of the form before it".into()
            }
        );
        let err = ContextItem::builder("full", 10)
            .variant(ItemVariant::new("", 1))
            .build()
            .unwrap_err();
        assert!(matches!(err, CupelError::InvalidVariant { variant: 1, .. }));
        let err = ContextItem::builder("full", 10)
            .variant(ItemVariant::new("a", -1))
            .build()
            .unwrap_err();
        assert!(matches!(err, CupelError::InvalidVariant { variant: 1, .. }));
        for bad in [-0.1, 1.5, f64::NAN] {
            let err = ContextItem::builder("full", 10)
                .variant(ItemVariant::new("a", 1).value(bad))
                .build()
                .unwrap_err();
            assert!(matches!(err, CupelError::InvalidVariant { variant: 1, .. }));
        }
        // Equal tokens are allowed (a rewrite that is no shorter).
        assert!(
            ContextItem::builder("full", 10)
                .variant(ItemVariant::new("same size", 10))
                .build()
                .is_ok()
        );
    }

    #[test]
    fn default_value_is_proportional_to_tokens() {
        let item = ContextItem::builder("full", 200)
            .variant(ItemVariant::new("half", 100))
            .build()
            .unwrap();
        // 100 / 200 = 0.5
        assert_eq!(item.variant_value(1), Some(0.5));
        assert_eq!(item.variant_value(0), Some(1.0));
        assert_eq!(item.variant_value(2), None);
        assert_eq!(item.variant_tokens(2), None);
    }

    #[test]
    fn as_variant_keeps_the_other_fields() {
        let item = ContextItem::builder("full", 20)
            .priority(3)
            .tag("t")
            .original_tokens(90)
            .variant(ItemVariant::new("short", 5))
            .build()
            .unwrap();
        let v = item.as_variant(1).unwrap();
        assert_eq!(v.priority(), Some(3));
        assert_eq!(v.tags(), ["t"]);
        // An existing original count is kept.
        assert_eq!(v.original_tokens(), Some(90));
        assert!(v.variants().is_empty());
        assert!(item.as_variant(0).unwrap().ptr_eq(&item));
    }
}
