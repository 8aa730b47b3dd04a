//! Turns configuration values into components.

use std::sync::Arc;

use cupel_core::{
    ContextKind, CupelError, FixedTimeProvider, Placer, Scorer, Slicer, SystemTimeProvider,
    TimeProvider,
};
use cupel_placers::{ChronologicalPlacer, UShapedPlacer};
use cupel_scorers::{
    Bm25Scorer, CompositeScorer, DecayCurve, DecayScorer, FrequencyScorer, Fusion, HybridScorer,
    KindScorer, MetadataKeyScorer, MetadataTrustScorer, PositionScorer, PriorityScorer,
    RecencyScorer, ReflexiveScorer, ScaledScorer, TagMatch, TagScorer, VectorScorer,
};
use cupel_slicers::{
    ContiguousSlice, CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice,
    KnapsackSlice, QuotaSet, QuotaSlice, ScoreOrderSlice,
};

use crate::config::{
    Bm25ScorerConfig, CountQuotaConfig, CurveConfig, DecayScorerConfig, FusionConfig,
    HybridScorerConfig, InnerScorer, KindScorerConfig, KnapsackSlicerConfig,
    MetadataKeyScorerConfig, ScaledScorerConfig, ScorerConfig, SlicerConfig, TagScorerConfig,
    kind_weights,
};
use crate::names::{PlacerType, SlicerType};
use crate::registry::ComponentRegistry;

/// Prefixes a construction error with where it came from, keeping its variant.
pub(crate) fn at(err: CupelError, path: &str) -> CupelError {
    match err {
        CupelError::ScorerConfig(m) => CupelError::ScorerConfig(format!("{path}: {m}")),
        CupelError::SlicerConfig(m) => CupelError::SlicerConfig(format!("{path}: {m}")),
        CupelError::PipelineConfig(m) => CupelError::PipelineConfig(format!("{path}: {m}")),
        CupelError::Config(c) => {
            let message = format!("{path}: {}", c.message());
            let c = if c.key_path().is_none() {
                c.with_key_path(crate::config::key_path(path))
            } else {
                c
            };
            CupelError::Config(c.with_message(message))
        }
        other => other,
    }
}

fn missing(path: &str, key: &str, kind: &str) -> CupelError {
    CupelError::PipelineConfig(format!("{path}: scorer type `{kind}` needs key `{key}`"))
}

pub(crate) fn scorer(
    cfg: &ScorerConfig,
    path: &str,
    registry: &ComponentRegistry,
) -> Result<Arc<dyn Scorer>, CupelError> {
    let built: Arc<dyn Scorer> = match cfg {
        ScorerConfig::Custom(c) => {
            return registry
                .scorer(&c.name, c.params.as_ref())
                .map_err(|e| at(e, path));
        }
        ScorerConfig::Recency(_) => Arc::new(RecencyScorer::new()),
        ScorerConfig::Priority(_) => Arc::new(PriorityScorer::new()),
        ScorerConfig::Frequency(_) => Arc::new(FrequencyScorer::new()),
        ScorerConfig::Reflexive(_) => Arc::new(ReflexiveScorer::new()),
        ScorerConfig::Position(_) => Arc::new(PositionScorer::new()),
        ScorerConfig::Vector(_) => Arc::new(VectorScorer::new()),
        ScorerConfig::Kind(c) => kind_scorer(c, path)?,
        ScorerConfig::Tag(c) => tag_scorer(c, path)?,
        ScorerConfig::Composite(c) => {
            let children = c
                .children
                .as_ref()
                .ok_or_else(|| missing(path, "children", "composite"))?;
            composite(children, &format!("{path}.children"), registry)?
        }
        ScorerConfig::Scaled(c) => scaled(c, path, registry)?,
        ScorerConfig::Decay(c) => decay_scorer(c, path)?,
        ScorerConfig::MetadataTrust(c) => Arc::new(
            MetadataTrustScorer::new(c.default_score.unwrap_or(0.5)).map_err(|e| at(e, path))?,
        ),
        ScorerConfig::MetadataKey(c) => metadata_key_scorer(c, path)?,
        ScorerConfig::Bm25(c) => bm25_scorer(c, path)?,
        ScorerConfig::Hybrid(c) => hybrid(c, path, registry)?,
    };
    Ok(built)
}

