//! Short per-item explanations a scorer adds to a report's rows.

use std::fmt;

/// What one scorer says about why it scored one item as it did: a label, the
/// scorer's own score for the item and, for lexical scorers, the query
/// words the item matched.
///
/// A [`Scorer`](crate::Scorer) gives notes through
/// [`notes_in`](crate::Scorer::notes_in); the pipeline asks for them only
/// when a report is built, and the report carries them on the item's row
/// ([`IncludedItem::notes`](crate::IncludedItem::notes),
/// [`ExcludedItem::notes`](crate::ExcludedItem::notes)).
///
/// Displayed as `relevance 0.82: matched tokyo, travel`.
///
/// ```
/// use cupel_core::ScoreNote;
/// let n = ScoreNote::new("bm25", "relevance", 0.8249)
///     .with_terms(vec!["tokyo".into(), "travel".into()]);
/// assert_eq!(n.to_string(), "relevance 0.82: matched tokyo, travel");
/// let n = ScoreNote::new("bm25", "relevance", 0.5).with_detail("next to item 3");
/// assert_eq!(n.to_string(), "relevance 0.50: next to item 3");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ScoreNote {
    /// The scorer's policy type (`bm25`, `vector`, ...).
    pub scorer: String,
    /// What the score measures (`relevance`, `similarity`).
    pub label: String,
    /// The scorer's own score of the item, before any composite weighting.
    pub score: f64,
    /// The query words the item matched, most contributing first (ties
    /// alphabetical); empty when the scorer does not match words.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub terms: Vec<String>,
    /// Anything else worth a few words (e.g. the neighbour that lifted it).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub detail: Option<String>,
}

impl ScoreNote {
    /// A note from `scorer` of `label` and `score`, with no terms or detail.
    pub fn new(scorer: impl Into<String>, label: impl Into<String>, score: f64) -> Self {
        ScoreNote {
            scorer: scorer.into(),
            label: label.into(),
            score,
            terms: Vec::new(),
            detail: None,
        }
    }

    /// The same note with the matched `terms`.
    #[must_use]
    pub fn with_terms(mut self, terms: Vec<String>) -> Self {
        self.terms = terms;
        self
    }

    /// The same note with a `detail`.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

impl fmt::Display for ScoreNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:.2}", self.label, self.score)?;
        let mut sep = ": ";
        if !self.terms.is_empty() {
            write!(f, "{sep}matched {}", self.terms.join(", "))?;
            sep = "; ";
        }
        if let Some(d) = &self.detail {
            write!(f, "{sep}{d}")?;
        }
        Ok(())
    }
}
