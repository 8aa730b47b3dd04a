//! [`PolicyConfig`]: a declarative, serde-readable description of a [`Policy`](crate::Policy).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use cupel_core::strict::{self, KeyPath, Located, field_names, line_col, one_line};
use cupel_core::{
    ConfigError, ContextItem, CupelError, HeadTail, OverflowStrategy, Placeholder, TokenCounter,
    VariantGenerator, with_generated_variants,
};
use cupel_slicers::ScarcityBehavior;

use crate::names::{ComponentType, PlacerType, ScorerType, SlicerType};
use crate::registry::ComponentRegistry;

fn default_weight() -> f64 {
    1.0
}

fn default_true() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_default_overflow(o: &OverflowStrategy) -> bool {
    *o == OverflowStrategy::Throw
}

/// A whole policy: scorers, slicer (with its keys), placer, overflow and deduplication.
///
/// The schema is the `[config]` table of the conformance vectors, so a policy
/// file, a CLI input's `[policy]` table, a preset and a vector all read the
/// same. On the wire the slicer's keys sit next to `slicer` in the same table:
///
/// ```toml
/// slicer = "knapsack"          # greedy | knapsack | quota | count_quota | count_constrained_knapsack
/// bucket_size = 100            # slicer keys sit next to `slicer`
/// placer = "u-shaped"          # chronological | u-shaped
/// deduplication = true         # default true
/// overflow_strategy = "throw"  # throw (default) | truncate | proceed
///
/// [[scorers]]                  # one entry: that scorer; several: a weighted composite
/// type = "reflexive"
/// weight = 3.0
///
/// [[scorers]]
/// type = "kind"                # no weights given: the spec's default kind weights
/// weight = 1.0
/// ```
///
/// A type name that is not built in (`type = "keyword"`, `slicer = "mine"`,
/// `placer = "mine"`) names a custom component: [`build_with`](Self::build_with)
/// resolves it through a [`ComponentRegistry`], handing the constructor the
/// component's own table (`params`, `slicer_params`, `placer_params`);
/// [`build`](Self::build) knows only the built-ins.
///
/// Read files with [`PolicyConfig::from_toml_str`] / [`PolicyConfig::from_json_str`]:
/// they reject unknown keys and keys that do not apply to the component they
/// sit on, naming the key. Plain `serde` deserialisation ignores unknown keys
/// (forward compatibility, as the conformance format requires).
///
/// ```
/// use cupel_pipeline::{PlacerType, PolicyConfig};
/// let cfg = PolicyConfig::from_toml_str(
///     "placer = \"u-shaped\"\n[[scorers]]\ntype = \"reflexive\"\n",
/// )?;
/// assert_eq!(cfg.placer, PlacerType::UShaped);
/// let policy = cfg.build()?;
/// assert!(policy.deduplication());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawPolicy", into = "RawPolicy")]
#[non_exhaustive]
pub struct PolicyConfig {
    /// One entry means that scorer alone (its weight is irrelevant); several
    /// mean a [composite](ScorerType::Composite) of them with their weights.
    pub scorers: Vec<ScorerConfig>,
    /// The slicer type and its keys.
    pub slicer: SlicerConfig,
    /// The placer (default `chronological`): built in, or registered in a
    /// [`ComponentRegistry`].
    pub placer: ComponentType<PlacerType>,
    /// A custom placer's own table (`placer_params`), handed to its constructor.
    pub placer_params: Option<serde_json::Value>,
    /// Whether byte-identical contents are deduplicated (default `true`).
    pub deduplication: bool,
    /// `throw` (default), `truncate` or `proceed` on the wire.
    pub overflow_strategy: OverflowStrategy,
    /// Variant generators the policy declares (`[variants]`; an extension,
    /// `spec/22-variants.md`). Building the [`Policy`](crate::Policy) does
    /// not use them: a caller with a token counter applies them to its items
    /// with [`with_variants`](Self::with_variants).
    pub variants: Option<VariantsConfig>,
}

/// The `[variants]` table of a policy: which cheaper forms to generate for
/// the items (spec chapter 22). Forms are added in this order: head + tail,
/// then the placeholder; each only if smaller than the form before it.
///
/// ```
/// use cupel_pipeline::PolicyConfig;
/// let cfg = PolicyConfig::from_toml_str(
///     "[[scorers]]\ntype = \"reflexive\"\n[variants]\nhead_tail = 300\nplaceholder = \"[{tokens} tokens omitted]\"\nmin_tokens = 1000\n",
/// )?;
/// let v = cfg.variants.as_ref().expect("declared");
/// assert_eq!((v.head_tail, v.min_tokens), (Some(300), Some(1_000)));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VariantsConfig {
    /// Head + tail truncation to this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_tail: Option<i64>,
    /// The head's share of the kept tokens (default 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_share: Option<f64>,
    /// A placeholder template (`{tokens}`, `{kind}`, `{source}`, `{meta:KEY}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Only items of more than this many tokens get variants (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_tokens: Option<i64>,
}

impl VariantsConfig {
    /// The declared generators, in order (head + tail, then placeholder).
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] for a head + tail size `<= 0`, a head
    /// share outside `[0, 1]` or an invalid template.
    pub fn generators(&self) -> Result<Vec<Box<dyn VariantGenerator>>, CupelError> {
        let mut out: Vec<Box<dyn VariantGenerator>> = Vec::new();
        if let Some(size) = self.head_tail {
            let mut h = HeadTail::new(size)?;
            if let Some(share) = self.head_share {
                h = h.head_share(share)?;
            }
            out.push(Box::new(h));
        }
        if let Some(t) = &self.placeholder {
            out.push(Box::new(Placeholder::parse(t)?));
        }
        Ok(out)
    }
}

