//! The item format's one schema: [`ItemRecord`], what a JSON or TOML item
//! holds before it is checked. `ContextItem`'s deserializer reads it with
//! the token counts required; the CLI reads it with them optional (it can
//! count the missing ones) — the same fields, aliases and messages.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::{
    ContextItem, ContextItemBuilder, ContextKind, ContextSource, CupelError, ItemVariant, Tag,
};

/// An item as the JSON and TOML item formats write it, before it is
/// checked: snake_case keys, with the spec's camelCase spellings
/// (`futureRelevanceHint`, `originalTokens`) accepted as aliases.
///
/// `T` is the type of the token counts (the item's and each variant's):
/// `i64` where they are required, as [`ContextItem`] deserializes;
/// `Option<i64>` for a reader that counts the missing ones itself, as the
/// `cupel` CLI does with `--encoding`. [`map_tokens`](Self::map_tokens)
/// turns one into the other and [`into_item`](Self::into_item) checks and
/// builds the item.
///
/// ```
/// use cupel_core::{ItemRecord, TokensOf};
/// let json = r#"{"content": "The weather was nice", "variants": [{"content": "nice"}]}"#;
/// let record: ItemRecord<Option<i64>> = serde_json::from_str(json)?;
/// // Count what is missing: one token per word here.
/// let item = record
///     .map_tokens(|_: TokensOf, content: &str, tokens: Option<i64>| {
///         Ok::<_, String>(tokens.unwrap_or(content.split(' ').count() as i64))
///     })?
///     .into_item()?;
/// assert_eq!(item.tokens(), 4);
/// assert_eq!(item.variant_tokens(1), Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(expecting = "an item table with `content`")]
#[non_exhaustive]
pub struct ItemRecord<T> {
    /// The text.
    pub content: String,
    /// Its token count.
    pub tokens: T,
    /// `kind` (default `Message`).
    #[serde(default)]
    pub kind: Option<ContextKind>,
    /// `source` (default `Chat`).
    #[serde(default)]
    pub source: Option<ContextSource>,
    /// `priority`.
    #[serde(default)]
    pub priority: Option<i64>,
    /// `tags`.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// `metadata`.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// `timestamp` (RFC 3339).
    #[serde(default, with = "crate::timestamp::serde_timestamp::option")]
    pub timestamp: Option<DateTime<Utc>>,
    /// `future_relevance_hint` (alias `futureRelevanceHint`).
    #[serde(default, alias = "futureRelevanceHint")]
    pub future_relevance_hint: Option<f64>,
    /// `pinned`.
    #[serde(default)]
    pub pinned: bool,
    /// `original_tokens` (alias `originalTokens`).
    #[serde(default, alias = "originalTokens")]
    pub original_tokens: Option<i64>,
    /// The atomic group id (extension): items sharing it are kept, dropped
    /// and placed together.
    #[serde(default)]
    pub group: Option<String>,
    /// Cheaper forms of the item (extension, spec chapter 22), most
    /// complete first.
    #[serde(default)]
    pub variants: Vec<VariantRecord<T>>,
    /// The content's embedding, for the `vector` and `hybrid` scorers.
    #[serde(default)]
    pub embedding: Option<Vec<f32>>,
}

/// One `variants` entry of an [`ItemRecord`]: [`ItemVariant`]'s fields,
/// its token count of type `T`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(expecting = "a variant table with `content`")]
#[non_exhaustive]
pub struct VariantRecord<T> {
    /// The variant's text.
    pub content: String,
    /// Its token count.
    pub tokens: T,
    /// The share of the item's score it keeps.
    #[serde(default)]
    pub value: Option<f64>,
}

/// Whose token count [`ItemRecord::map_tokens`] is asking for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokensOf {
    /// The item's own.
    Item,
    /// Variant `k` (0-based, as in the `variants` array).
    Variant(usize),
}

