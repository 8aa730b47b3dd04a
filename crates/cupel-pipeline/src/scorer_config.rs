//! [`ScorerConfig`]: one variant per scorer type, each owning exactly the
//! keys that apply to that type.
//!
//! On the wire a scorer is one flat table (`type`, `weight` and the type's
//! keys). It is read into a private flat wire struct, which the strict
//! reader sees field by field (so an unknown key keeps its path), and then
//! converted once into the variant its `type` names. A key present in the
//! table that the variant's struct has no field for is rejected there,
//! naming its path and the variant's keys (read from the struct with
//! [`field_names`]). Writing goes back through the wire struct, so a
//! configuration round-trips to the same file format.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use cupel_core::ConfigError;
use cupel_core::strict::field_names;

use crate::config::{
    CurveConfig, KindWeightConfig, NestingGuard, TagWeightConfig, default_weight, key_path,
};
use crate::names::{ComponentType, ScorerType};

/// The keys of a scorer type that has none of its own (`recency`,
/// `priority`, `frequency`, `reflexive`, `position`, `vector`): its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlainScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
}

/// A `kind` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KindScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Use the spec's default weights (also the behaviour when no weights are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_default_weights: Option<bool>,
    /// Custom weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<KindWeightConfig>>,
}

/// A `tag` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TagScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The tag weights (required to build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_weights: Option<Vec<TagWeightConfig>>,
    /// Fold ASCII case when looking tags up (default `false`:
    /// case-sensitive, as the spec says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_insensitive_tags: Option<bool>,
}

/// A `composite` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompositeScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The children (required to build; also accepted as `scorers` on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<ScorerConfig>>,
}

/// A `scaled` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScaledScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The inner scorer, by name or as a full scorer table (required to build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_scorer: Option<InnerScorer>,
}

/// A `decay` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DecayScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The clock's fixed "now"; absent means the system clock.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "cupel_core::serde_timestamp::option"
    )]
    pub reference_time: Option<DateTime<Utc>>,
    /// Score of items without a timestamp (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub null_timestamp_score: Option<f64>,
    /// The curve (required to build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<CurveConfig>,
}

/// A `metadata_trust` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetadataTrustScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Score when `cupel:trust` is missing or unusable (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_score: Option<f64>,
}

/// A `metadata_key` scorer's keys (all three required to build).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetadataKeyScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The metadata key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The value to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The multiplier for matching items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<f64>,
}

/// A `bm25` scorer's keys (each optional; the scorer's defaults otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Bm25ScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Term-frequency saturation (default 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k1: Option<f64>,
    /// Length normalisation (default 0.75).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    /// English Snowball stemming (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stemming: Option<bool>,
    /// The share of a hit's score its previous and next item take at least
    /// (default 0: no neighbour lift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbours: Option<f64>,
    /// The metadata key grouping items for the neighbour lift (a session);
    /// absent: all items are one group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_key: Option<String>,
    /// A query of the policy's own, used by runs that carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The weight of pseudo-relevance feedback terms, in `[0, 1]` (default
    /// 0: off; 0.3 when only `feedback_docs` or `feedback_terms` is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<f64>,
    /// How many first-pass items vote for feedback terms (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_docs: Option<usize>,
    /// How many feedback terms join the query (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_terms: Option<usize>,
    /// The group prior's weight, in `[0, 1]` (default 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_weight: Option<f64>,
}

/// A `hybrid` scorer's keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HybridScorerConfig {
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The children (required to build; also accepted as `scorers` on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<ScorerConfig>>,
    /// How the children are fused, `rrf` (reciprocal-rank fusion, the
    /// default) or `weighted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionConfig>,
    /// With `fusion = "rrf"`: the rank offset k (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrf_k: Option<f64>,
}

/// A custom scorer (a `type` that is not built in, resolved through a
/// [`ComponentRegistry`](crate::ComponentRegistry)): its name, weight and
/// own table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CustomScorerConfig {
    /// The registered name (the `type` key on the wire).
    #[serde(skip)]
    pub name: String,
    /// Relative weight inside a composite (default 1.0).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The scorer's own table (`params`), handed to its constructor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// A scorer and its keys: one variant per scorer type, holding the keys
