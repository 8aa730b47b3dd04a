//! [`ComponentRegistry`]: custom scorers, slicers and placers that a policy file can name.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use cupel_core::{ConfigError, CupelError, Placer, Scorer, Slicer};
use serde_json::Value;

use crate::names::{PlacerType, ScorerType, SlicerType};

/// Builds a custom scorer from its `params` table.
pub type ScorerConstructor =
    Arc<dyn Fn(&Value) -> Result<Arc<dyn Scorer>, CupelError> + Send + Sync>;
/// Builds a custom slicer from its `slicer_params` table.
pub type SlicerConstructor =
    Arc<dyn Fn(&Value) -> Result<Arc<dyn Slicer>, CupelError> + Send + Sync>;
/// Builds a custom placer from its `placer_params` table.
pub type PlacerConstructor =
    Arc<dyn Fn(&Value) -> Result<Arc<dyn Placer>, CupelError> + Send + Sync>;

/// Custom components by name, for [`PolicyConfig::build_with`](crate::PolicyConfig::build_with).
///
/// Register a name and a constructor; a policy that names the type
/// (`type = "keyword"` in a `[[scorers]]` entry, `slicer = "..."`,
/// `placer = "..."`) gets the component the constructor returns. The
/// constructor receives the component's own table — the scorer entry's
/// `params`, the policy's `slicer_params` or `placer_params` — as a
/// [`serde_json::Value`] whatever the file format (TOML values map onto JSON
/// ones; write timestamps as strings), or an empty object when the table is
/// absent. Deserialise it into your own type with `serde_json::from_value`.
///
/// Names are matched ignoring ASCII case. A name a built-in type already
/// answers to (`recency`, `RecencyScorer`, ...) cannot be registered; a name
/// registered twice replaces the earlier constructor. A policy naming a type
/// that is neither built in nor registered fails to build, listing both.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextBudget, ContextItem, CupelError, Scorer};
/// use cupel_pipeline::{ComponentRegistry, Pipeline, PolicyConfig};
///
/// /// Scores 1.0 for items containing any keyword, else 0.0.
/// struct KeywordScorer(Vec<String>);
/// impl Scorer for KeywordScorer {
///     fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
///         let text = items[index].content();
///         if self.0.iter().any(|k| text.contains(k.as_str())) { 1.0 } else { 0.0 }
///     }
/// }
///
/// #[derive(serde::Deserialize)]
/// struct KeywordParams { keywords: Vec<String> }
///
/// let mut registry = ComponentRegistry::new();
/// registry.register_scorer("keyword", |params| {
///     let p: KeywordParams = serde_json::from_value(params.clone())
///         .map_err(|e| CupelError::ScorerConfig(format!("keyword: {e}")))?;
///     Ok(Arc::new(KeywordScorer(p.keywords)) as Arc<dyn Scorer>)
/// })?;
///
/// let policy = PolicyConfig::from_toml_str(r#"
///     [[scorers]]
///     type = "keyword"
///     params = { keywords = ["rust"] }
/// "#)?
/// .build_with(&registry)?;
///
/// let pipeline = Pipeline::new(policy, ContextBudget::new(100, 10)?);
/// let items = vec![
///     ContextItem::new("about python", 10)?,
///     ContextItem::new("about rust", 10)?,
/// ];
/// assert_eq!(pipeline.run(&items)?[0].content(), "about rust");
///
/// // Without the registry the name is unknown, and the error lists the choices.
/// let err = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"keyword\"\n")?
///     .build()
///     .unwrap_err();
/// assert!(err.to_string().contains("unknown scorer `keyword`"));
/// # Ok::<(), CupelError>(())
/// ```
#[derive(Clone, Default)]
pub struct ComponentRegistry {
    scorers: BTreeMap<String, ScorerConstructor>,
    slicers: BTreeMap<String, SlicerConstructor>,
    placers: BTreeMap<String, PlacerConstructor>,
}

impl fmt::Debug for ComponentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentRegistry")
            .field("scorers", &self.scorers.keys().collect::<Vec<_>>())
            .field("slicers", &self.slicers.keys().collect::<Vec<_>>())
            .field("placers", &self.placers.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn key(name: &str, what: &str, is_builtin: bool) -> Result<String, CupelError> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(CupelError::PipelineConfig(format!(
            "a custom {what} needs a non-empty name"
        )));
    }
    if is_builtin {
        return Err(CupelError::PipelineConfig(format!(
            "`{name}` names a built-in {what}; register the custom {what} under another name"
        )));
    }
    Ok(trimmed.to_ascii_lowercase())
}