/// A `scaled` scorer around its `inner_scorer`.
fn scaled(
    cfg: &ScaledScorerConfig,
    path: &str,
    registry: &ComponentRegistry,
) -> Result<Arc<dyn Scorer>, CupelError> {
    let inner = cfg
        .inner_scorer
        .as_ref()
        .ok_or_else(|| missing(path, "inner_scorer", "scaled"))?;
    let inner_path = format!("{path}.inner_scorer");
    let inner = match inner {
        InnerScorer::Name(t) => scorer(&ScorerConfig::new(*t), &inner_path, registry)?,
        InnerScorer::Config(c) => scorer(c, &inner_path, registry)?,
    };
    Ok(Arc::new(ScaledScorer::new(inner)))
}

/// A `kind` scorer: custom `weights`, or the defaults.
fn kind_scorer(cfg: &KindScorerConfig, path: &str) -> Result<Arc<dyn Scorer>, CupelError> {
    Ok(match (&cfg.weights, cfg.use_default_weights) {
        (Some(w), Some(true)) if !w.is_empty() => {
            return Err(CupelError::PipelineConfig(format!(
                "{path}: `use_default_weights = true` conflicts with custom `weights`"
            )));
        }
        // Asking for the defaults wins over an empty custom list.
        (_, Some(true)) | (None, _) => Arc::new(KindScorer::default_weights()),
        (Some(w), _) => Arc::new(KindScorer::new(kind_weights(w, path)?).map_err(|e| at(e, path))?),
    })
}

/// A `tag` scorer from `tag_weights` (and `case_insensitive_tags`).
fn tag_scorer(cfg: &TagScorerConfig, path: &str) -> Result<Arc<dyn Scorer>, CupelError> {
    let weights = cfg
        .tag_weights
        .as_ref()
        .ok_or_else(|| missing(path, "tag_weights", "tag"))?;
    let scorer = TagScorer::new(weights.iter().map(|w| (w.tag.clone(), w.weight)))
        .map_err(|e| at(e, path))?;
    let scorer = if cfg.case_insensitive_tags == Some(true) {
        scorer
            .with_match(TagMatch::AsciiCaseInsensitive)
            .map_err(|e| at(e, path))?
    } else {
        scorer
    };
    Ok(Arc::new(scorer))
}

/// A `decay` scorer from `curve`, `reference_time` and `null_timestamp_score`.
fn decay_scorer(cfg: &DecayScorerConfig, path: &str) -> Result<Arc<dyn Scorer>, CupelError> {
    let curve_cfg = cfg
        .curve
        .as_ref()
        .ok_or_else(|| missing(path, "curve", "decay"))?;
    let curve = match curve_cfg {
        CurveConfig::Exponential { half_life_secs } => {
            DecayCurve::exponential_secs(*half_life_secs)
        }
        CurveConfig::Window { max_age_secs } => DecayCurve::window_secs(*max_age_secs),
        CurveConfig::Step { windows } => {
            DecayCurve::step_secs(windows.iter().map(|w| (w.max_age_secs, w.score)))
        }
    }
    .map_err(|e| at(e, &format!("{path}.curve")))?;
    let clock: Arc<dyn TimeProvider> = match cfg.reference_time {
        Some(t) => Arc::new(FixedTimeProvider::new(t)),
        None => Arc::new(SystemTimeProvider),
    };
    let mut decay = DecayScorer::new(clock, curve).map_err(|e| at(e, path))?;
    if let Some(s) = cfg.null_timestamp_score {
        decay = decay
            .with_null_timestamp_score(s)
            .map_err(|e| at(e, path))?;
    }
    Ok(Arc::new(decay))
}