/// that apply to that type and no others.
///
/// On the wire a flat table with a `type` key, `weight` (default 1.0) and
/// the type's keys:
///
/// ```toml
/// [[scorers]]
/// type = "bm25"
/// weight = 2.0
/// k1 = 1.5
/// ```
///
/// A key of another type (`k1` on a `kind` scorer) is rejected when the
/// table is read, naming its path and the keys the type has.
///
/// ```
/// use cupel_pipeline::{PolicyConfig, ScorerConfig, ScorerType};
/// let cfg = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"bm25\"\nweight = 2.0\nk1 = 1.5\n")?;
/// let ScorerConfig::Bm25(bm25) = &cfg.scorers[0] else { unreachable!("type = bm25") };
/// assert_eq!((bm25.weight, bm25.k1), (2.0, Some(1.5)));
/// assert_eq!(cfg.scorers[0].scorer_type(), ScorerType::Bm25);
/// // Built in code: a type with every key at its default, then the weight.
/// let recency = ScorerConfig::new(ScorerType::Recency).weight(0.5);
/// assert_eq!(recency.weight_value(), 0.5);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawScorer", into = "RawScorer")]
#[non_exhaustive]
pub enum ScorerConfig {
    /// `recency`.
    Recency(PlainScorerConfig),
    /// `priority`.
    Priority(PlainScorerConfig),
    /// `frequency`.
    Frequency(PlainScorerConfig),
    /// `reflexive`.
    Reflexive(PlainScorerConfig),
    /// `position`.
    Position(PlainScorerConfig),
    /// `vector`.
    Vector(PlainScorerConfig),
    /// `kind`.
    Kind(KindScorerConfig),
    /// `tag`.
    Tag(TagScorerConfig),
    /// `composite`.
    Composite(CompositeScorerConfig),
    /// `scaled`.
    Scaled(ScaledScorerConfig),
    /// `decay`.
    Decay(DecayScorerConfig),
    /// `metadata_trust`.
    MetadataTrust(MetadataTrustScorerConfig),
    /// `metadata_key`.
    MetadataKey(MetadataKeyScorerConfig),
    /// `bm25`.
    Bm25(Bm25ScorerConfig),
    /// `hybrid`.
    Hybrid(HybridScorerConfig),
    /// A type that is not built in.
    Custom(CustomScorerConfig),
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

/// The inner scorer of a `scaled` scorer: a bare type name or a full table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InnerScorer {
    /// `inner_scorer = "priority"`.
    Name(ScorerType),
    /// `inner_scorer = { type = "kind", weights = [...] }`.
    Config(Box<ScorerConfig>),
}

impl<'de> Deserialize<'de> for InnerScorer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawInner::deserialize(d)?
            .into_config("")
            .map_err(serde::de::Error::custom)
    }
}

impl Default for PlainScorerConfig {
    fn default() -> Self {
        Self { weight: 1.0 }
    }
}

/// `Default` for variant structs whose keys are all optional: weight 1.0,
/// every key absent.
macro_rules! default_with_weight {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                RawScorer::blank(ScorerType::Recency.into()).take_into()
            }
        }
    )*};
}

impl ScorerConfig {
    /// A scorer of type `scorer_type`, weight 1.0, every key at its default
    /// (absent).
    pub fn new(scorer_type: impl Into<ComponentType<ScorerType>>) -> Self {
        RawScorer::blank(scorer_type.into()).into_variant()
    }

    /// Sets the weight (relative weight inside a composite).
    pub fn weight(mut self, weight: f64) -> Self {
        *self.weight_mut() = weight;
        self
    }

    /// The weight (relative weight inside a composite; default 1.0).
    pub fn weight_value(&self) -> f64 {
        match self {
            Self::Recency(c)
            | Self::Priority(c)
            | Self::Frequency(c)
            | Self::Reflexive(c)
            | Self::Position(c)
            | Self::Vector(c) => c.weight,
            Self::Kind(c) => c.weight,
            Self::Tag(c) => c.weight,
            Self::Composite(c) => c.weight,
            Self::Scaled(c) => c.weight,
            Self::Decay(c) => c.weight,
            Self::MetadataTrust(c) => c.weight,
            Self::MetadataKey(c) => c.weight,
            Self::Bm25(c) => c.weight,
            Self::Hybrid(c) => c.weight,
            Self::Custom(c) => c.weight,
        }
    }