/// The flat wire shape of [`PolicyConfig`] (serde's `flatten` would hide unknown keys).
#[derive(Clone, Serialize, Deserialize)]
#[serde(expecting = "a policy table (scorers, slicer, placer, ...)")]
struct RawPolicy {
    scorers: Vec<ScorerConfig>,
    #[serde(default = "default_slicer")]
    slicer: ComponentType<SlicerType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slicer_params: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bucket_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_table_cells: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_table_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    inner_slicer: Option<SlicerType>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    quotas: Vec<QuotaConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    entries: Vec<CountQuotaConfig>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "scarcity_wire"
    )]
    scarcity_behavior: Option<ScarcityBehavior>,
    #[serde(default = "default_placer")]
    placer: ComponentType<PlacerType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    placer_params: Option<serde_json::Value>,
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    deduplication: bool,
    #[serde(
        default,
        skip_serializing_if = "is_default_overflow",
        with = "overflow_wire"
    )]
    overflow_strategy: OverflowStrategy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    variants: Option<VariantsConfig>,
}

impl From<RawPolicy> for PolicyConfig {
    fn from(r: RawPolicy) -> Self {
        PolicyConfig {
            scorers: r.scorers,
            slicer: SlicerConfig {
                slicer: r.slicer,
                slicer_params: r.slicer_params,
                bucket_size: r.bucket_size,
                max_table_cells: r.max_table_cells,
                max_table_bytes: r.max_table_bytes,
                inner_slicer: r.inner_slicer,
                quotas: r.quotas,
                entries: r.entries,
                scarcity_behavior: r.scarcity_behavior,
            },
            placer: r.placer,
            placer_params: r.placer_params,
            deduplication: r.deduplication,
            overflow_strategy: r.overflow_strategy,
            variants: r.variants,
        }
    }
}

impl From<PolicyConfig> for RawPolicy {
    fn from(c: PolicyConfig) -> Self {
        RawPolicy {
            scorers: c.scorers,
            slicer: c.slicer.slicer,
            slicer_params: c.slicer.slicer_params,
            bucket_size: c.slicer.bucket_size,
            max_table_cells: c.slicer.max_table_cells,
            max_table_bytes: c.slicer.max_table_bytes,
            inner_slicer: c.slicer.inner_slicer,
            quotas: c.slicer.quotas,
            entries: c.slicer.entries,
            scarcity_behavior: c.slicer.scarcity_behavior,
            placer: c.placer,
            placer_params: c.placer_params,
            deduplication: c.deduplication,
            overflow_strategy: c.overflow_strategy,
            variants: c.variants,
        }
    }
}

fn default_placer() -> ComponentType<PlacerType> {
    ComponentType::Builtin(PlacerType::Chronological)
}

/// Former name of the configuration's overflow strategy; the core enum is used now.
#[deprecated(since = "0.2.0", note = "use `cupel_core::OverflowStrategy`")]
pub type OverflowName = OverflowStrategy;

/// Former name of the configuration's scarcity behaviour; the slicers' enum is used now.
#[deprecated(since = "0.2.0", note = "use `cupel_slicers::ScarcityBehavior`")]
pub type ScarcityName = ScarcityBehavior;

/// The configuration spelling of an overflow strategy: `throw`, `truncate` or `proceed`
/// (`unknown` for a strategy added after this version).
pub fn overflow_strategy_name(o: OverflowStrategy) -> &'static str {
    match o {
        OverflowStrategy::Throw => "throw",
        OverflowStrategy::Truncate => "truncate",
        OverflowStrategy::Proceed => "proceed",
        _ => "unknown",
    }
}

/// The configuration spelling of a scarcity behaviour: `degrade` or `throw`
/// (`unknown` for a behaviour added after this version).
pub fn scarcity_behavior_name(b: ScarcityBehavior) -> &'static str {
    match b {
        ScarcityBehavior::Degrade => "degrade",
        ScarcityBehavior::Throw => "throw",
        _ => "unknown",
    }
}

