//! [`ContextItem`], the unit the pipeline selects, and its builder.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use compact_str::CompactString;
use smallvec::SmallVec;

use crate::{ContextKind, ContextSource, CupelError, ItemVariant, Tag};

/// One candidate piece of context: a message, document, tool output, memory, ...
///
/// Immutable once built. The data lives behind an [`Arc`], so cloning an item
/// (which the pipeline does once per selected item) is a reference-count bump,
/// and the same item can be shared across threads and pipeline runs.
///
/// Token counts are the caller's: Cupel never tokenizes content itself.
///
/// ```
/// use cupel_core::{ContextItem, ContextKind};
/// let item = ContextItem::builder("The user asked about refunds.", 9)
///     .kind(ContextKind::MESSAGE)
///     .priority(5)
///     .tag("billing")
///     .build()?;
/// assert_eq!(item.tokens(), 9);
/// assert_eq!(item.tags(), ["billing"]);
/// assert!(!item.pinned());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct ContextItem {
    inner: Arc<ItemData>,
}

/// `repr(C)`, in this order: the fields the pipeline's first passes read
/// (tokens, the extension pointer, the group id, the pinned flag) share the
/// cache line of the `Arc`'s counts, and the fields the scorers and the later
/// stages read (timestamp, content hash, priority) follow, ahead of the
/// rest. On large inputs every pass over the items is bound by memory
/// traffic, so a pass should touch as few lines per item as it can.
#[derive(Clone, PartialEq)]
#[repr(C)]
struct ItemData {
    tokens: i64,
    /// The rarer fields, behind one pointer: `None` (8 bytes, no
    /// allocation) for the usual item without metadata, a relevance hint,
    /// original tokens or variants. (Keeping them out of line takes 64
    /// bytes off every item: 64 MB per million.)
    ext: Option<Box<Extension>>,
    /// The atomic group's id, stored inline when short (up to 24 bytes), so
    /// a grouped item takes no more allocations than any other.
    group: Option<CompactString>,
    pinned: bool,
    timestamp: Option<DateTime<Utc>>,
    /// A 64-bit hash of `content`, taken once in [`ContextItemBuilder::build`]
    /// (see [`ContextItem::content_hash`]).
    content_hash: u64,
    priority: Option<i64>,
    kind: ContextKind,
    tags: Vec<Tag>,
    source: ContextSource,
    content: Text,
}

/// An item's rarer fields; [`ContextItemBuilder::build`] stores none at all
/// when every one is empty.
#[derive(Clone, PartialEq, Default)]
struct Extension {
    metadata: Metadata,
    future_relevance_hint: Option<f64>,
    original_tokens: Option<i64>,
    /// Cheaper forms, most complete first.
    variants: Box<[ItemVariant]>,
    /// A caller-supplied embedding of the content (vector similarity).
    embedding: Option<Arc<[f32]>>,
}

impl Extension {
    fn is_empty(&self) -> bool {
        self.metadata.is_empty()
            && self.future_relevance_hint.is_none()
            && self.original_tokens.is_none()
            && self.variants.is_empty()
            && self.embedding.is_none()
    }
}

/// The metadata of an item without any.
static NO_METADATA: BTreeMap<String, String> = BTreeMap::new();

/// One metadata entry: its key and value, each stored inline when short
/// (up to 24 bytes).
type MetaEntry = (CompactString, CompactString);

/// An item's metadata: its entries in key order (each key once), and the
/// map [`ContextItem::metadata`] lends, built on that method's first call.
/// An item whose metadata is written but never read as a map (the rows of
/// a chat trim's report, one per message) thus allocates no map, and for
/// short keys and values no strings either: one vector holds them all.
#[derive(Clone, Default)]
struct Metadata {
    entries: SmallVec<[MetaEntry; 3]>,
    map: OnceLock<BTreeMap<String, String>>,
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        // The map, when built, holds the same entries.
        self.entries == other.entries
    }
}