    /// The weight, to change in place.
    pub fn weight_mut(&mut self) -> &mut f64 {
        match self {
            Self::Recency(c)
            | Self::Priority(c)
            | Self::Frequency(c)
            | Self::Reflexive(c)
            | Self::Position(c)
            | Self::Vector(c) => &mut c.weight,
            Self::Kind(c) => &mut c.weight,
            Self::Tag(c) => &mut c.weight,
            Self::Composite(c) => &mut c.weight,
            Self::Scaled(c) => &mut c.weight,
            Self::Decay(c) => &mut c.weight,
            Self::MetadataTrust(c) => &mut c.weight,
            Self::MetadataKey(c) => &mut c.weight,
            Self::Bm25(c) => &mut c.weight,
            Self::Hybrid(c) => &mut c.weight,
            Self::Custom(c) => &mut c.weight,
        }
    }

    /// The scorer type (the `type` key on the wire).
    pub fn scorer_type(&self) -> ComponentType<ScorerType> {
        use ScorerType as T;
        ComponentType::Builtin(match self {
            Self::Recency(_) => T::Recency,
            Self::Priority(_) => T::Priority,
            Self::Frequency(_) => T::Frequency,
            Self::Reflexive(_) => T::Reflexive,
            Self::Position(_) => T::Position,
            Self::Vector(_) => T::Vector,
            Self::Kind(_) => T::Kind,
            Self::Tag(_) => T::Tag,
            Self::Composite(_) => T::Composite,
            Self::Scaled(_) => T::Scaled,
            Self::Decay(_) => T::Decay,
            Self::MetadataTrust(_) => T::MetadataTrust,
            Self::MetadataKey(_) => T::MetadataKey,
            Self::Bm25(_) => T::Bm25,
            Self::Hybrid(_) => T::Hybrid,
            Self::Custom(c) => return ComponentType::Custom(c.name.clone()),
        })
    }

    /// The keys a table of this scorer's type accepts: `type`, then the
    /// fields of the variant's struct (read with [`field_names`], so the
    /// list can never miss one).
    ///
    /// ```
    /// use cupel_pipeline::{ScorerConfig, ScorerType};
    /// assert_eq!(
    ///     ScorerConfig::new(ScorerType::MetadataTrust).keys(),
    ///     ["type", "weight", "default_score"]
    /// );
    /// ```
    pub fn keys(&self) -> Vec<&'static str> {
        let fields = match self {
            Self::Recency(_)
            | Self::Priority(_)
            | Self::Frequency(_)
            | Self::Reflexive(_)
            | Self::Position(_)
            | Self::Vector(_) => field_names::<PlainScorerConfig>(),
            Self::Kind(_) => field_names::<KindScorerConfig>(),
            Self::Tag(_) => field_names::<TagScorerConfig>(),
            Self::Composite(_) => field_names::<CompositeScorerConfig>(),
            Self::Scaled(_) => field_names::<ScaledScorerConfig>(),
            Self::Decay(_) => field_names::<DecayScorerConfig>(),
            Self::MetadataTrust(_) => field_names::<MetadataTrustScorerConfig>(),
            Self::MetadataKey(_) => field_names::<MetadataKeyScorerConfig>(),
            Self::Bm25(_) => field_names::<Bm25ScorerConfig>(),
            Self::Hybrid(_) => field_names::<HybridScorerConfig>(),
            Self::Custom(_) => field_names::<CustomScorerConfig>(),
        };
        std::iter::once("type").chain(fields).collect()
    }

    /// The scorers nested directly in this one: a composite's or hybrid's
    /// children, a scaled scorer's inner table.
    pub(crate) fn nested(&self) -> impl Iterator<Item = &ScorerConfig> {
        let (children, inner): (&[ScorerConfig], Option<&ScorerConfig>) = match self {
            Self::Composite(CompositeScorerConfig {
                children: Some(c), ..
            })
            | Self::Hybrid(HybridScorerConfig {
                children: Some(c), ..
            }) => (c, None),
            Self::Scaled(ScaledScorerConfig {
                inner_scorer: Some(InnerScorer::Config(c)),
                ..
            }) => (&[], Some(c)),
            _ => (&[], None),
        };
        children.iter().chain(inner)
    }
}