impl<T> ItemRecord<T> {
    /// The same record with every token count (the item's first, then each
    /// variant's in order) replaced by `f(whose, content, count)`; the first
    /// error stops it.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn map_tokens<U, E>(
        self,
        mut f: impl FnMut(TokensOf, &str, T) -> Result<U, E>,
    ) -> Result<ItemRecord<U>, E> {
        let tokens = f(TokensOf::Item, &self.content, self.tokens)?;
        let mut variants = Vec::with_capacity(self.variants.len());
        for (k, v) in self.variants.into_iter().enumerate() {
            variants.push(VariantRecord {
                tokens: f(TokensOf::Variant(k), &v.content, v.tokens)?,
                content: v.content,
                value: v.value,
            });
        }
        Ok(ItemRecord {
            content: self.content,
            tokens,
            kind: self.kind,
            source: self.source,
            priority: self.priority,
            tags: self.tags,
            metadata: self.metadata,
            timestamp: self.timestamp,
            future_relevance_hint: self.future_relevance_hint,
            pinned: self.pinned,
            original_tokens: self.original_tokens,
            group: self.group,
            variants,
            embedding: self.embedding,
        })
    }
}

impl ItemRecord<i64> {
    /// Checks the record and builds the item, as
    /// [`ContextItemBuilder::build`] does (kind and source default to
    /// `Message` and `Chat`).
    ///
    /// # Errors
    /// The builder's errors: empty content, a negative count, a bad
    /// variant, a non-finite hint or embedding, ...
    pub fn into_item(self) -> Result<ContextItem, CupelError> {
        let variants = self.variants.into_iter().map(|v| {
            let variant = ItemVariant::new(v.content, v.tokens);
            match v.value {
                Some(value) => variant.value(value),
                None => variant,
            }
        });
        ContextItemBuilder::new(self.content, self.tokens)
            .kind(self.kind.unwrap_or_default())
            .source(self.source.unwrap_or_default())
            .priority_opt(self.priority)
            .tags(self.tags)
            .metadata_map(self.metadata)
            .timestamp_opt(self.timestamp)
            .future_relevance_hint_opt(self.future_relevance_hint)
            .pinned(self.pinned)
            .original_tokens_opt(self.original_tokens)
            .group_opt(self.group)
            .variants(variants)
            .embedding_opt(self.embedding)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_and_optional_counts_read_the_same_fields() {
        let json = r#"{"content": "a", "tokens": 3, "futureRelevanceHint": 0.5,
            "variants": [{"content": "b", "tokens": 1, "value": 0.2}]}"#;
        let required: ItemRecord<i64> = serde_json::from_str(json).expect("valid");
        let optional: ItemRecord<Option<i64>> = serde_json::from_str(json).expect("valid");
        let mapped = optional
            .map_tokens(|_, _, t| t.ok_or("missing"))
            .expect("all counted");
        assert_eq!(mapped, required);
        let item = required.into_item().expect("valid item");
        assert_eq!(
            (item.tokens(), item.future_relevance_hint()),
            (3, Some(0.5))
        );
        assert_eq!(item.variant_value(1), Some(0.2));
    }

    #[test]
    fn a_required_count_that_is_missing_is_named() {
        let err =
            serde_json::from_str::<ItemRecord<i64>>(r#"{"content": "a"}"#).expect_err("no tokens");
        assert!(
            err.to_string().starts_with("missing field `tokens`"),
            "{err}"
        );
        // Optional: absent is `None`, and `map_tokens` says whose it is.
        let r: ItemRecord<Option<i64>> = serde_json::from_str(
            r#"{"content": "a", "tokens": 2, "variants": [{"content": "b"}]}"#,
        )
        .expect("valid");
        let whose = r
            .map_tokens(|w, _, t| t.ok_or(w))
            .expect_err("variant 0 has none");
        assert_eq!(whose, TokensOf::Variant(0));
    }

    #[test]
    fn a_non_table_says_what_was_expected() {
        let err = serde_json::from_str::<ItemRecord<i64>>("\"x\"").expect_err("a string");
        assert!(
            err.to_string()
                .contains("expected an item table with `content`"),
            "{err}"
        );
    }
}