/// `overflow_strategy` on the wire: lowercase out, any ASCII case in.
mod overflow_wire {
    use cupel_core::OverflowStrategy;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(o: &OverflowStrategy, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(super::overflow_strategy_name(*o))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<OverflowStrategy, D::Error> {
        let s = String::deserialize(d)?;
        match s.to_ascii_lowercase().as_str() {
            "throw" => Ok(OverflowStrategy::Throw),
            "truncate" => Ok(OverflowStrategy::Truncate),
            "proceed" => Ok(OverflowStrategy::Proceed),
            _ => Err(serde::de::Error::custom(format!(
                "unknown overflow_strategy `{s}` (expected one of: throw, truncate, proceed)"
            ))),
        }
    }
}

/// `scarcity_behavior` on the wire (an `Option`): lowercase out, any ASCII case in.
mod scarcity_wire {
    use cupel_slicers::ScarcityBehavior;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        b: &Option<ScarcityBehavior>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match b {
            Some(b) => s.serialize_str(super::scarcity_behavior_name(*b)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<ScarcityBehavior>, D::Error> {
        let s = String::deserialize(d)?;
        match s.to_ascii_lowercase().as_str() {
            "degrade" => Ok(Some(ScarcityBehavior::Degrade)),
            "throw" => Ok(Some(ScarcityBehavior::Throw)),
            _ => Err(serde::de::Error::custom(format!(
                "unknown scarcity_behavior `{s}` (expected one of: degrade, throw)"
            ))),
        }
    }
}

/// A slicer and its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SlicerConfig {
    /// The slicer type (default `greedy`): built in, or registered in a
    /// [`ComponentRegistry`].
    #[serde(default = "default_slicer")]
    pub slicer: ComponentType<SlicerType>,
    /// A custom slicer's own table (`slicer_params`), handed to its constructor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slicer_params: Option<serde_json::Value>,
    /// Knapsack bucket size (`knapsack`, `count_constrained_knapsack`; default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<i64>,
    /// Optional second knapsack guard, in keep-table cells (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_cells: Option<u64>,
    /// Knapsack guard in bytes of keep table (default 64 MiB,
    /// [`DEFAULT_MAX_TABLE_BYTES`](cupel_core::DEFAULT_MAX_TABLE_BYTES)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_table_bytes: Option<u64>,
    /// The slicer a decorator delegates to (`quota`, `count_quota`; default `greedy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_slicer: Option<SlicerType>,
    /// Percentage quotas (`quota`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<QuotaConfig>,
    /// Count quotas (`count_quota`, `count_constrained_knapsack`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<CountQuotaConfig>,
    /// `degrade` (default) or `throw` on the wire (`count_quota`, `count_constrained_knapsack`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "scarcity_wire"
    )]
    pub scarcity_behavior: Option<ScarcityBehavior>,
}

fn default_slicer() -> ComponentType<SlicerType> {
    ComponentType::Builtin(SlicerType::Greedy)
}

impl SlicerConfig {
    /// A slicer of `slicer` type with every key at its default.
    pub fn new(slicer: impl Into<ComponentType<SlicerType>>) -> Self {
        Self {
            slicer: slicer.into(),
            slicer_params: None,
            bucket_size: None,
            max_table_cells: None,
            max_table_bytes: None,
            inner_slicer: None,
            quotas: Vec::new(),
            entries: Vec::new(),
            scarcity_behavior: None,
        }
    }
}

/// One percentage quota of a `quota` slicer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QuotaConfig {
    /// The kind (case-insensitive).
    pub kind: String,
    /// Minimum share of the target, in percent (default 0).
    #[serde(default)]
    pub require: f64,
    /// Maximum share of the target, in percent (default 100).
    #[serde(default = "hundred")]
    pub cap: f64,
}

fn hundred() -> f64 {
    100.0
}

/// One count quota of a `count_quota` / `count_constrained_knapsack` slicer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CountQuotaConfig {
    /// The kind (case-insensitive).
    pub kind: String,
    /// Items of this kind committed first (default 0).
    #[serde(default)]
    pub require_count: i64,
    /// Most items of this kind in the result.
    pub cap_count: i64,
}

/// A scorer and its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScorerConfig {
    /// The scorer type (the `type` key on the wire): built in, or registered
    /// in a [`ComponentRegistry`].
    #[serde(rename = "type")]
    pub scorer_type: ComponentType<ScorerType>,
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// `kind`: use the spec's default weights (also the behaviour when no weights are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_default_weights: Option<bool>,
    /// `kind`: custom weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<KindWeightConfig>>,
    /// `tag`: tag weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_weights: Option<Vec<TagWeightConfig>>,
    /// `tag`: fold ASCII case when looking tags up (default `false`: case-sensitive, as the spec says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_insensitive_tags: Option<bool>,
    /// `composite`: the children (also accepted as `scorers`).
    #[serde(
        default,
        alias = "scorers",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nested_children"
    )]
    pub children: Option<Vec<ScorerConfig>>,
    /// `scaled`: the inner scorer, by name or as a full scorer table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_scorer: Option<InnerScorer>,
    /// `decay`: the clock's fixed "now"; absent means the system clock.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "cupel_core::serde_timestamp::option"
    )]
    pub reference_time: Option<DateTime<Utc>>,
    /// `decay`: score of items without a timestamp (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub null_timestamp_score: Option<f64>,
    /// `decay`: the curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<CurveConfig>,
    /// `metadata_trust`: score when `cupel:trust` is missing or unusable (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_score: Option<f64>,
    /// `metadata_key`: the metadata key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `metadata_key`: the value to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `metadata_key`: the multiplier for matching items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<f64>,
    /// `bm25`: term-frequency saturation (default 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k1: Option<f64>,
    /// `bm25`: length normalisation (default 0.75).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    /// `bm25`: English Snowball stemming (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stemming: Option<bool>,
    /// `bm25`: the share of a hit's score its previous and next item take
    /// at least (default 0: no neighbour lift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbours: Option<f64>,
    /// `bm25`: the metadata key grouping items for the neighbour lift (a
    /// session); absent: all items are one group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_key: Option<String>,
    /// `bm25`: a query of the policy's own, used by runs that carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `bm25`: the weight of pseudo-relevance feedback terms, in `[0, 1]`
    /// (default 0: off; 0.3 when only `feedback_docs` or `feedback_terms`
    /// is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<f64>,
    /// `bm25`: how many first-pass items vote for feedback terms
    /// (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_docs: Option<usize>,
    /// `bm25`: how many feedback terms join the query (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_terms: Option<usize>,
    /// `bm25`: the group prior's weight, in `[0, 1]` (default 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_weight: Option<f64>,
    /// `hybrid`: how the children are fused, `rrf` (reciprocal-rank
    /// fusion, the default) or `weighted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionConfig>,
    /// `hybrid` with `fusion = "rrf"`: the rank offset k (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrf_k: Option<f64>,
    /// A custom scorer's own table (`params`), handed to its constructor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// How a `hybrid` scorer fuses its children (`fusion` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FusionConfig {
    /// Reciprocal-rank fusion (`rrf`).
    Rrf,
    /// The weighted mean of the children's scores (`weighted`).
    Weighted,
}