impl Metadata {
    /// The entries of `map`, which the metadata lends as it is.
    fn from_map(map: BTreeMap<String, String>) -> Self {
        let entries = map
            .iter()
            .map(|(k, v)| (CompactString::new(k), CompactString::new(v)))
            .collect();
        Self {
            entries,
            map: OnceLock::from(map),
        }
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Inserts or replaces the entry for `key`.
    #[inline]
    fn insert(&mut self, entry: MetaEntry) {
        // A builder usually sets keys in order: append without a search.
        if self.entries.last().is_none_or(|(k, _)| *k < entry.0) {
            self.entries.push(entry);
        } else {
            self.insert_sorted(entry);
        }
        // A builder copied from a read item may hold the old map.
        self.map = OnceLock::new();
    }

    #[inline(never)]
    fn insert_sorted(&mut self, entry: MetaEntry) {
        match self
            .entries
            .binary_search_by(|(k, _)| k.as_str().cmp(entry.0.as_str()))
        {
            Ok(at) => self.entries[at].1 = entry.1,
            Err(at) => self.entries.insert(at, entry),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|at| self.entries[at].1.as_str())
    }

    fn map(&self) -> &BTreeMap<String, String> {
        self.map.get_or_init(|| {
            self.entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
    }

    /// Drops the spare capacity the builder's inserts left.
    fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }
}

/// An item's text: stored inline when short (up to 24 bytes), else on the
/// heap (a `String` handed to the builder keeps its buffer). The item a group
/// is sliced as takes its group's id as its text: a copy that allocates
/// nothing for the usual short id (see [`ContextItem::group_unit`]).
type Text = CompactString;

impl ItemData {
    #[inline]
    fn metadata(&self) -> &BTreeMap<String, String> {
        self.ext.as_ref().map_or(&NO_METADATA, |e| e.metadata.map())
    }

    #[inline]
    fn metadata_entries(&self) -> &[MetaEntry] {
        self.ext.as_ref().map_or(&[], |e| &e.metadata.entries)
    }

    fn future_relevance_hint(&self) -> Option<f64> {
        self.ext.as_ref().and_then(|e| e.future_relevance_hint)
    }

    fn original_tokens(&self) -> Option<i64> {
        self.ext.as_ref().and_then(|e| e.original_tokens)
    }

    fn embedding(&self) -> Option<&[f32]> {
        self.ext.as_ref().and_then(|e| e.embedding.as_deref())
    }

    #[inline]
    fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    #[inline]
    fn variants(&self) -> &[ItemVariant] {
        self.ext.as_ref().map_or(&[], |e| &e.variants)
    }

    fn ext_mut(&mut self) -> &mut Extension {
        self.ext.get_or_insert_with(Box::default)
    }
}

impl ContextItem {
    /// Builds an item with default fields (kind `Message`, source `Chat`, unpinned).
    ///
    /// # Errors
    /// [`CupelError::EmptyContent`] when `content` is empty.
    pub fn new(content: impl Into<String>, tokens: i64) -> Result<Self, CupelError> {
        ContextItemBuilder::new(content, tokens).build()
    }

    /// Starts a [`ContextItemBuilder`].
    pub fn builder(content: impl Into<String>, tokens: i64) -> ContextItemBuilder {
        ContextItemBuilder::new(content, tokens)
    }

    /// A builder pre-filled with this item's fields, for making a modified copy.
    pub fn to_builder(&self) -> ContextItemBuilder {
        ContextItemBuilder {
            data: (*self.inner).clone(),
        }
    }

    /// The item a group of items is sliced and placed as (atomic groups,
    /// `spec/18-atomic-groups.md`): the group id of `first` as content
    /// (copied inline when it is at most 24 bytes), `tokens` of its own, the kind and
    /// source of `first`, the given timestamp and pinned flag, and nothing
    /// else (no priority, tags, metadata, group or variants). The pipeline
    /// makes one per group of two or more members on every run, so it is
    /// made directly rather than through the builder; for a group id of up
    /// to 24 bytes nothing is allocated but the item itself.
    ///
    /// ```
    /// use cupel_core::{ContextItem, ContextKind};
    /// let call = ContextItem::builder("lookup(42)", 5)
    ///     .kind(ContextKind::TOOL_OUTPUT)
    ///     .group("exchange-1")
    ///     .build()?;
    /// let unit = ContextItem::group_unit(&call, 25, None, false)?;
    /// assert_eq!((unit.content(), unit.tokens()), ("exchange-1", 25));
    /// assert_eq!(unit.kind(), &ContextKind::TOOL_OUTPUT);
    /// assert!(unit.tags().is_empty() && unit.group().is_none());
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when `first` has no group.
    pub fn group_unit(
        first: &ContextItem,
        tokens: i64,
        timestamp: Option<DateTime<Utc>>,
        pinned: bool,
    ) -> Result<ContextItem, CupelError> {
        let Some(id) = first.inner.group.clone() else {
            return Err(CupelError::InvalidArgument(
                "group_unit: the first member has no group".to_owned(),
            ));
        };
        Ok(ContextItem {
            inner: Arc::new(ItemData {
                content_hash: hash_content(&id),
                content: id,
                group: None,
                tokens,
                kind: first.kind().clone(),
                source: first.source().clone(),
                priority: None,
                tags: Vec::new(),
                timestamp,
                pinned,
                ext: None,
            }),
        })
    }

    /// The text of the item. Deduplication compares it byte for byte.
    #[inline]
    pub fn content(&self) -> &str {
        &self.inner.content
    }

    /// A 64-bit hash of [`content`](Self::content), taken once when the item
    /// was built (a fixed function of the bytes: equal contents have equal
    /// hashes in every process and run). Deduplication compares these and
    /// only compares the bytes of contents whose hashes are equal, so a
    /// run, and every re-run of the same items (budget simulation, sweeps),
    /// does not read each content again.
    ///
    /// ```
    /// use cupel_core::{ContextItem, ContextKind};
    /// let a = ContextItem::builder("same text", 3).build()?;
    /// let b = ContextItem::builder("same text", 5).kind(ContextKind::DOCUMENT).build()?;
    /// assert_eq!(a.content_hash(), b.content_hash());
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[inline]
    pub fn content_hash(&self) -> u64 {
        self.inner.content_hash
    }

    /// The caller-counted token cost. Negative values are excluded by the pipeline.
    #[inline]
    pub fn tokens(&self) -> i64 {
        self.inner.tokens
    }

    /// What the item is (default [`ContextKind::MESSAGE`]).
    #[inline]
    pub fn kind(&self) -> &ContextKind {
        &self.inner.kind
    }

    /// Where the item came from (default [`ContextSource::CHAT`]).
    #[inline]
    pub fn source(&self) -> &ContextSource {
        &self.inner.source
    }

    /// Optional importance; higher is more important (used by the priority scorer).
    #[inline]
    pub fn priority(&self) -> Option<i64> {
        self.inner.priority
    }

    /// Descriptive tags. Tag-overlap comparisons fold ASCII case.
    #[inline]
    pub fn tags(&self) -> &[Tag] {
        &self.inner.tags
    }

    /// Caller metadata, in key order. The pipeline never changes it; the
    /// `cupel:` key prefix is reserved for library conventions such as
    /// `cupel:trust`.
    ///
    /// The map is built on the first call (an item stores its entries more
    /// compactly): to read one value, [`metadata_value`](Self::metadata_value)
    /// is cheaper.
    #[inline]
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        self.inner.metadata()
    }

    /// The metadata value of `key`, read without building the
    /// [`metadata`](Self::metadata) map.
    ///
    /// ```
    /// use cupel_core::ContextItem;
    /// let item = ContextItem::builder("a row", 3).metadata("role", "user").build()?;
    /// assert_eq!(item.metadata_value("role"), Some("user"));
    /// assert_eq!(item.metadata_value("note"), None);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[inline]
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.inner.ext.as_ref().and_then(|e| e.metadata.get(key))
    }

