//! What the current request is about: the optional query a run carries to
//! its scorers.

use std::sync::Arc;

/// The query of one run: what the request is about, for query-aware scorers
/// (a lexical relevance scorer reads [`text`](Query::text), a vector
/// similarity scorer [`embedding`](Query::embedding)).
///
/// Cheap to clone (the text and embedding are shared).
///
/// ```
/// use cupel_core::Query;
/// let q = Query::new("When did Calvin first travel to Tokyo?").with_embedding(vec![0.1, 0.2]);
/// assert_eq!(q.text(), "When did Calvin first travel to Tokyo?");
/// assert_eq!(q.embedding(), Some(&[0.1f32, 0.2][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    text: Arc<str>,
    embedding: Option<Arc<[f32]>>,
}

impl Query {
    /// A query of `text`, without an embedding.
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Query {
            text: text.into(),
            embedding: None,
        }
    }

    /// The same query with a caller-supplied embedding of its text.
    #[must_use]
    pub fn with_embedding(mut self, embedding: impl Into<Arc<[f32]>>) -> Self {
        self.embedding = Some(embedding.into());
        self
    }

    /// The query text (may be empty).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The query embedding, when the caller gave one.
    pub fn embedding(&self) -> Option<&[f32]> {
        self.embedding.as_deref()
    }
}

/// Checks that `embedding` can be compared by cosine: not empty, every
/// component finite, not every component zero. `owner` names whose it is in
/// the error (`item`, `item 3`, `query`).
///
/// ```
/// use cupel_core::{check_embedding, CupelError};
/// assert!(check_embedding(&[0.0, 1.0], "query").is_ok());
/// let e = check_embedding(&[0.5, f32::NAN], "item 3").unwrap_err();
/// assert_eq!(e.to_string(), "the item 3 embedding is invalid: component 1 is NaN");
/// assert!(matches!(check_embedding(&[0.0, 0.0], "query"), Err(CupelError::InvalidEmbedding { .. })));
/// ```
///
/// # Errors
/// [`CupelError::InvalidEmbedding`](crate::CupelError::InvalidEmbedding) naming the first bad component, or
/// saying the vector is empty or zero.
pub fn check_embedding(embedding: &[f32], owner: &str) -> Result<(), crate::CupelError> {
    let bad = |detail: String| crate::CupelError::InvalidEmbedding {
        owner: owner.to_string(),
        detail,
    };
    if embedding.is_empty() {
        return Err(bad("it has no components".into()));
    }
    if let Some((k, x)) = embedding.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        let what = if x.is_nan() {
            "NaN".into()
        } else {
            x.to_string()
        };
        return Err(bad(format!("component {k} is {what}")));
    }
    if embedding.iter().all(|&x| x == 0.0) {
        return Err(bad(format!(
            "all {} components are zero (a zero vector has no direction)",
            embedding.len()
        )));
    }
    Ok(())
}

/// What a scorer may read about the run besides the items:
/// [`Scorer::score_all_in`](crate::Scorer::score_all_in)'s second argument.
///
/// `#[non_exhaustive]`: later fields are added without breaking scorers.
/// Build one with [`ScoreContext::new`] and the setters.
///
/// ```
/// use cupel_core::{Query, ScoreContext};
/// let q = Query::new("tokyo");
/// let cx = ScoreContext::new().query(Some(&q));
/// assert_eq!(cx.query_ref().map(Query::text), Some("tokyo"));
/// assert!(ScoreContext::new().query_ref().is_none());
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ScoreContext<'a> {
    query: Option<&'a Query>,
}

impl<'a> ScoreContext<'a> {
    /// The context of a run without a query.
    pub const fn new() -> Self {
        ScoreContext { query: None }
    }

    /// Sets the run's query.
    #[must_use]
    pub const fn query(mut self, query: Option<&'a Query>) -> Self {
        self.query = query;
        self
    }

    /// The run's query, if it has one.
    pub const fn query_ref(&self) -> Option<&'a Query> {
        self.query
    }
}