impl ScorerConfig {
    /// A scorer of type `scorer_type`, weight 1.0, every key at its default.
    pub fn new(scorer_type: impl Into<ComponentType<ScorerType>>) -> Self {
        Self {
            scorer_type: scorer_type.into(),
            weight: 1.0,
            use_default_weights: None,
            weights: None,
            tag_weights: None,
            case_insensitive_tags: None,
            children: None,
            inner_scorer: None,
            reference_time: None,
            null_timestamp_score: None,
            curve: None,
            default_score: None,
            key: None,
            value: None,
            boost: None,
            k1: None,
            b: None,
            stemming: None,
            neighbours: None,
            group_key: None,
            query: None,
            feedback: None,
            feedback_docs: None,
            feedback_terms: None,
            group_weight: None,
            fusion: None,
            rrf_k: None,
            params: None,
        }
    }

    /// Sets the weight.
    pub fn weight(mut self, weight: f64) -> Self {
        self.weight = weight;
        self
    }
}

/// A `kind` scorer weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KindWeightConfig {
    /// The kind (case-insensitive).
    pub kind: String,
    /// Its score.
    pub weight: f64,
}

/// A `tag` scorer weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TagWeightConfig {
    /// The tag.
    pub tag: String,
    /// Its weight.
    pub weight: f64,
}

/// The inner scorer of a `scaled` scorer: a bare type name or a full table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InnerScorer {
    /// `inner_scorer = "priority"`.
    Name(ScorerType),
    /// `inner_scorer = { type = "kind", weights = [...] }`.
    Config(Box<ScorerConfig>),
}

// Not `#[serde(untagged)]` on input: untagged buffering would hide unknown
// keys of an inline table from the strict parser.
impl<'de> Deserialize<'de> for InnerScorer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _level = NestingGuard::enter()?;
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = InnerScorer;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a scorer type name or a scorer table")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<InnerScorer, E> {
                ScorerType::from_name(s)
                    .map(InnerScorer::Name)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "unknown scorer `{s}` (expected one of: {})",
                            ScorerType::expected()
                        ))
                    })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<InnerScorer, A::Error> {
                ScorerConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|c| InnerScorer::Config(Box::new(c)))
            }
        }
        d.deserialize_any(V)
    }
}

/// How deep scorers may nest: a top-level scorer is level 1, each
/// `children` / `inner_scorer` hop adds one. Deeper configurations are
/// rejected while they are read (serde) and by [`PolicyConfig::check_keys`]
/// and the `build` methods, with [`CupelError::PipelineConfig`]; the check
/// costs time linear in the number of scorers, and nothing recurses deeper
/// than this limit (spec H-2).
pub const MAX_SCORER_DEPTH: usize = 64;

std::thread_local! {
    /// `children` / `inner_scorer` hops entered by the deserializer on this thread.
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One `children` / `inner_scorer` hop being deserialized; refuses to go
/// deeper than [`MAX_SCORER_DEPTH`] before serde recurses any further.
struct NestingGuard;

impl NestingGuard {
    fn enter<E: serde::de::Error>() -> Result<Self, E> {
        let hops = NESTING.with(|n| {
            let hops = n.get() + 1;
            n.set(hops);
            hops
        });
        let guard = NestingGuard; // undoes the increment on every path
        if hops >= MAX_SCORER_DEPTH {
            return Err(E::custom(too_deep()));
        }
        Ok(guard)
    }
}

impl Drop for NestingGuard {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

fn too_deep() -> String {
    format!(
        "scorers nest more than {MAX_SCORER_DEPTH} levels deep (`children` / `inner_scorer`); \
         the limit is {MAX_SCORER_DEPTH}"
    )
}

fn nested_children<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<ScorerConfig>>, D::Error> {
    let _level = NestingGuard::enter()?;
    Option::<Vec<ScorerConfig>>::deserialize(d)
}

/// Checks [`MAX_SCORER_DEPTH`] without recursion: each scorer is visited at
/// most once, and the walk stops at the first one too deep.
fn check_depth<'a>(roots: impl IntoIterator<Item = &'a ScorerConfig>) -> Result<(), CupelError> {
    let mut stack: Vec<(&ScorerConfig, usize)> = roots.into_iter().map(|s| (s, 1)).collect();
    while let Some((s, depth)) = stack.pop() {
        if depth > MAX_SCORER_DEPTH {
            return Err(CupelError::PipelineConfig(too_deep()));
        }
        if let Some(children) = &s.children {
            stack.extend(children.iter().map(|c| (c, depth + 1)));
        }
        if let Some(InnerScorer::Config(inner)) = &s.inner_scorer {
            stack.push((inner, depth + 1));
        }
    }
    Ok(())
}

/// A decay curve.
///
/// On the wire a table with a `type` key (`exponential`, `window`, `step`)
/// and that type's keys. A key of another curve type (`half_life_secs` on a
/// `window` curve) is an error; an unknown key is reported by the strict
/// parsers ([`PolicyConfig::from_toml_str`]) and ignored by plain serde.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CurveConfig {
    /// `2^(-age / half_life)`.
    Exponential {
        /// Half-life in seconds (fractions allowed; must be > 0).
        half_life_secs: f64,
    },
    /// 1.0 while `age < max_age`, else 0.0.
    Window {
        /// Window length in seconds (must be > 0).
        max_age_secs: f64,
    },
    /// The score of the first window whose `max_age` exceeds the age; the last window's otherwise.
    Step {
        /// Windows from youngest to oldest.
        windows: Vec<StepWindowConfig>,
    },
}