    /// When the item was created or observed (UTC).
    #[inline]
    pub fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.inner.timestamp
    }

    /// Caller-provided hint of future relevance, conventionally in `[0, 1]`.
    pub fn future_relevance_hint(&self) -> Option<f64> {
        self.inner.future_relevance_hint()
    }

    /// The caller-supplied embedding of the content, if any (read by the
    /// vector similarity scorer; validated when the item was built: not
    /// empty, every component finite, not all zero).
    pub fn embedding(&self) -> Option<&[f32]> {
        self.inner.embedding()
    }

    /// Whether the item bypasses scoring and slicing and is always included.
    #[inline]
    pub fn pinned(&self) -> bool {
        self.inner.pinned
    }

    /// Token count before any external summarisation; informational only.
    pub fn original_tokens(&self) -> Option<i64> {
        self.inner.original_tokens()
    }

    /// The atomic group the item belongs to, if any (an extension to the
    /// specification: see `spec/18-atomic-groups.md`). Items sharing a group
    /// id are kept, dropped and placed together: the window holds all of
    /// them or none, adjacent and in input order. Ids compare byte for byte.
    #[inline]
    pub fn group(&self) -> Option<&str> {
        self.inner.group()
    }

    /// The item's cheaper forms, most complete first (an extension to the
    /// specification: see `spec/22-variants.md`). A slicer may put one of
    /// them in the window instead of the whole item; the window never holds
    /// two forms of one item. Variant `k` of this slice is form `k + 1`
    /// ([`as_variant`](Self::as_variant)); form 0 is the item itself.
    #[inline]
    pub fn variants(&self) -> &[ItemVariant] {
        self.inner.variants()
    }

    /// Whether the item has at least one variant.
    #[inline]
    pub fn has_variants(&self) -> bool {
        !self.inner.variants().is_empty()
    }

    /// Whether `self` and `other` are the very same allocation (cheap identity check).
    pub fn ptr_eq(&self, other: &ContextItem) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The address of the shared allocation, as a hashable identity: equal
    /// for clones ([`ptr_eq`](Self::ptr_eq)), different for items alive at
    /// the same time. Lets a caller map report entries back to input
    /// positions with one hash lookup each.
    ///
    /// ```
    /// use cupel_core::ContextItem;
    /// let a = ContextItem::new("same", 1)?;
    /// let b = ContextItem::new("same", 1)?;
    /// assert_eq!(a.ptr_id(), a.clone().ptr_id());
    /// assert_ne!(a.ptr_id(), b.ptr_id());
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn ptr_id(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
}