/// A `metadata_key` scorer from `key`, `value` and `boost`.
fn metadata_key_scorer(
    cfg: &MetadataKeyScorerConfig,
    path: &str,
) -> Result<Arc<dyn Scorer>, CupelError> {
    let key = cfg
        .key
        .as_ref()
        .ok_or_else(|| missing(path, "key", "metadata_key"))?;
    let value = cfg
        .value
        .as_ref()
        .ok_or_else(|| missing(path, "value", "metadata_key"))?;
    let boost = cfg
        .boost
        .ok_or_else(|| missing(path, "boost", "metadata_key"))?;
    Ok(Arc::new(
        MetadataKeyScorer::new(key.clone(), value.clone(), boost).map_err(|e| at(e, path))?,
    ))
}

/// A `bm25` scorer from its optional keys (the builder's defaults otherwise).
fn bm25_scorer(cfg: &Bm25ScorerConfig, path: &str) -> Result<Arc<dyn Scorer>, CupelError> {
    let mut b = Bm25Scorer::builder();
    if let Some(k1) = cfg.k1 {
        b = b.k1(k1);
    }
    if let Some(v) = cfg.b {
        b = b.b(v);
    }
    if let Some(on) = cfg.stemming {
        b = b.stemming(on);
    }
    if let Some(share) = cfg.neighbours {
        b = b.neighbours(share);
    }
    if let Some(key) = &cfg.group_key {
        b = b.group_key(key.clone());
    }
    if let Some(q) = &cfg.query {
        b = b.query(q.clone());
    }
    if cfg.feedback.is_some() || cfg.feedback_docs.is_some() || cfg.feedback_terms.is_some() {
        let std = cupel_scorers::Bm25Feedback::STANDARD;
        b = b.feedback(cupel_scorers::Bm25Feedback {
            weight: cfg.feedback.unwrap_or(std.weight),
            docs: cfg.feedback_docs.unwrap_or(std.docs),
            terms: cfg.feedback_terms.unwrap_or(std.terms),
        });
    }
    if let Some(w) = cfg.group_weight {
        b = b.group_weight(w);
    }
    Ok(Arc::new(b.build().map_err(|e| at(e, path))?))
}

/// A `hybrid` scorer: its `children` fused by `fusion` (default `rrf`,
/// `rrf_k` default 60).
fn hybrid(
    cfg: &HybridScorerConfig,
    path: &str,
    registry: &ComponentRegistry,
) -> Result<Arc<dyn Scorer>, CupelError> {
    let entries = cfg
        .children
        .as_ref()
        .ok_or_else(|| missing(path, "children", "hybrid"))?;
    let fusion = match (cfg.fusion.unwrap_or(FusionConfig::Rrf), cfg.rrf_k) {
        (FusionConfig::Rrf, k) => Fusion::ReciprocalRank {
            k: k.unwrap_or(Fusion::DEFAULT_RRF_K),
        },
        (FusionConfig::Weighted, None) => Fusion::Weighted,
        (FusionConfig::Weighted, Some(_)) => {
            return Err(CupelError::PipelineConfig(format!(
                "{path}: `rrf_k` applies to `fusion = \"rrf\"` only, not `weighted`"
            )));
        }
    };
    let mut children = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let child_path = format!("{path}.children[{i}]");
        children.push((scorer(e, &child_path, registry)?, e.weight_value()));
    }
    Ok(Arc::new(
        HybridScorer::new(children, fusion).map_err(|e| at(e, path))?,
    ))
}

pub(crate) fn composite(
    entries: &[ScorerConfig],
    path: &str,
    registry: &ComponentRegistry,
) -> Result<Arc<dyn Scorer>, CupelError> {
    let mut children = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        children.push((
            scorer(e, &format!("{path}[{i}]"), registry)?,
            e.weight_value(),
        ));
    }
    Ok(Arc::new(
        CompositeScorer::new(children).map_err(|e| at(e, path))?,
    ))
}

impl PlacerType {
    /// The built-in placer of this type (placers take no configuration).
    ///
    /// ```
    /// use cupel_core::{ContextItem, ScoredItem};
    /// use cupel_pipeline::PlacerType;
    /// let (a, b) = (ContextItem::new("a", 1)?, ContextItem::new("b", 1)?);
    /// let merged = [ScoredItem::new(&a, 0.2), ScoredItem::new(&b, 0.9)];
    /// // Two items: the better one first, the other at the far edge.
    /// assert_eq!(PlacerType::UShaped.build().place(&merged), vec![1, 0]);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn build(self) -> Arc<dyn Placer> {
        match self {
            PlacerType::Chronological => Arc::new(ChronologicalPlacer),
            PlacerType::UShaped => Arc::new(UShapedPlacer),
        }
    }
}

