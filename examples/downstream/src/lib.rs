//! A support-desk application that selects each model call's context with
//! Cupel — the downstream example of the repository.
//!
//! It uses only the individual crates (`cupel-rs-core`, `-scorers`,
//! `-slicers`, `-placers`, `-pipeline`) and shows what an application needs:
//!
//! * a **custom scorer** ([`KeywordScorer`]) next to the built-in slicer and
//!   placer;
//! * **per-request budgets**: one [`Pipeline`] serves models with different
//!   context lengths through [`Pipeline::run_with`] and a per-request budget ([`select_for`]);
//! * **one run, two collectors**: [`traced_select`] feeds any collector (the
//!   OpenTelemetry bridge, in the tests) and returns the run's
//!   [`SelectionReport`] from the same run;
//! * **custom components in config**: [`pipeline_from_policy`] registers
//!   [`KeywordScorer`] as `type = "keyword"` in a [`ComponentRegistry`] and
//!   builds the same pipeline from a TOML policy ([`SUPPORT_POLICY`]).
//!
//! The tests (`tests/downstream.rs`) add the dev-dependencies: `cupel-rs-otel`
//! (spans in an in-memory exporter, and the `tracing` collector's span tree
//! under a recording subscriber, both checked against the public
//! `cupel_otel::names` constants) and `cupel-rs-testing` (assertions on the
//! report). They also run the example binary (`src/main.rs`).

use chrono::{DateTime, Utc};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, Scorer, SelectionReport, TraceCollector,
};
use cupel_pipeline::serde_json::Value;
use cupel_pipeline::{ComponentRegistry, Pipeline, PolicyConfig, RunOptions};
use cupel_placers::ChronologicalPlacer;
use cupel_slicers::GreedySlice;

/// Scores 1.0 when an item's content mentions the keyword (ASCII
/// case-insensitively), 0.0 otherwise: the application's own scorer.
#[derive(Debug, Clone)]
pub struct KeywordScorer {
    keyword: String,
}

impl KeywordScorer {
    /// A scorer looking for `keyword`.
    pub fn new(keyword: impl Into<String>) -> Self {
        Self {
            keyword: keyword.into().to_ascii_lowercase(),
        }
    }
}

impl Scorer for KeywordScorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        match items.get(index) {
            Some(item) if item.content().to_ascii_lowercase().contains(&self.keyword) => 1.0,
            Some(_) => 0.0,
            None => f64::NAN,
        }
    }
}

/// A model the application calls, with its context budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// The model's name.
    pub name: &'static str,
    /// Its context length (the budget's `max_tokens`).
    pub max_tokens: i64,
    /// How much of it the application lets the context fill.
    pub target_tokens: i64,
}

impl Model {
    /// The model's context budget.
    ///
    /// # Errors
    /// [`CupelError`] if the numbers do not make a valid budget.
    pub fn budget(&self) -> Result<ContextBudget, CupelError> {
        ContextBudget::new(self.max_tokens, self.target_tokens)
    }
}

/// A small, cheap model.
pub const SMALL: Model = Model {
    name: "small",
    max_tokens: 128,
    target_tokens: 100,
};

/// A larger model.
pub const LARGE: Model = Model {
    name: "large",
    max_tokens: 1_024,
    target_tokens: 130,
};

/// The application's pipeline: keyword scoring, greedy slicing,
/// chronological placement. Its own budget is a generous default; each
/// request passes its model's budget.
///
/// # Errors
/// [`CupelError`] if the pipeline cannot be built.
pub fn support_pipeline(keyword: &str) -> Result<Pipeline, CupelError> {
    Pipeline::builder()
        .scorer(KeywordScorer::new(keyword))
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100_000, 100_000)?)
        .build()
}

/// The policy of [`support_pipeline`] as configuration: the custom
/// `keyword` scorer with its own table (`params`), greedy slicing,
/// chronological placement.
pub const SUPPORT_POLICY: &str = r#"
slicer = "greedy"
placer = "chronological"

