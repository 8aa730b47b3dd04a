//! Custom components named in a policy and resolved through a `ComponentRegistry`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, CupelError, Placer, ScoredItem, Scorer, SliceBudget, SliceOutcome,
    Slicer, SlicerKind,
};
use cupel_pipeline::{ComponentRegistry, ComponentType, Pipeline, PolicyConfig, ScorerType};
use serde_json::Value;

/// 1.0 for items containing a keyword, else 0.0.
struct KeywordScorer(Vec<String>);

impl Scorer for KeywordScorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        let text = items[index].content();
        if self.0.iter().any(|k| text.contains(k.as_str())) {
            1.0
        } else {
            0.0
        }
    }
}

fn keyword(params: &Value) -> Result<Arc<dyn Scorer>, CupelError> {
    let words = params
        .get("keywords")
        .and_then(Value::as_array)
        .ok_or_else(|| CupelError::ScorerConfig("keyword: `keywords` list required".into()))?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    Ok(Arc::new(KeywordScorer(words)))
}

/// Places in reverse merged order.
struct Reverse;

impl Placer for Reverse {
    fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
        (0..items.len()).rev().collect()
    }
}

/// Takes the first `n` items, whatever they cost.
struct FirstN(usize);

impl Slicer for FirstN {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        _budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        Ok(SliceOutcome {
            selected: (0..items.len().min(self.0)).collect(),
            ..SliceOutcome::default()
        })
    }
}

fn registry() -> ComponentRegistry {
    let mut r = ComponentRegistry::new();
    r.register_scorer("keyword", keyword).unwrap();
    r.register_placer("reverse", |_: &Value| {
        Ok(Arc::new(Reverse) as Arc<dyn Placer>)
    })
    .unwrap();
    r.register_slicer("first_n", |p: &Value| {
        let n = p.get("n").and_then(Value::as_u64).unwrap_or(1);
        Ok(Arc::new(FirstN(usize::try_from(n).unwrap_or(usize::MAX))) as Arc<dyn Slicer>)
    })
    .unwrap();
    r
}

fn items() -> Vec<ContextItem> {
    ["python notes", "rust notes", "rust book", "go notes"]
        .iter()
        .map(|c| ContextItem::new(*c, 10).unwrap())
        .collect()
}

fn contents(w: &[ContextItem]) -> Vec<&str> {
    w.iter().map(ContextItem::content).collect()
}

#[test]
fn a_toml_policy_names_a_registered_scorer_with_its_own_table() {
    let cfg = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"keyword\"\nparams = { keywords = [\"rust\"] }\n",
    )
    .unwrap();
    assert_eq!(
        cfg.scorers[0].scorer_type(),
        ComponentType::Custom("keyword".into())
    );
    let policy = cfg.build_with(&registry()).unwrap();
    let window = Pipeline::new(policy, ContextBudget::new(100, 20).unwrap())
        .run(&items())
        .unwrap();
    assert_eq!(contents(&window), ["rust notes", "rust book"]);
}

#[test]
fn a_json_policy_names_custom_scorer_slicer_and_placer() {
    let cfg = PolicyConfig::from_json_str(
        r#"{"scorers": [{"type": "Keyword", "params": {"keywords": ["rust"]}, "weight": 2},
                        {"type": "recency"}],
            "slicer": "first_n", "slicer_params": {"n": 3},
            "placer": "reverse"}"#,
    )
    .unwrap();
    let policy = cfg.build_with(&registry()).unwrap();
    assert_eq!(policy.slicer().slicer_kind(), SlicerKind::Custom);
    let window = Pipeline::new(policy, ContextBudget::new(1000, 1000).unwrap())
        .run(&items())
        .unwrap();
    // Keyword matches first (stable by input order), then the first non-match, reversed.
    assert_eq!(
        contents(&window),
        ["python notes", "rust book", "rust notes"]
    );
    // The wire format round-trips the custom names and tables.
    let back = PolicyConfig::from_json_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
}

#[test]
fn unknown_names_list_the_built_in_and_registered_names() {
    let cfg = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"keywrd\"\n").unwrap();
    let e = cfg.build_with(&registry()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "pipeline configuration: scorers[0]: unknown scorer `keywrd` (built-in: {}; registered: keyword)",
            ScorerType::expected()
        )
    );
    let e = PolicyConfig::from_toml_str("placer = \"sideways\"\n[[scorers]]\ntype = \"recency\"\n")
        .unwrap()
        .build_with(&registry())
        .unwrap_err();
    assert!(
        e.to_string().contains(
            "unknown placer `sideways` (built-in: chronological, u_shaped; registered: reverse)"
        ),
        "{e}"
    );
    // `build()` knows only the built-ins.
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"keyword\"\n")
        .unwrap()
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("registered: none"), "{e}");
}

#[test]
fn constructor_errors_say_where_the_component_sits() {
    let e = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"recency\"\n[[scorers]]\ntype = \"keyword\"\n",
    )
    .unwrap()
    .build_with(&registry())
    .unwrap_err();
    assert_eq!(
        e,
        CupelError::ScorerConfig("scorers[1]: keyword: `keywords` list required".into())
    );
}

#[test]
fn params_only_apply_to_custom_components() {
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"recency\"\nparams = { a = 1 }\n")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("key `params` does not apply to scorer type `recency`"),
        "{e}"
    );
    let e =
        PolicyConfig::from_toml_str("slicer_params = { n = 1 }\n[[scorers]]\ntype = \"recency\"\n")
            .unwrap_err();
    assert!(
        e.to_string().contains("`slicer_params` does not apply"),
        "{e}"
    );
    let e =
        PolicyConfig::from_toml_str("placer_params = { n = 1 }\n[[scorers]]\ntype = \"recency\"\n")
            .unwrap_err();
    assert!(
        e.to_string().contains("`placer_params` does not apply"),
        "{e}"
    );
    // Built-in keys on a custom component are misplaced too.
    let e =
        PolicyConfig::from_toml_str("[[scorers]]\ntype = \"keyword\"\nboost = 2.0\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("key `boost` does not apply to scorer type `keyword`"),
        "{e}"
    );
}

#[test]
fn built_in_names_cannot_be_registered() {
    let mut r = ComponentRegistry::new();
    let e = r.register_scorer("RecencyScorer", keyword).unwrap_err();
    assert!(e.to_string().contains("names a built-in scorer"), "{e}");
    assert!(
        r.register_placer("u-shaped", |_: &Value| Ok(
            Arc::new(Reverse) as Arc<dyn Placer>
        ))
        .is_err()
    );
    assert!(r.register_scorer("  ", keyword).is_err());
    assert_eq!(registry().scorer_names().collect::<Vec<_>>(), ["keyword"]);
}

#[test]
fn a_custom_scorer_works_inside_composite_and_scaled() {
    let cfg = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"scaled\"\ninner_scorer = { type = \"keyword\", params = { keywords = [\"go\"] } }\n",
    )
    .unwrap();
    let policy = cfg.build_with(&registry()).unwrap();
    let window = Pipeline::new(policy, ContextBudget::new(100, 10).unwrap())
        .run(&items())
        .unwrap();
    assert_eq!(contents(&window), ["go notes"]);
}

#[test]
fn an_unknown_name_is_a_structured_config_error() {
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"keywrd\"\n")
        .unwrap()
        .build_with(&registry())
        .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0]"));
    assert!(c.expected().iter().any(|n| n == "recency"));
    assert!(c.expected().iter().any(|n| n == "keyword"));
}