impl fmt::Debug for ContextItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &*self.inner;
        let mut s = f.debug_struct("ContextItem");
        s.field("content", &d.content)
            .field("tokens", &d.tokens)
            .field("kind", &d.kind)
            .field("source", &d.source);
        if let Some(p) = d.priority {
            s.field("priority", &p);
        }
        if !d.tags.is_empty() {
            s.field("tags", &d.tags);
        }
        if !d.metadata_entries().is_empty() {
            s.field("metadata", d.metadata());
        }
        if let Some(t) = d.timestamp {
            s.field("timestamp", &t);
        }
        if let Some(h) = d.future_relevance_hint() {
            s.field("future_relevance_hint", &h);
        }
        if d.pinned {
            s.field("pinned", &true);
        }
        if let Some(o) = d.original_tokens() {
            s.field("original_tokens", &o);
        }
        if let Some(g) = d.group() {
            s.field("group", &g);
        }
        if !d.variants().is_empty() {
            s.field("variants", &d.variants());
        }
        s.finish()
    }
}

/// Validating builder for [`ContextItem`]. Setters chain; [`build`](Self::build) validates.
#[derive(Clone, Debug)]
pub struct ContextItemBuilder {
    data: ItemData,
}

impl fmt::Debug for ItemData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemData")
            .field("content", &self.content)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl ContextItemBuilder {
    /// Starts an item with its two required fields.
    pub fn new(content: impl Into<String>, tokens: i64) -> Self {
        Self {
            data: ItemData {
                content: Text::from(content.into()),
                content_hash: 0,
                tokens,
                kind: ContextKind::MESSAGE,
                source: ContextSource::CHAT,
                priority: None,
                group: None,
                tags: Vec::new(),
                timestamp: None,
                pinned: false,
                ext: None,
            },
        }
    }

    /// Sets the content.
    #[inline]
    pub fn content(mut self, content: impl Into<String>) -> Self {
        self.data.content = Text::from(content.into());
        self
    }

    /// Sets the token count.
    #[inline]
    pub fn tokens(mut self, tokens: i64) -> Self {
        self.data.tokens = tokens;
        self
    }

    /// Sets the kind.
    #[inline]
    pub fn kind(mut self, kind: ContextKind) -> Self {
        self.data.kind = kind;
        self
    }

    /// Sets the source.
    #[inline]
    pub fn source(mut self, source: ContextSource) -> Self {
        self.data.source = source;
        self
    }

    /// Sets the priority.
    #[inline]
    pub fn priority(mut self, priority: i64) -> Self {
        self.data.priority = Some(priority);
        self
    }

    /// Sets or clears the priority.
    #[inline]
    pub fn priority_opt(mut self, priority: Option<i64>) -> Self {
        self.data.priority = priority;
        self
    }

    /// Appends one tag.
    #[inline]
    pub fn tag(mut self, tag: impl Into<Tag>) -> Self {
        self.data.tags.push(tag.into());
        self
    }

    /// Replaces the tags.
    #[inline]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Tag>,
    {
        self.data.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Inserts one metadata entry (replacing an earlier value for the key).
    #[inline]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.put_metadata(key.into(), value.into());
        self
    }

    /// [`metadata`](Self::metadata) from borrowed strings: a key and a
    /// value of up to 24 bytes each are stored without allocating (an
    /// item built with metadata thus allocates its extension and one
    /// vector of entries, however many short entries it has).
    ///
    /// ```
    /// use cupel_core::ContextItem;
    /// let item = ContextItem::builder("#3 user: hello", 4)
    ///     .metadata_str("position", "3")
    ///     .metadata_str("role", "user")
    ///     .build()?;
    /// assert_eq!(item.metadata()["position"], "3");
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[inline]
    pub fn metadata_str(mut self, key: &str, value: &str) -> Self {
        self.put_metadata_str(key, value);
        self
    }

    // The metadata setters' work, by reference: the setters, small enough
    // to inline, then move the builder (176 bytes) once less per call.
    fn put_metadata(&mut self, key: String, value: String) {
        let entry = (CompactString::from(key), CompactString::from(value));
        self.data.ext_mut().metadata.insert(entry);
    }

    #[inline]
    fn put_metadata_str(&mut self, key: &str, value: &str) {
        let entry = (CompactString::new(key), CompactString::new(value));
        self.data.ext_mut().metadata.insert(entry);
    }

    /// Replaces the metadata map.
    #[inline]
    pub fn metadata_map(mut self, metadata: BTreeMap<String, String>) -> Self {
        if metadata.is_empty() {
            if let Some(e) = &mut self.data.ext {
                e.metadata = Metadata::default();
            }
        } else {
            self.data.ext_mut().metadata = Metadata::from_map(metadata);
        }
        self
    }

    /// Sets the timestamp.
    #[inline]
    pub fn timestamp(mut self, timestamp: DateTime<Utc>) -> Self {
        self.data.timestamp = Some(timestamp);
        self
    }

    /// Sets or clears the timestamp.
    #[inline]
    pub fn timestamp_opt(mut self, timestamp: Option<DateTime<Utc>>) -> Self {
        self.data.timestamp = timestamp;
        self
    }

    /// Sets the future-relevance hint. Any `f64` is accepted; the reflexive
    /// scorer maps non-finite hints to 0 and clamps the rest into `[0, 1]`.
    #[inline]
    pub fn future_relevance_hint(mut self, hint: f64) -> Self {
        self.data.ext_mut().future_relevance_hint = Some(hint);
        self
    }

    /// Sets or clears the future-relevance hint.
    #[inline]
    pub fn future_relevance_hint_opt(mut self, hint: Option<f64>) -> Self {
        match hint {
            Some(_) => self.data.ext_mut().future_relevance_hint = hint,
            None => {
                if let Some(e) = &mut self.data.ext {
                    e.future_relevance_hint = None;
                }
            }
        }
        self
    }

    /// Sets the item's embedding (a vector from the caller's embedding
    /// model; [`build`](Self::build) checks it).
    #[inline]
    pub fn embedding(mut self, embedding: impl Into<Arc<[f32]>>) -> Self {
        self.data.ext_mut().embedding = Some(embedding.into());
        self
    }

    /// Sets or clears the item's embedding.
    #[inline]
    pub fn embedding_opt(mut self, embedding: Option<Vec<f32>>) -> Self {
        match embedding {
            Some(v) => self.embedding(v),
            None => {
                if let Some(e) = &mut self.data.ext {
                    e.embedding = None;
                }
                self
            }
        }
    }

    /// Pins (or unpins) the item.
    #[inline]
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.data.pinned = pinned;
        self
    }

    /// Sets the pre-summarisation token count.
    #[inline]
    pub fn original_tokens(mut self, tokens: i64) -> Self {
        self.data.ext_mut().original_tokens = Some(tokens);
        self
    }

    /// Sets or clears the pre-summarisation token count.
    #[inline]
    pub fn original_tokens_opt(mut self, tokens: Option<i64>) -> Self {
        match tokens {
            Some(_) => self.data.ext_mut().original_tokens = tokens,
            None => {
                if let Some(e) = &mut self.data.ext {
                    e.original_tokens = None;
                }
            }
        }
        self
    }

    /// Puts the item in an atomic group (see [`ContextItem::group`]).
    ///
    /// ```
    /// use cupel_core::ContextItem;
    /// let call = ContextItem::builder("call: get_weather(Paris)", 12).group("call-1").build()?;
    /// assert_eq!(call.group(), Some("call-1"));
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[inline]
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.data.group = Some(CompactString::from(group.into()));
        self
    }

    /// Sets or clears the group.
    #[inline]
    pub fn group_opt(mut self, group: Option<String>) -> Self {
        self.data.group = group.map(CompactString::from);
        self
    }

    /// Appends a cheaper form of the item (see [`ContextItem::variants`]);
    /// add them most complete first.
    ///
    /// ```
    /// use cupel_core::{ContextItem, ItemVariant};
    /// let item = ContextItem::builder("a long tool log", 900)
    ///     .variant(ItemVariant::new("the log's first and last lines", 120))
    ///     .build()?;
    /// assert_eq!(item.variants()[0].tokens(), 120);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[inline]
    pub fn variant(mut self, variant: ItemVariant) -> Self {
        let ext = self.data.ext_mut();
        let mut all = std::mem::take(&mut ext.variants).into_vec();
        all.push(variant);
        ext.variants = all.into_boxed_slice();
        self
    }

    /// Replaces the variants.
    pub fn variants<I: IntoIterator<Item = ItemVariant>>(mut self, variants: I) -> Self {
        let variants: Box<[ItemVariant]> = variants.into_iter().collect();
        if variants.is_empty() {
            return self.clear_variants();
        }
        self.data.ext_mut().variants = variants;
        self
    }

    /// Removes every variant.
    #[inline]
    pub fn clear_variants(mut self) -> Self {
        if let Some(e) = &mut self.data.ext {
            e.variants = Box::default();
        }
        self
    }

    /// Validates and builds the item.
    ///
    /// # Errors
    /// [`CupelError::EmptyContent`] when the content is empty;
    /// [`CupelError::InvalidArgument`] when the group id is empty;
    /// [`CupelError::InvalidVariant`] when a variant has empty content,
    /// negative tokens, more tokens than the form before it (the item
    /// itself for the first variant), or a value outside `[0, 1]`. (Negative token
    /// counts are accepted here: the pipeline reports them as
    /// `NegativeTokens` exclusions, as the specification requires.)
    pub fn build(mut self) -> Result<ContextItem, CupelError> {
        if self.data.content.is_empty() {
            return Err(CupelError::EmptyContent);
        }
        self.data.content_hash = hash_content(&self.data.content);
        if self.data.group() == Some("") {
            return Err(CupelError::InvalidArgument(
                "an item's group id must not be empty (omit it for no group)".into(),
            ));
        }
        if let Some(e) = self.data.embedding() {
            crate::check_embedding(e, "item")?;
        }
        let mut previous = self.data.tokens;
        for (k, v) in self.data.variants().iter().enumerate() {
            v.check(k + 1, previous)?;
            previous = v.tokens();
        }
        if self.data.ext.as_ref().is_some_and(|e| e.is_empty()) {
            self.data.ext = None;
        }
        if let Some(e) = &mut self.data.ext {
            e.metadata.shrink_to_fit();
        }
        // An item lives as long as its caller keeps it: drop the spare
        // capacity that `format!` and pushes leave (often a third of the
        // content's allocation), once, here.
        self.data.content.shrink_to_fit();
        self.data.tags.shrink_to_fit();
        Ok(ContextItem {
            inner: Arc::new(self.data),
        })
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::*;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct ItemRef<'a> {
        content: &'a str,
        tokens: i64,
        kind: &'a ContextKind,
        source: &'a ContextSource,
        #[serde(skip_serializing_if = "Option::is_none")]
        priority: Option<i64>,
        #[serde(skip_serializing_if = "<[Tag]>::is_empty")]
        tags: &'a [Tag],
        #[serde(skip_serializing_if = "MetaRef::is_empty")]
        metadata: MetaRef<'a>,
        #[serde(
            skip_serializing_if = "Option::is_none",
            with = "crate::timestamp::serde_timestamp::option"
        )]
        timestamp: Option<DateTime<Utc>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        future_relevance_hint: Option<f64>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pinned: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        original_tokens: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        group: Option<&'a str>,
        #[serde(skip_serializing_if = "<[ItemVariant]>::is_empty")]
        variants: &'a [ItemVariant],
        #[serde(skip_serializing_if = "Option::is_none")]
        embedding: Option<&'a [f32]>,
    }

    /// The metadata entries, written as the map they make (in key order).
    struct MetaRef<'a>(&'a [MetaEntry]);

    impl MetaRef<'_> {
        fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    impl Serialize for MetaRef<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
    }

    impl Serialize for ContextItem {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let d = &*self.inner;
            ItemRef {
                content: &d.content,
                tokens: d.tokens,
                kind: &d.kind,
                source: &d.source,
                priority: d.priority,
                tags: &d.tags,
                metadata: MetaRef(d.metadata_entries()),
                timestamp: d.timestamp,
                future_relevance_hint: d.future_relevance_hint(),
                pinned: d.pinned,
                original_tokens: d.original_tokens(),
                group: d.group(),
                variants: d.variants(),
                embedding: d.embedding(),
            }
            .serialize(s)
        }
    }

    /// Read through the item format's one schema, [`crate::ItemRecord`],
    /// with the token counts required.
    impl<'de> Deserialize<'de> for ContextItem {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            crate::ItemRecord::<i64>::deserialize(d)?
                .into_item()
                .map_err(serde::de::Error::custom)
        }
    }
}