/// The flat wire shape of [`CurveConfig`].
///
/// Not `#[serde(tag = "type")]` on input: an internally tagged enum buffers
/// its table, so the strict reader (`cupel_core::strict`) never saw the unknown keys
/// inside it, nor inside a step window.
#[derive(Deserialize)]
#[serde(expecting = "a curve table with `type` (exponential, window, step)")]
struct RawCurve {
    #[serde(rename = "type")]
    curve_type: String,
    #[serde(default)]
    half_life_secs: Option<f64>,
    #[serde(default)]
    max_age_secs: Option<f64>,
    #[serde(default)]
    windows: Option<Vec<StepWindowConfig>>,
}

impl<'de> Deserialize<'de> for CurveConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawCurve::deserialize(d)?;
        let t = raw.curve_type.to_ascii_lowercase();
        let (needed, curve): (&str, Option<CurveConfig>) = match t.as_str() {
            "exponential" => (
                "half_life_secs",
                raw.half_life_secs
                    .map(|half_life_secs| CurveConfig::Exponential { half_life_secs }),
            ),
            "window" => (
                "max_age_secs",
                raw.max_age_secs
                    .map(|max_age_secs| CurveConfig::Window { max_age_secs }),
            ),
            "step" => (
                "windows",
                raw.windows
                    .clone()
                    .map(|windows| CurveConfig::Step { windows }),
            ),
            _ => {
                return Err(D::Error::custom(format!(
                    "unknown curve type `{}` (expected one of: exponential, window, step)",
                    raw.curve_type
                )));
            }
        };
        let present = [
            ("half_life_secs", raw.half_life_secs.is_some()),
            ("max_age_secs", raw.max_age_secs.is_some()),
            ("windows", raw.windows.is_some()),
        ];
        for (key, is_set) in present {
            if is_set && key != needed {
                return Err(D::Error::custom(format!(
                    "key `{key}` does not apply to curve type `{t}` (expected key: {needed})"
                )));
            }
        }
        curve.ok_or_else(|| D::Error::custom(format!("curve type `{t}` needs key `{needed}`")))
    }
}

/// One window of a step curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepWindowConfig {
    /// Upper age bound of the window, in seconds (must be > 0).
    pub max_age_secs: f64,
    /// Score for ages below the bound.
    pub score: f64,
}

impl PolicyConfig {
    /// A policy of `scorers` and `slicer` with every other key at its
    /// default: chronological placer, deduplication on, overflow `Throw`.
    pub fn new(scorers: Vec<ScorerConfig>, slicer: SlicerConfig) -> Self {
        Self {
            scorers,
            slicer,
            placer: default_placer(),
            placer_params: None,
            deduplication: true,
            overflow_strategy: OverflowStrategy::default(),
            variants: None,
        }
    }
}

impl QuotaConfig {
    /// A percentage quota for `kind`: at least `require`, at most `cap`.
    pub fn new(kind: impl Into<String>, require: f64, cap: f64) -> Self {
        Self {
            kind: kind.into(),
            require,
            cap,
        }
    }
}

impl CountQuotaConfig {
    /// A count quota for `kind`: `require_count` first, at most `cap_count`.
    pub fn new(kind: impl Into<String>, require_count: i64, cap_count: i64) -> Self {
        Self {
            kind: kind.into(),
            require_count,
            cap_count,
        }
    }
}

impl KindWeightConfig {
    /// `kind` scores `weight`.
    pub fn new(kind: impl Into<String>, weight: f64) -> Self {
        Self {
            kind: kind.into(),
            weight,
        }
    }
}

impl TagWeightConfig {
    /// `tag` weighs `weight`.
    pub fn new(tag: impl Into<String>, weight: f64) -> Self {
        Self {
            tag: tag.into(),
            weight,
        }
    }
}

impl StepWindowConfig {
    /// Ages below `max_age_secs` score `score`.
    pub fn new(max_age_secs: f64, score: f64) -> Self {
        Self {
            max_age_secs,
            score,
        }
    }
}

impl PolicyConfig {
    /// Parses a TOML policy, rejecting unknown or misplaced keys.
    ///
    /// # Errors
    /// [`CupelError::Config`]: a syntax or type error with its key path,
    /// line and column and the TOML error as its source; an unknown key
    /// with its path and the keys expected there; a misplaced key (see
    /// [`check_keys`](Self::check_keys)).
    pub fn from_toml_str(s: &str) -> Result<Self, CupelError> {
        // A UTF-8 byte-order mark is skipped, in TOML and JSON alike (spec H-4).
        let s = s.strip_prefix('\u{feff}').unwrap_or(s);
        let de = toml::de::Deserializer::parse(s).map_err(|e| {
            let mut err = ConfigError::new(format!("invalid TOML: {}", one_line(e.message())));
            if let Some(span) = e.span() {
                let (line, column) = line_col(s, span.start);
                err = err.with_position(line, column);
            }
            err.with_source(e)
        })?;
        strict(de, |e: &toml::de::Error| toml_located(s, e))
    }