impl From<ScorerType> for ScorerConfig {
    fn from(t: ScorerType) -> Self {
        Self::new(t)
    }
}

/// The flat wire shape of a [`ScorerConfig`]: every key of every type, as
/// the file holds them. Read field by field, so the strict reader
/// (`cupel_core::strict`) names unknown keys by their path, here and in
/// nested scorers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct RawScorer {
    #[serde(rename = "type")]
    scorer_type: TypeName,
    #[serde(default = "default_weight")]
    weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    use_default_weights: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    weights: Option<Vec<KindWeightConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag_weights: Option<Vec<TagWeightConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    case_insensitive_tags: Option<bool>,
    #[serde(
        default,
        alias = "scorers",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nested_children"
    )]
    children: Option<Vec<RawScorer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    inner_scorer: Option<RawInner>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "cupel_core::serde_timestamp::option"
    )]
    reference_time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    null_timestamp_score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    curve: Option<CurveConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default_score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    boost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    k1: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stemming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    neighbours: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback_docs: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback_terms: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group_weight: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fusion: Option<FusionConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rrf_k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params: Option<serde_json::Value>,
}

/// The `type` key of a wire table (a newtype only so that [`RawScorer`]
/// can derive `Default`; read and written as the bare name).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
struct TypeName(ComponentType<ScorerType>);

impl Default for TypeName {
    fn default() -> Self {
        TypeName(ComponentType::Builtin(ScorerType::Recency))
    }
}

fn nested_children<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<RawScorer>>, D::Error> {
    let _level = NestingGuard::enter()?;
    Option::<Vec<RawScorer>>::deserialize(d)
}

/// The wire shape of [`InnerScorer`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum RawInner {
    Name(ScorerType),
    Config(Box<RawScorer>),
}

// Not `#[serde(untagged)]` on input: untagged buffering would hide unknown
// keys of an inline table from the strict parser.
impl<'de> Deserialize<'de> for RawInner {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _level = NestingGuard::enter()?;
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawInner;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a scorer type name or a scorer table")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RawInner, E> {
                ScorerType::from_name(s).map(RawInner::Name).ok_or_else(|| {
                    E::custom(format!(
                        "unknown scorer `{s}` (expected one of: {})",
                        ScorerType::expected()
                    ))
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawInner, A::Error> {
                RawScorer::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|c| RawInner::Config(Box::new(c)))
            }
        }
        d.deserialize_any(V)
    }
}

impl RawInner {
    fn into_config(self, at: &str) -> Result<InnerScorer, ConfigError> {
        Ok(match self {
            RawInner::Name(t) => InnerScorer::Name(t),
            RawInner::Config(c) => InnerScorer::Config(Box::new(c.into_config(at)?)),
        })
    }
}

impl From<InnerScorer> for RawInner {
    fn from(i: InnerScorer) -> Self {
        match i {
            InnerScorer::Name(t) => RawInner::Name(t),
            InnerScorer::Config(c) => RawInner::Config(Box::new((*c).into())),
        }
    }
}

/// `at.key`, or `key` at the root.
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