[[scorers]]
type = "keyword"
params = { keyword = "refund" }
"#;

/// A registry that knows the application's `keyword` scorer: its
/// constructor reads `keyword` (a string) from the scorer's `params` table.
///
/// # Errors
/// [`CupelError`] if the name cannot be registered.
pub fn registry() -> Result<ComponentRegistry, CupelError> {
    let mut registry = ComponentRegistry::new();
    registry.register_scorer("keyword", |params: &Value| {
        let keyword = params
            .get("keyword")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                CupelError::ScorerConfig(
                    "keyword: `params.keyword` must be a non-empty string".into(),
                )
            })?;
        Ok(std::sync::Arc::new(KeywordScorer::new(keyword)) as std::sync::Arc<dyn Scorer>)
    })?;
    Ok(registry)
}

/// The pipeline described by `policy` (TOML), with the application's
/// custom components resolved through [`registry`].
///
/// # Errors
/// [`CupelError`] for a policy that does not parse or build — an unknown
/// `type` lists the built-in and the registered names.
pub fn pipeline_from_policy(policy: &str) -> Result<Pipeline, CupelError> {
    let policy = PolicyConfig::from_toml_str(policy)?.build_with(&registry()?)?;
    Ok(Pipeline::new(policy, ContextBudget::new(100_000, 100_000)?))
}

/// Selects the window for `model`: the same pipeline, the model's budget.
///
/// # Errors
/// As [`Pipeline::run_with`].
pub fn select_for(
    pipeline: &Pipeline,
    items: &[ContextItem],
    model: Model,
) -> Result<Vec<ContextItem>, CupelError> {
    let budget = model.budget()?;
    Ok(pipeline
        .run_with(items, RunOptions::new().budget(&budget))?
        .items)
}

/// Selects the window for `model`, reporting the run to `collector` and
/// returning the run's report with the window.
///
/// # Errors
/// As [`Pipeline::run_with`].
pub fn traced_select<C: TraceCollector + ?Sized>(
    pipeline: &Pipeline,
    items: &[ContextItem],
    model: Model,
    collector: &mut C,
) -> Result<(Vec<ContextItem>, SelectionReport), CupelError> {
    let budget = model.budget()?;
    let options = RunOptions::new()
        .budget(&budget)
        .collector(collector)
        .report(true);
    let out = pipeline.run_with(items, options)?;
    Ok((out.items, out.report.unwrap_or_default()))
}

fn at(minute: u32) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(1_767_258_000 + i64::from(minute) * 60, 0).unwrap_or_default()
}

/// A billing conversation: a pinned system prompt (20 tokens) and four
/// candidates, in time order.
///
/// | content | tokens | mentions "refund" |
/// | --- | --- | --- |
/// | refund policy | 60 | yes |
/// | user asks for a refund | 30 | yes |
/// | weather small talk | 10 | no |
/// | shipping FAQ | 50 | no |
///
/// # Errors
/// [`CupelError`] if an item is invalid (they are not).
pub fn billing_conversation() -> Result<Vec<ContextItem>, CupelError> {
    Ok(vec![
        ContextItem::builder("You are the billing assistant.", 20)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .timestamp(at(0))
            .build()?,
        ContextItem::builder("Refund policy: refunds within 30 days.", 60)
            .kind(ContextKind::DOCUMENT)
            .timestamp(at(1))
            .build()?,
        ContextItem::builder("User: I want a refund for order 42.", 30)
            .kind(ContextKind::MESSAGE)
            .timestamp(at(2))
            .build()?,
        ContextItem::builder("User: nice weather today.", 10)
            .kind(ContextKind::MESSAGE)
            .timestamp(at(3))
            .build()?,
        ContextItem::builder("Shipping FAQ: orders ship in 2 days.", 50)
            .kind(ContextKind::DOCUMENT)
            .timestamp(at(4))
            .build()?,
    ])
}