    /// Parses a JSON policy, rejecting unknown or misplaced keys.
    ///
    /// # Errors
    /// As [`from_toml_str`](Self::from_toml_str), with the JSON error.
    pub fn from_json_str(s: &str) -> Result<Self, CupelError> {
        // A byte-order mark is skipped (spec H-4); the document must be an
        // object, not an array read field by field (spec H-5).
        let s = s.strip_prefix('\u{feff}').unwrap_or(s);
        if s.trim_start().chars().next().is_some_and(|c| c != '{') {
            return Err(CupelError::PipelineConfig(
                "invalid policy JSON: expected a policy table (a JSON object), not an array or a bare value".into(),
            ));
        }
        let mut de = serde_json::Deserializer::from_str(s);
        let cfg = strict(&mut de, json_located)?;
        de.end().map_err(|e| json_error(json_located(&e), e))?;
        Ok(cfg)
    }

    /// Checks that every key present applies to the component it sits on.
    ///
    /// # Errors
    /// [`CupelError::Config`] naming the first misplaced key (its path, and
    /// the keys that do apply).
    pub fn check_keys(&self) -> Result<(), CupelError> {
        check_depth(&self.scorers)?;
        for (i, s) in self.scorers.iter().enumerate() {
            s.check_keys(&format!("scorers[{i}]"))?;
        }
        if self.placer_params.is_some() && self.placer.builtin().is_some() {
            return Err(ConfigError::new(format!(
                "key `placer_params` does not apply to placer `{}`",
                self.placer
            ))
            .with_key_path("placer_params")
            .into());
        }
        self.slicer.check_keys()
    }

    /// `items` with the variants the policy's `[variants]` table declares,
    /// counted with `counter`: each item of more than `min_tokens` tokens
    /// that has no variants of its own gets the generated forms (see
    /// `cupel_core::with_generated_variants`). Without a `[variants]` table
    /// the items come back unchanged (clones sharing their data).
    ///
    /// # Errors
    /// As [`VariantsConfig::generators`] and the generators themselves.
    pub fn with_variants(
        &self,
        items: &[ContextItem],
        counter: &dyn TokenCounter,
    ) -> Result<Vec<ContextItem>, CupelError> {
        let Some(v) = &self.variants else {
            return Ok(items.to_vec());
        };
        let generators = v.generators()?;
        let refs: Vec<&dyn VariantGenerator> = generators.iter().map(AsRef::as_ref).collect();
        let min = v.min_tokens.unwrap_or(0);
        items
            .iter()
            .map(|item| {
                if item.tokens() > min && !item.has_variants() {
                    with_generated_variants(item, &refs, counter)
                } else {
                    Ok(item.clone())
                }
            })
            .collect()
    }

    /// Builds the [`Policy`](crate::Policy) from the built-in components only.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] (no scorers, scorers nested deeper than
    /// [`MAX_SCORER_DEPTH`], a type that is not built in) or the component's
    /// own construction error (e.g. `ScorerConfig`, `SlicerConfig`), prefixed
    /// with where it sits.
    pub fn build(&self) -> Result<crate::Policy, CupelError> {
        self.build_with(&ComponentRegistry::new())
    }

    /// Builds the [`Policy`](crate::Policy), resolving type names that are
    /// not built in through `registry` (see [`ComponentRegistry`]).
    ///
    /// # Errors
    /// As [`build`](Self::build); an unknown type's error lists the built-in
    /// and the registered names; a custom constructor's error is prefixed
    /// with where the component sits.
    pub fn build_with(&self, registry: &ComponentRegistry) -> Result<crate::Policy, CupelError> {
        check_depth(&self.scorers)?;
        let scorer: Arc<dyn cupel_core::Scorer> = match self.scorers.as_slice() {
            [] => {
                return Err(CupelError::PipelineConfig(
                    "policy key `scorers`: at least one scorer is required".into(),
                ));
            }
            [only] => crate::construct::scorer(only, "scorers[0]", registry)?,
            many => crate::construct::composite(many, "scorers", registry)?,
        };
        let placer = match &self.placer {
            ComponentType::Builtin(t) => t.build(),
            ComponentType::Custom(name) => registry
                .placer(name, self.placer_params.as_ref())
                .map_err(|e| crate::construct::at(e, "placer"))?,
        };
        crate::Policy::builder()
            .scorer_arc(scorer)
            .slicer_arc(self.slicer.build_with(registry)?)
            .placer_arc(placer)
            .overflow_strategy(self.overflow_strategy)
            .deduplication(self.deduplication)
            .build()
    }
}

/// A TOML error of the document `s` as a strict read reports it.
pub(crate) fn toml_located(s: &str, e: &toml::de::Error) -> Located {
    Located {
        message: one_line(e.message()),
        at: e.span().map(|span| line_col(s, span.start)),
        syntax: false,
    }
}