impl RawScorer {
    /// The configuration this table describes; `at` is where it sits
    /// (`scorers[0]`, empty at the root), for errors.
    ///
    /// # Errors
    /// A key present that the variant's struct has no field for: its path
    /// and the keys the type accepts ([`ScorerConfig::keys`]).
    pub(crate) fn into_config(mut self, at: &str) -> Result<ScorerConfig, ConfigError> {
        let children = self.children.take();
        let inner = self.inner_scorer.take();
        let present = self.present_keys(children.is_some(), inner.is_some());
        let mut config = self.into_variant();
        let keys = config.keys();
        if let Some(key) = present.into_iter().find(|k| !keys.contains(k)) {
            let prefix = if at.is_empty() {
                String::new()
            } else {
                format!("{at}: ")
            };
            return Err(ConfigError::new(format!(
                "{prefix}key `{key}` does not apply to scorer type `{}`",
                config.scorer_type()
            ))
            .with_key_path(key_path(&join(at, key)))
            .with_expected(keys));
        }
        // Nested scorers after their parent's own keys, as they are read.
        let children = match children {
            Some(c) => Some(
                c.into_iter()
                    .enumerate()
                    .map(|(i, c)| c.into_config(&format!("{}[{i}]", join(at, "children"))))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let inner = inner
            .map(|i| i.into_config(&join(at, "inner_scorer")))
            .transpose()?;
        match &mut config {
            ScorerConfig::Composite(c) => c.children = children,
            ScorerConfig::Hybrid(c) => c.children = children,
            ScorerConfig::Scaled(c) => c.inner_scorer = inner,
            _ => {}
        }
        Ok(config)
    }

    /// A table of type `t`, weight 1.0, every other key absent.
    fn blank(t: ComponentType<ScorerType>) -> Self {
        RawScorer {
            scorer_type: TypeName(t),
            weight: 1.0,
            ..RawScorer::default()
        }
    }

    /// The keys this table holds besides `type` and `weight`, `params`
    /// first and the rest in table order (the order misplaced keys are
    /// reported in). Read from the table's own serialization, so no key
    /// can be missed; nested scorers were taken out beforehand and are
    /// passed as flags.
    fn present_keys(&self, children: bool, inner: bool) -> Vec<&'static str> {
        let Ok(serde_json::Value::Object(table)) = serde_json::to_value(self) else {
            return Vec::new();
        };
        let mut keys: Vec<&'static str> = field_names::<RawScorer>()
            .into_iter()
            .filter(|k| table.contains_key(*k) && !matches!(*k, "type" | "weight"))
            .collect();
        keys.extend(children.then_some("children"));
        keys.extend(inner.then_some("inner_scorer"));
        keys.sort_by_key(|k| (*k != "params", position(k)));
        keys
    }

    /// The variant `scorer_type` names, with the fields its struct has
    /// moved out of this table (`children` and `inner_scorer` are set by
    /// the caller).
    fn into_variant(self) -> ScorerConfig {
        use ScorerType as T;
        let t = match &self.scorer_type.0 {
            ComponentType::Builtin(t) => *t,
            ComponentType::Custom(name) => {
                return ScorerConfig::Custom(CustomScorerConfig {
                    name: name.clone(),
                    weight: self.weight,
                    params: self.params,
                });
            }
        };
        let plain = PlainScorerConfig {
            weight: self.weight,
        };
        match t {
            T::Recency => ScorerConfig::Recency(plain),
            T::Priority => ScorerConfig::Priority(plain),
            T::Frequency => ScorerConfig::Frequency(plain),
            T::Reflexive => ScorerConfig::Reflexive(plain),
            T::Position => ScorerConfig::Position(plain),
            T::Vector => ScorerConfig::Vector(plain),
            T::Kind => ScorerConfig::Kind(self.take_into()),
            T::Tag => ScorerConfig::Tag(self.take_into()),
            T::Composite => ScorerConfig::Composite(self.take_into()),
            T::Scaled => ScorerConfig::Scaled(self.take_into()),
            T::Decay => ScorerConfig::Decay(self.take_into()),
            T::MetadataTrust => ScorerConfig::MetadataTrust(self.take_into()),
            T::MetadataKey => ScorerConfig::MetadataKey(self.take_into()),
            T::Bm25 => ScorerConfig::Bm25(self.take_into()),
            T::Hybrid => ScorerConfig::Hybrid(self.take_into()),
        }
    }

    /// This table's fields as a variant struct `V` (see [`Take`]).
    fn take_into<V: Take>(self) -> V {
        V::take(self)
    }
}

/// Where `key` stands in [`RawScorer`]'s declaration (table order).
fn position(key: &str) -> usize {
    field_names::<RawScorer>()
        .iter()
        .position(|k| *k == key)
        .unwrap_or(usize::MAX)
}

/// A variant struct built from the wire table's fields it has, and written
/// back into one.
trait Take {
    fn take(raw: RawScorer) -> Self;
    fn put(self, raw: &mut RawScorer);
}

impl Take for KindScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            use_default_weights: r.use_default_weights,
            weights: r.weights,
        }
    }
    fn put(self, r: &mut RawScorer) {
        (r.use_default_weights, r.weights) = (self.use_default_weights, self.weights);
    }
}

impl Take for TagScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            tag_weights: r.tag_weights,
            case_insensitive_tags: r.case_insensitive_tags,
        }
    }
    fn put(self, r: &mut RawScorer) {
        (r.tag_weights, r.case_insensitive_tags) = (self.tag_weights, self.case_insensitive_tags);
    }
}