fn unknown(what: &str, name: &str, builtin: &[&str], registered: Vec<&String>) -> CupelError {
    let listed = if registered.is_empty() {
        "none".to_owned()
    } else {
        registered
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let expected: Vec<String> = builtin
        .iter()
        .map(|s| (*s).to_owned())
        .chain(registered.into_iter().cloned())
        .collect();
    ConfigError::new(format!(
        "unknown {what} `{name}` (built-in: {}; registered: {listed})",
        builtin.join(", ")
    ))
    .with_expected(expected)
    .into()
}

impl ComponentRegistry {
    /// An empty registry: only the built-in components.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a custom scorer type.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] when `name` is empty or names a built-in scorer.
    pub fn register_scorer<F>(&mut self, name: &str, constructor: F) -> Result<(), CupelError>
    where
        F: Fn(&Value) -> Result<Arc<dyn Scorer>, CupelError> + Send + Sync + 'static,
    {
        let k = key(name, "scorer", ScorerType::from_name(name).is_some())?;
        self.scorers.insert(k, Arc::new(constructor));
        Ok(())
    }

    /// Registers a custom slicer type.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] when `name` is empty or names a built-in slicer.
    pub fn register_slicer<F>(&mut self, name: &str, constructor: F) -> Result<(), CupelError>
    where
        F: Fn(&Value) -> Result<Arc<dyn Slicer>, CupelError> + Send + Sync + 'static,
    {
        let k = key(name, "slicer", SlicerType::from_name(name).is_some())?;
        self.slicers.insert(k, Arc::new(constructor));
        Ok(())
    }

    /// Registers a custom placer type.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] when `name` is empty or names a built-in placer.
    pub fn register_placer<F>(&mut self, name: &str, constructor: F) -> Result<(), CupelError>
    where
        F: Fn(&Value) -> Result<Arc<dyn Placer>, CupelError> + Send + Sync + 'static,
    {
        let k = key(name, "placer", PlacerType::from_name(name).is_some())?;
        self.placers.insert(k, Arc::new(constructor));
        Ok(())
    }

    /// The registered scorer names (lowercase, sorted).
    pub fn scorer_names(&self) -> impl Iterator<Item = &str> {
        self.scorers.keys().map(String::as_str)
    }

    /// The registered slicer names (lowercase, sorted).
    pub fn slicer_names(&self) -> impl Iterator<Item = &str> {
        self.slicers.keys().map(String::as_str)
    }

    /// The registered placer names (lowercase, sorted).
    pub fn placer_names(&self) -> impl Iterator<Item = &str> {
        self.placers.keys().map(String::as_str)
    }

    pub(crate) fn scorer(
        &self,
        name: &str,
        params: Option<&Value>,
    ) -> Result<Arc<dyn Scorer>, CupelError> {
        match self.scorers.get(&name.trim().to_ascii_lowercase()) {
            Some(c) => c(params.unwrap_or(&empty())),
            None => Err(unknown(
                "scorer",
                name,
                &ScorerType::ALL
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>(),
                self.scorers.keys().collect(),
            )),
        }
    }

    pub(crate) fn slicer(
        &self,
        name: &str,
        params: Option<&Value>,
    ) -> Result<Arc<dyn Slicer>, CupelError> {
        match self.slicers.get(&name.trim().to_ascii_lowercase()) {
            Some(c) => c(params.unwrap_or(&empty())),
            None => Err(unknown(
                "slicer",
                name,
                &SlicerType::ALL
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>(),
                self.slicers.keys().collect(),
            )),
        }
    }

    pub(crate) fn placer(
        &self,
        name: &str,
        params: Option<&Value>,
    ) -> Result<Arc<dyn Placer>, CupelError> {
        match self.placers.get(&name.trim().to_ascii_lowercase()) {
            Some(c) => c(params.unwrap_or(&empty())),
            None => Err(unknown(
                "placer",
                name,
                &PlacerType::ALL
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>(),
                self.placers.keys().collect(),
            )),
        }
    }
}

fn empty() -> Value {
    Value::Object(serde_json::Map::new())
}
