//! [`PolicyConfig`]: a declarative, serde-readable description of a [`Policy`](crate::Policy).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use cupel_core::strict::{self, KeyPath, Located, field_names, line_col, one_line};
use cupel_core::{
    ConfigError, ContextItem, CupelError, HeadTail, OverflowStrategy, Placeholder, TokenCounter,
    VariantGenerator, with_generated_variants,
};
use cupel_slicers::ScarcityBehavior;

use crate::names::{ComponentType, PlacerType, SlicerType};
use crate::registry::ComponentRegistry;
use crate::scorer_config::RawScorer;
pub use crate::scorer_config::{
    Bm25ScorerConfig, CompositeScorerConfig, CustomScorerConfig, DecayScorerConfig, FusionConfig,
    HybridScorerConfig, InnerScorer, KindScorerConfig, MetadataKeyScorerConfig,
    MetadataTrustScorerConfig, PlainScorerConfig, ScaledScorerConfig, ScorerConfig,
    TagScorerConfig,
};
pub use crate::slicer_config::{
    CountConstrainedKnapsackSlicerConfig, CountQuotaSlicerConfig, CustomSlicerConfig,
    KnapsackSlicerConfig, QuotaSlicerConfig, SlicerConfig,
};
use crate::slicer_config::{RawSlicer, default_slicer};

pub(crate) fn default_weight() -> f64 {
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
#[serde(try_from = "PolicyTable", into = "PolicyTable")]
#[non_exhaustive]
pub struct PolicyConfig {
    /// One entry means that scorer alone (its weight is irrelevant); several
    /// mean a [composite](crate::ScorerType::Composite) of them with their weights.
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

/// A policy table as the file holds it: every key read (unknown keys
/// named by the strict reader), but no scorer or slicer checked against
/// its type yet. [`PolicyConfig::try_from`] converts it, rejecting a key
/// that does not apply to the component it sits on with the key's path
/// and the keys that do apply. A reader that reports that error in its
/// own words (the command-line tool) reads this table, then converts;
/// most callers read a [`PolicyConfig`] directly.
///
/// ```
/// use cupel_pipeline::{PolicyConfig, PolicyTable};
/// let table: PolicyTable =
///     toml::from_str("slicer = \"greedy\"\nbucket_size = 10\n[[scorers]]\ntype = \"kind\"\n").unwrap();
/// let e = PolicyConfig::try_from(table).unwrap_err();
/// assert_eq!(e.to_string(), "key `bucket_size` does not apply to slicer `greedy`");
/// assert_eq!(e.key_path(), Some("bucket_size"));
/// ```
// The flat wire shape of `PolicyConfig` (serde's `flatten` would hide unknown keys).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(expecting = "a policy table (scorers, slicer, placer, ...)")]
pub struct PolicyTable {
    scorers: Vec<RawScorer>,
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

impl TryFrom<PolicyTable> for PolicyConfig {
    type Error = ConfigError;

    /// Converts each scorer and the slicer into the variant its type
    /// names, rejecting a key the variant has no field for.
    fn try_from(r: PolicyTable) -> Result<Self, ConfigError> {
        let scorers = r
            .scorers
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.into_config(&format!("scorers[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let placer = r.placer;
        if r.placer_params.is_some() && placer.builtin().is_some() {
            return Err(misplaced_placer_params(&placer));
        }
        let slicer = RawSlicer {
            slicer: r.slicer,
            slicer_params: r.slicer_params,
            bucket_size: r.bucket_size,
            max_table_cells: r.max_table_cells,
            max_table_bytes: r.max_table_bytes,
            inner_slicer: r.inner_slicer,
            quotas: r.quotas,
            entries: r.entries,
            scarcity_behavior: r.scarcity_behavior,
        }
        .into_config()?;
        Ok(PolicyConfig {
            scorers,
            slicer,
            placer,
            placer_params: r.placer_params,
            deduplication: r.deduplication,
            overflow_strategy: r.overflow_strategy,
            variants: r.variants,
        })
    }
}

fn misplaced_placer_params(placer: &ComponentType<PlacerType>) -> ConfigError {
    ConfigError::new(format!(
        "key `placer_params` does not apply to placer `{placer}`"
    ))
    .with_key_path("placer_params")
}

impl From<PolicyConfig> for PolicyTable {
    fn from(c: PolicyConfig) -> Self {
        let slicer = RawSlicer::from(c.slicer);
        PolicyTable {
            scorers: c.scorers.into_iter().map(RawScorer::from).collect(),
            slicer: slicer.slicer,
            slicer_params: slicer.slicer_params,
            bucket_size: slicer.bucket_size,
            max_table_cells: slicer.max_table_cells,
            max_table_bytes: slicer.max_table_bytes,
            inner_slicer: slicer.inner_slicer,
            quotas: slicer.quotas,
            entries: slicer.entries,
            scarcity_behavior: slicer.scarcity_behavior,
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
pub(crate) mod scarcity_wire {
    use cupel_slicers::ScarcityBehavior;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        b: &Option<ScarcityBehavior>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match b {
            Some(b) => s.serialize_str(super::scarcity_behavior_name(*b)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
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
pub(crate) struct NestingGuard;

impl NestingGuard {
    pub(crate) fn enter<E: serde::de::Error>() -> Result<Self, E> {
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

/// Checks [`MAX_SCORER_DEPTH`] without recursion: each scorer is visited at
/// most once, and the walk stops at the first one too deep.
fn check_depth<'a>(roots: impl IntoIterator<Item = &'a ScorerConfig>) -> Result<(), CupelError> {
    let mut stack: Vec<(&ScorerConfig, usize)> = roots.into_iter().map(|s| (s, 1)).collect();
    while let Some((s, depth)) = stack.pop() {
        if depth > MAX_SCORER_DEPTH {
            return Err(CupelError::PipelineConfig(too_deep()));
        }
        stack.extend(s.nested().map(|c| (c, depth + 1)));
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

    /// Checks what the types cannot: that scorers nest at most
    /// [`MAX_SCORER_DEPTH`] levels deep, and that `placer_params` sits only
    /// on a custom placer. (A scorer's or slicer's keys are its variant's
    /// fields, so a key of another type cannot be held at all; reading a
    /// file rejects one, naming it.)
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] for scorers nested too deep;
    /// [`CupelError::Config`] naming a misplaced `placer_params`.
    pub fn check_keys(&self) -> Result<(), CupelError> {
        check_depth(&self.scorers)?;
        if self.placer_params.is_some() && self.placer.builtin().is_some() {
            return Err(misplaced_placer_params(&self.placer).into());
        }
        Ok(())
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
            None => field_names::<PolicyTable>(),
            Some("scorers" | "children" | "inner_scorer") => field_names::<RawScorer>(),
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
    let raw: PolicyTable = strict::deserialize(de)
        .map_err(|e| e.into_config_error("policy", PolicyConfig::expected_keys, locate))?;
    let cfg = PolicyConfig::try_from(raw)?;
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
        crate::construct::scorer(self, self.scorer_type().as_str(), registry)
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