/// A JSON error as a strict read reports it (the message without
/// serde_json's position suffix).
pub(crate) fn json_located(e: &serde_json::Error) -> Located {
    let full = e.to_string();
    Located {
        message: strict::without_position(&full, e.line(), e.column()).to_owned(),
        at: (e.line() > 0).then(|| (e.line(), e.column())),
        syntax: e.is_syntax() || e.is_eof(),
    }
}

fn json_error(located: Located, e: serde_json::Error) -> ConfigError {
    let mut err = ConfigError::new(format!("invalid JSON: {}", located.message));
    if let Some((line, column)) = located.at {
        err = err.with_position(line, column);
    }
    err.with_source(e)
}

/// A key path as spelled in every error: `scorers[0].curve` (brackets for
/// indices, dots for keys; see [`cupel_core::strict::KeyPath`]).
pub(crate) fn key_path(raw: &str) -> String {
    KeyPath::parse(raw).to_string()
}

impl PolicyConfig {
    /// The keys the table holding the last key of `path` accepts, read from
    /// the configuration types (see [`cupel_core::strict::field_names`]):
    /// the policy's own keys at the top level, a scorer's under `scorers`,
    /// `children` and `inner_scorer`, and so on. Empty where the table has
    /// no fixed keys (a custom component's `params`).
    ///
    /// ```
    /// use cupel_core::strict::KeyPath;
    /// use cupel_pipeline::PolicyConfig;
    /// let keys = PolicyConfig::expected_keys(&KeyPath::parse("scorers[0].wieght"));
    /// assert!(keys.contains(&"weight"));
    /// assert!(PolicyConfig::expected_keys(&KeyPath::parse("slicr")).contains(&"placer_params"));
    /// ```
    pub fn expected_keys(path: &KeyPath) -> Vec<&'static str> {
        match path.parent_field() {
            None => field_names::<RawPolicy>(),
            Some("scorers" | "children" | "inner_scorer") => field_names::<ScorerConfig>(),
            Some("curve") => field_names::<CurveConfig>(),
            Some("windows") => field_names::<StepWindowConfig>(),
            Some("quotas") => field_names::<QuotaConfig>(),
            Some("entries") => field_names::<CountQuotaConfig>(),
            Some("weights") => field_names::<KindWeightConfig>(),
            Some("tag_weights") => field_names::<TagWeightConfig>(),
            Some(_) => Vec::new(),
        }
    }
}

fn strict<'de, D, F, E>(de: D, locate: F) -> Result<PolicyConfig, CupelError>
where
    D: serde::Deserializer<'de, Error = E>,
    F: FnOnce(&E) -> Located,
    E: std::error::Error + Send + Sync + 'static,
{
    let cfg: PolicyConfig = strict::deserialize(de)
        .map_err(|e| e.into_config_error("policy", PolicyConfig::expected_keys, locate))?;
    cfg.check_keys()?;
    Ok(cfg)
}

impl ScorerConfig {
    /// Builds the scorer this entry describes.
    ///
    /// # Errors
    /// The scorer's construction error, or [`CupelError::PipelineConfig`] for
    /// a missing required key.
    pub fn build(&self) -> Result<Arc<dyn cupel_core::Scorer>, CupelError> {
        self.build_with(&ComponentRegistry::new())
    }

    /// Builds the scorer, resolving a custom type through `registry`.
    ///
    /// # Errors
    /// As [`build`](Self::build); an unknown type's error lists the built-in
    /// and registered names.
    pub fn build_with(
        &self,
        registry: &ComponentRegistry,
    ) -> Result<Arc<dyn cupel_core::Scorer>, CupelError> {
        check_depth([self])?;
        crate::construct::scorer(self, self.scorer_type.as_str(), registry)
    }