impl Take for CompositeScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            children: None,
        }
    }
    fn put(self, r: &mut RawScorer) {
        r.children = self
            .children
            .map(|c| c.into_iter().map(RawScorer::from).collect());
    }
}

impl Take for ScaledScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            inner_scorer: None,
        }
    }
    fn put(self, r: &mut RawScorer) {
        r.inner_scorer = self.inner_scorer.map(RawInner::from);
    }
}

impl Take for DecayScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            reference_time: r.reference_time,
            null_timestamp_score: r.null_timestamp_score,
            curve: r.curve,
        }
    }
    fn put(self, r: &mut RawScorer) {
        r.reference_time = self.reference_time;
        r.null_timestamp_score = self.null_timestamp_score;
        r.curve = self.curve;
    }
}

impl Take for MetadataTrustScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            default_score: r.default_score,
        }
    }
    fn put(self, r: &mut RawScorer) {
        r.default_score = self.default_score;
    }
}

impl Take for MetadataKeyScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            key: r.key,
            value: r.value,
            boost: r.boost,
        }
    }
    fn put(self, r: &mut RawScorer) {
        (r.key, r.value, r.boost) = (self.key, self.value, self.boost);
    }
}

impl Take for Bm25ScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            k1: r.k1,
            b: r.b,
            stemming: r.stemming,
            neighbours: r.neighbours,
            group_key: r.group_key,
            query: r.query,
            feedback: r.feedback,
            feedback_docs: r.feedback_docs,
            feedback_terms: r.feedback_terms,
            group_weight: r.group_weight,
        }
    }
    fn put(self, r: &mut RawScorer) {
        (r.k1, r.b, r.stemming, r.neighbours) = (self.k1, self.b, self.stemming, self.neighbours);
        (r.group_key, r.query, r.group_weight) = (self.group_key, self.query, self.group_weight);
        (r.feedback, r.feedback_docs, r.feedback_terms) =
            (self.feedback, self.feedback_docs, self.feedback_terms);
    }
}

impl Take for HybridScorerConfig {
    fn take(r: RawScorer) -> Self {
        Self {
            weight: r.weight,
            children: None,
            fusion: r.fusion,
            rrf_k: r.rrf_k,
        }
    }
    fn put(self, r: &mut RawScorer) {
        r.children = self
            .children
            .map(|c| c.into_iter().map(RawScorer::from).collect());
        (r.fusion, r.rrf_k) = (self.fusion, self.rrf_k);
    }
}

default_with_weight!(
    KindScorerConfig,
    TagScorerConfig,
    CompositeScorerConfig,
    ScaledScorerConfig,
    DecayScorerConfig,
    MetadataTrustScorerConfig,
    MetadataKeyScorerConfig,
    Bm25ScorerConfig,
    HybridScorerConfig
);

impl TryFrom<RawScorer> for ScorerConfig {
    type Error = ConfigError;

    fn try_from(raw: RawScorer) -> Result<Self, ConfigError> {
        raw.into_config("")
    }
}

impl From<ScorerConfig> for RawScorer {
    fn from(c: ScorerConfig) -> Self {
        let mut r = RawScorer::blank(c.scorer_type());
        r.weight = c.weight_value();
        match c {
            ScorerConfig::Recency(_)
            | ScorerConfig::Priority(_)
            | ScorerConfig::Frequency(_)
            | ScorerConfig::Reflexive(_)
            | ScorerConfig::Position(_)
            | ScorerConfig::Vector(_) => {}
            ScorerConfig::Kind(v) => v.put(&mut r),
            ScorerConfig::Tag(v) => v.put(&mut r),
            ScorerConfig::Composite(v) => v.put(&mut r),
            ScorerConfig::Scaled(v) => v.put(&mut r),
            ScorerConfig::Decay(v) => v.put(&mut r),
            ScorerConfig::MetadataTrust(v) => v.put(&mut r),
            ScorerConfig::MetadataKey(v) => v.put(&mut r),
            ScorerConfig::Bm25(v) => v.put(&mut r),
            ScorerConfig::Hybrid(v) => v.put(&mut r),
            ScorerConfig::Custom(v) => r.params = v.params,
        }
        r
    }
}