/// The hash behind [`ContextItem::content_hash`]: foldhash with a fixed
/// seed, so that it is the same in every process.
fn hash_content(content: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6375_7065_6c5f_6964).hash_one(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_content_is_rejected() {
        assert_eq!(ContextItem::new("", 1), Err(CupelError::EmptyContent));
        assert_eq!(
            ContextItem::builder("x", 1).content("").build(),
            Err(CupelError::EmptyContent)
        );
    }

    #[test]
    fn defaults_follow_the_spec() {
        let item = ContextItem::new("hello", 3).unwrap();
        assert_eq!(item.kind(), &ContextKind::MESSAGE);
        assert_eq!(item.source(), &ContextSource::CHAT);
        assert_eq!(item.priority(), None);
        assert!(item.tags().is_empty());
        assert!(item.metadata().is_empty());
        assert_eq!(item.timestamp(), None);
        assert_eq!(item.future_relevance_hint(), None);
        assert!(!item.pinned());
        assert_eq!(item.original_tokens(), None);
        assert_eq!(item.group(), None);
    }

    #[test]
    fn group_is_kept_and_an_empty_id_is_rejected() {
        let a = ContextItem::builder("call", 3).group("g1").build().unwrap();
        assert_eq!(a.group(), Some("g1"));
        assert_eq!(
            a.to_builder().group_opt(None).build().unwrap().group(),
            None
        );
        assert!(matches!(
            ContextItem::builder("call", 3).group("").build(),
            Err(CupelError::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_group_unit_takes_its_group_id_without_allocating() {
        let call = ContextItem::builder("lookup(42)", 5)
            .group("exchange-1")
            .timestamp(DateTime::<Utc>::UNIX_EPOCH)
            .build()
            .unwrap();
        // A short id (10 bytes, at most 24) is stored in the item itself,
        // and so is the unit's copy of it.
        assert!(!call.inner.group.as_ref().unwrap().is_heap_allocated());
        let unit = ContextItem::group_unit(&call, 25, None, true).unwrap();
        assert_eq!(unit.content(), "exchange-1");
        assert!(!unit.inner.content.is_heap_allocated());
        assert_eq!(unit.content_hash(), hash_content("exchange-1"));
        assert_eq!(
            (unit.tokens(), unit.pinned(), unit.timestamp()),
            (25, true, None)
        );
        // Equal to the same item built from an owned string.
        let built = ContextItem::builder("exchange-1", 25)
            .pinned(true)
            .build()
            .unwrap();
        assert!(unit == built);
        // A long id (30 bytes) keeps its text too.
        let long = "x".repeat(30);
        let call = ContextItem::builder("lookup(43)", 5)
            .group(long.as_str())
            .build()
            .unwrap();
        let unit = ContextItem::group_unit(&call, 5, None, false).unwrap();
        assert_eq!(
            (call.group(), unit.content()),
            (Some(long.as_str()), long.as_str())
        );
        let lone = ContextItem::new("no group", 1).unwrap();
        assert!(matches!(
            ContextItem::group_unit(&lone, 1, None, false),
            Err(CupelError::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_long_content_keeps_the_callers_buffer_and_a_short_one_is_inline() {
        let text = "a content longer than twenty-four bytes".to_string();
        let at = text.as_ptr();
        let item = ContextItem::new(text, 3).unwrap();
        // Built at its exact length, the String's buffer is the item's.
        assert_eq!(item.content().as_ptr(), at);
        let short = ContextItem::new("short", 1).unwrap();
        assert!(!short.inner.content.is_heap_allocated());
    }

    #[test]
    fn item_data_stays_within_its_size() {
        // 8 tokens + 8 ext + 24 group + 1 pinned (+3) + 12 timestamp
        // + 8 hash + 16 priority + 24 kind + 24 tags + 24 source + 24 content
        // = 176 bytes.
        assert_eq!(std::mem::size_of::<ItemData>(), 176);
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<String>());
    }

    #[test]
    fn metadata_keeps_key_order_and_the_last_value_whatever_the_setter() {
        // Keys set out of order, one twice: the map is sorted by key and
        // holds the later value ("b" = "2", not "1").
        let item = ContextItem::builder("x", 1)
            .metadata_str("c", "3")
            .metadata("b", "1")
            .metadata_str("a", "0")
            .metadata_str("b", "2")
            .build()
            .unwrap();
        let keys: Vec<&str> = item.metadata().keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(item.metadata_value("b"), Some("2"));
        assert_eq!(item.metadata()["b"], "2");
        // The same entries from a map make an equal item.
        let map: BTreeMap<String, String> = [("a", "0"), ("b", "2"), ("c", "3")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let same = ContextItem::builder("x", 1)
            .metadata_map(map)
            .build()
            .unwrap();
        assert_eq!(item, same);
        assert_eq!(same.metadata_value("c"), Some("3"));
        // A copy changed after the map was read lends the changed map.
        let changed = item.to_builder().metadata_str("a", "9").build().unwrap();
        assert_eq!(changed.metadata()["a"], "9");
        assert_ne!(changed, item);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn metadata_is_written_as_a_map_in_key_order() {
        let item = ContextItem::builder("x", 1)
            .metadata_str("role", "user")
            .metadata_str("position", "7")
            .build()
            .unwrap();
        let json = serde_json::to_string(&item).unwrap();
        assert!(
            json.contains(r#""metadata":{"position":"7","role":"user"}"#),
            "{json}"
        );
        let back: ContextItem = serde_json::from_str(&json).unwrap();
        assert_eq!(back, item);
    }

    #[test]
    fn long_metadata_values_and_many_entries_are_kept() {
        // 30 bytes: over the 24 stored inline; five entries: over the three.
        let long = "v".repeat(30);
        let mut b = ContextItem::builder("x", 1);
        for k in ["e", "d", "c", "b", "a"] {
            b = b.metadata_str(k, &long);
        }
        let item = b.build().unwrap();
        assert_eq!(item.metadata().len(), 5);
        assert!(item.metadata().values().all(|v| *v == long));
        assert_eq!(item.metadata_value("a"), Some(long.as_str()));
        // An emptied map leaves no extension behind.
        let bare = item
            .to_builder()
            .metadata_map(BTreeMap::new())
            .build()
            .unwrap();
        assert!(bare.metadata().is_empty() && bare.inner.ext.is_none());
    }

    #[test]
    fn negative_tokens_are_allowed_at_construction() {
        assert_eq!(ContextItem::new("neg", -5).unwrap().tokens(), -5);
    }

    #[test]
    fn clone_shares_and_to_builder_copies() {
        let a = ContextItem::builder("a", 1)
            .tag("x")
            .metadata("k", "v")
            .build()
            .unwrap();
        let b = a.clone();
        assert!(a.ptr_eq(&b));
        let c = a.to_builder().pinned(true).build().unwrap();
        assert!(!a.ptr_eq(&c));
        assert!(c.pinned() && !a.pinned());
        assert_eq!(c.metadata().get("k").map(String::as_str), Some("v"));
    }
}