    fn check_keys(&self, at: &str) -> Result<(), CupelError> {
        use ScorerType as T;
        let present: [(&str, bool, &[ScorerType]); 26] = [
            // Every built-in type rejects `params`: only a custom scorer has its own table.
            ("params", self.params.is_some(), &[]),
            (
                "use_default_weights",
                self.use_default_weights.is_some(),
                &[T::Kind],
            ),
            ("weights", self.weights.is_some(), &[T::Kind]),
            ("tag_weights", self.tag_weights.is_some(), &[T::Tag]),
            (
                "case_insensitive_tags",
                self.case_insensitive_tags.is_some(),
                &[T::Tag],
            ),
            (
                "children",
                self.children.is_some(),
                &[T::Composite, T::Hybrid],
            ),
            ("inner_scorer", self.inner_scorer.is_some(), &[T::Scaled]),
            ("reference_time", self.reference_time.is_some(), &[T::Decay]),
            (
                "null_timestamp_score",
                self.null_timestamp_score.is_some(),
                &[T::Decay],
            ),
            ("curve", self.curve.is_some(), &[T::Decay]),
            (
                "default_score",
                self.default_score.is_some(),
                &[T::MetadataTrust],
            ),
            ("key", self.key.is_some(), &[T::MetadataKey]),
            ("value", self.value.is_some(), &[T::MetadataKey]),
            ("boost", self.boost.is_some(), &[T::MetadataKey]),
            ("k1", self.k1.is_some(), &[T::Bm25]),
            ("b", self.b.is_some(), &[T::Bm25]),
            ("stemming", self.stemming.is_some(), &[T::Bm25]),
            ("neighbours", self.neighbours.is_some(), &[T::Bm25]),
            ("group_key", self.group_key.is_some(), &[T::Bm25]),
            ("query", self.query.is_some(), &[T::Bm25]),
            ("feedback", self.feedback.is_some(), &[T::Bm25]),
            ("feedback_docs", self.feedback_docs.is_some(), &[T::Bm25]),
            ("feedback_terms", self.feedback_terms.is_some(), &[T::Bm25]),
            ("group_weight", self.group_weight.is_some(), &[T::Bm25]),
            ("fusion", self.fusion.is_some(), &[T::Hybrid]),
            ("rrf_k", self.rrf_k.is_some(), &[T::Hybrid]),
        ];
        for (key, is_set, types) in present {
            let applies = match self.scorer_type.builtin() {
                Some(t) => types.contains(&t),
                None => key == "params",
            };
            if is_set && !applies {
                let expected = ["type", "weight"].into_iter().chain(
                    present
                        .iter()
                        .filter(|(_, _, types)| match self.scorer_type.builtin() {
                            Some(t) => types.contains(&t),
                            None => false,
                        })
                        .map(|(k, _, _)| *k),
                );
                let expected: Vec<&str> = if self.scorer_type.builtin().is_some() {
                    expected.collect()
                } else {
                    ["type", "weight", "params"].to_vec()
                };
                return Err(ConfigError::new(format!(
                    "{at}: key `{key}` does not apply to scorer type `{}`",
                    self.scorer_type
                ))
                .with_key_path(key_path(&format!("{at}.{key}")))
                .with_expected(expected)
                .into());
            }
        }
        if let Some(children) = &self.children {
            for (i, c) in children.iter().enumerate() {
                c.check_keys(&format!("{at}.children[{i}]"))?;
            }
        }
        if let Some(InnerScorer::Config(inner)) = &self.inner_scorer {
            inner.check_keys(&format!("{at}.inner_scorer"))?;
        }
        Ok(())
    }
}

impl SlicerConfig {
    /// Builds the slicer this configuration describes.
    ///
    /// # Errors
    /// The slicer's construction error (prefixed with the key it came from).
    pub fn build(&self) -> Result<Arc<dyn cupel_core::Slicer>, CupelError> {
        self.build_with(&ComponentRegistry::new())
    }

    /// Builds the slicer, resolving a custom type through `registry`.
    ///
    /// # Errors
    /// As [`build`](Self::build); an unknown type's error lists the built-in
    /// and registered names.
    pub fn build_with(
        &self,
        registry: &ComponentRegistry,
    ) -> Result<Arc<dyn cupel_core::Slicer>, CupelError> {
        crate::construct::slicer(self, registry)
    }

    fn check_keys(&self) -> Result<(), CupelError> {
        use SlicerType as T;
        let present: [(&str, bool, &[SlicerType]); 8] = [
            // Only a custom slicer has its own table.
            ("slicer_params", self.slicer_params.is_some(), &[]),
            (
                "bucket_size",
                self.bucket_size.is_some(),
                &[
                    T::Knapsack,
                    T::CountConstrainedKnapsack,
                    T::Quota,
                    T::CountQuota,
                ],
            ),
            (
                "max_table_cells",
                self.max_table_cells.is_some(),
                &[
                    T::Knapsack,
                    T::CountConstrainedKnapsack,
                    T::Quota,
                    T::CountQuota,
                ],
            ),
            (
                "max_table_bytes",
                self.max_table_bytes.is_some(),
                &[
                    T::Knapsack,
                    T::CountConstrainedKnapsack,
                    T::Quota,
                    T::CountQuota,
                ],
            ),
            (
                "inner_slicer",
                self.inner_slicer.is_some(),
                &[T::Quota, T::CountQuota],
            ),
            ("quotas", !self.quotas.is_empty(), &[T::Quota]),
            (
                "entries",
                !self.entries.is_empty(),
                &[T::CountQuota, T::CountConstrainedKnapsack],
            ),
            (
                "scarcity_behavior",
                self.scarcity_behavior.is_some(),
                &[T::CountQuota, T::CountConstrainedKnapsack],
            ),
        ];
        for (key, is_set, types) in present {
            let applies = match self.slicer.builtin() {
                Some(t) => types.contains(&t),
                None => key == "slicer_params",
            };
            if is_set && !applies {
                let expected: Vec<&str> = match self.slicer.builtin() {
                    Some(t) => present
                        .iter()
                        .filter(|(_, _, types)| types.contains(&t))
                        .map(|(k, _, _)| *k)
                        .collect(),
                    None => vec!["slicer_params"],
                };
                return Err(ConfigError::new(format!(
                    "key `{key}` does not apply to slicer `{}`",
                    self.slicer
                ))
                .with_key_path(key)
                .with_expected(expected)
                .into());
            }
        }
        Ok(())
    }
}

/// Kind weights as `(kind, weight)` pairs in the order given.
///
/// Pairs, not a map: a kind listed twice (in any ASCII case) must reach
/// `KindScorer::new`, which rejects it, instead of one weight silently
/// replacing the other.
pub(crate) fn kind_weights(
    weights: &[KindWeightConfig],
    at: &str,
) -> Result<Vec<(cupel_core::ContextKind, f64)>, CupelError> {
    weights
        .iter()
        .map(|w| {
            cupel_core::ContextKind::new(w.kind.clone())
                .map(|kind| (kind, w.weight))
                .map_err(|e| CupelError::PipelineConfig(format!("{at}.weights: {e}")))
        })
        .collect()
}