fn kind(name: &str, path: &str) -> Result<ContextKind, CupelError> {
    ContextKind::new(name).map_err(|e| CupelError::PipelineConfig(format!("{path}: {e}")))
}

fn count(v: i64, key: &str, path: &str) -> Result<usize, CupelError> {
    usize::try_from(v)
        .map_err(|_| CupelError::SlicerConfig(format!("{path}.{key} must be >= 0 (got {v})")))
}

fn knapsack(cfg: &KnapsackSlicerConfig) -> Result<KnapsackSlice, CupelError> {
    let mut k =
        KnapsackSlice::new(cfg.bucket_size.unwrap_or(100)).map_err(|e| at(e, "bucket_size"))?;
    if let Some(cells) = cfg.max_table_cells {
        k = k.with_max_table_cells(cells);
    }
    if let Some(bytes) = cfg.max_table_bytes {
        k = k.with_max_table_bytes(bytes);
    }
    Ok(k)
}

fn entries(entries: &[CountQuotaConfig]) -> Result<Vec<CountQuotaEntry>, CupelError> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let p = format!("entries[{i}]");
            CountQuotaEntry::new(
                kind(&e.kind, &p)?,
                count(e.require_count, "require_count", &p)?,
                count(e.cap_count, "cap_count", &p)?,
            )
            .map_err(|err| at(err, &p))
        })
        .collect()
}

/// The slicer a decorator delegates to (`inner_slicer`, default `greedy`);
/// a knapsack inner slicer inherits the decorator's knapsack keys.
fn inner(
    cfg: &SlicerConfig,
    inner_slicer: Option<SlicerType>,
) -> Result<Arc<dyn Slicer>, CupelError> {
    let inner_cfg = SlicerConfig::new(inner_slicer.unwrap_or(SlicerType::Greedy))
        .with_knapsack_keys(&cfg.knapsack_keys());
    slicer(&inner_cfg, &ComponentRegistry::new()).map_err(|e| at(e, "inner_slicer"))
}

pub(crate) fn slicer(
    cfg: &SlicerConfig,
    registry: &ComponentRegistry,
) -> Result<Arc<dyn Slicer>, CupelError> {
    Ok(match cfg {
        SlicerConfig::Custom(c) => {
            return registry
                .slicer(&c.name, c.slicer_params.as_ref())
                .map_err(|e| at(e, "slicer"));
        }
        SlicerConfig::Greedy => Arc::new(GreedySlice::new()),
        SlicerConfig::ScoreOrder => Arc::new(ScoreOrderSlice::new()),
        SlicerConfig::Contiguous => Arc::new(ContiguousSlice::new()),
        SlicerConfig::Knapsack(k) => Arc::new(knapsack(k)?),
        SlicerConfig::Quota(q) => {
            let mut b = QuotaSet::builder();
            for (i, q) in q.quotas.iter().enumerate() {
                b = b.quota(kind(&q.kind, &format!("quotas[{i}]"))?, q.require, q.cap);
            }
            let set = b.build().map_err(|e| at(e, "quotas"))?;
            Arc::new(QuotaSlice::new(set, inner(cfg, q.inner_slicer)?))
        }
        SlicerConfig::CountQuota(q) => Arc::new(
            CountQuotaSlice::new(
                entries(&q.entries)?,
                inner(cfg, q.inner_slicer)?,
                q.scarcity_behavior.unwrap_or_default(),
            )
            .map_err(|e| at(e, "count_quota"))?,
        ),
        SlicerConfig::CountConstrainedKnapsack(q) => Arc::new(
            CountConstrainedKnapsackSlice::new(
                entries(&q.entries)?,
                knapsack(&cfg.knapsack_keys())?,
                q.scarcity_behavior.unwrap_or_default(),
            )
            .map_err(|e| at(e, "count_constrained_knapsack"))?,
        ),
    })
}
