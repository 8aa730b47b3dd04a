//! Scorer and slicer configurations are tagged enums: a key of another type
//! is rejected by the variant's struct, with the key's path and the keys
//! the variant has; every type round-trips through TOML and JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_core::{ConfigError, CupelError};
use cupel_pipeline::{
    ComponentType, PolicyConfig, PolicyTable, ScorerConfig, ScorerType, SlicerConfig, SlicerType,
};

/// The configuration error reading `toml` gives.
fn config_error(toml: &str) -> ConfigError {
    match PolicyConfig::from_toml_str(toml) {
        Err(CupelError::Config(c)) => c,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

/// Reads one scorer table with `extra` keys and returns (message, key path,
/// expected keys) of the error.
fn misplaced_scorer_key(scorer: &str, extra: &str) -> (String, String, Vec<String>) {
    let c = config_error(&format!("[[scorers]]\ntype = \"{scorer}\"\n{extra}\n"));
    (
        c.to_string(),
        c.key_path().unwrap_or_default().to_owned(),
        c.expected().to_vec(),
    )
}

#[test]
fn a_key_of_another_scorer_type_names_its_path_and_the_variants_keys() {
    // Each row: a type, a key of another type, and the type's keys: `type`
    // then the fields of its variant struct in declaration order (read off
    // `PlainScorerConfig { weight }`, `KindScorerConfig { weight,
    // use_default_weights, weights }`, and so on in scorer_config.rs).
    let rows: [(&str, &str, &[&str]); 11] = [
        ("recency", "k1 = 1.0", &["type", "weight"]),
        (
            "kind",
            "k1 = 1.0",
            &["type", "weight", "use_default_weights", "weights"],
        ),
        (
            "tag",
            "boost = 2.0",
            &["type", "weight", "tag_weights", "case_insensitive_tags"],
        ),
        (
            "composite",
            "fusion = \"rrf\"",
            &["type", "weight", "children"],
        ),
        (
            "scaled",
            "default_score = 0.5",
            &["type", "weight", "inner_scorer"],
        ),
        (
            "decay",
            "default_score = 0.5",
            &[
                "type",
                "weight",
                "reference_time",
                "null_timestamp_score",
                "curve",
            ],
        ),
        (
            "metadata_trust",
            "boost = 2.0",
            &["type", "weight", "default_score"],
        ),
        (
            "metadata_key",
            "k1 = 1.0",
            &["type", "weight", "key", "value", "boost"],
        ),
        (
            "bm25",
            "use_default_weights = true",
            &[
                "type",
                "weight",
                "k1",
                "b",
                "stemming",
                "neighbours",
                "group_key",
                "query",
                "feedback",
                "feedback_docs",
                "feedback_terms",
                "group_weight",
            ],
        ),
        (
            "hybrid",
            "inner_scorer = \"recency\"",
            &["type", "weight", "children", "fusion", "rrf_k"],
        ),
        // Not built in: a custom scorer has its weight and `params` only.
        ("keyword", "boost = 2.0", &["type", "weight", "params"]),
    ];
    for (scorer, extra, keys) in rows {
        let key = extra.split(' ').next().unwrap_or_default();
        let (message, path, expected) = misplaced_scorer_key(scorer, extra);
        assert_eq!(
            message,
            format!("scorers[0]: key `{key}` does not apply to scorer type `{scorer}`"),
            "{scorer}"
        );
        assert_eq!(path, format!("scorers[0].{key}"), "{scorer}");
        assert_eq!(expected, keys, "{scorer}");
        // The same list the configuration type gives.
        let built = ScorerConfig::new(ComponentType::<ScorerType>::from_name(scorer));
        assert_eq!(built.keys(), keys, "{scorer}");
    }
}

#[test]
fn params_is_reported_first_as_before() {
    // Both misplaced: `params` is named first, whatever the table's order.
    let (message, path, _) = misplaced_scorer_key("recency", "k1 = 1.0\nparams = { a = 1 }");
    assert_eq!(
        message,
        "scorers[0]: key `params` does not apply to scorer type `recency`"
    );
    assert_eq!(path, "scorers[0].params");
}

#[test]
fn nested_scorers_name_their_full_path() {
    let c = config_error(
        "[[scorers]]\ntype = \"composite\"\n[[scorers.children]]\ntype = \"recency\"\n\
         [[scorers.children]]\ntype = \"kind\"\nk1 = 1.0\n",
    );
    assert_eq!(
        c.to_string(),
        "scorers[0].children[1]: key `k1` does not apply to scorer type `kind`"
    );
    assert_eq!(c.key_path(), Some("scorers[0].children[1].k1"));
    let c = config_error(
        "[[scorers]]\ntype = \"scaled\"\ninner_scorer = { type = \"priority\", rrf_k = 60.0 }\n",
    );
    assert_eq!(c.key_path(), Some("scorers[0].inner_scorer.rrf_k"));
    assert_eq!(c.expected(), ["type", "weight"]);
    // A parent's own misplaced key is named before its children's.
    let c = config_error(
        "[[scorers]]\ntype = \"composite\"\nk1 = 1.0\n[[scorers.children]]\ntype = \"kind\"\nb = 1.0\n",
    );
    assert_eq!(c.key_path(), Some("scorers[0].k1"));
    // JSON reads the same way.
    let e = PolicyConfig::from_json_str(
        r#"{"scorers": [{"type": "hybrid", "scorers": [{"type": "bm25", "curve": {"type": "window", "max_age_secs": 1}}]}]}"#,
    )
    .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0].children[0].curve"));
}

#[test]
fn a_key_of_another_slicer_names_the_slicers_keys() {
    // The slicer's keys: the fields of its variant struct
    // (`KnapsackSlicerConfig { bucket_size, max_table_cells,
    // max_table_bytes }`, ...; none for greedy, score_order, contiguous).
    let knapsack = ["bucket_size", "max_table_cells", "max_table_bytes"];
    let rows: [(&str, &str, Vec<&str>); 7] = [
        ("greedy", "bucket_size = 10", vec![]),
        ("contiguous", "quotas = [{ kind = \"Message\" }]", vec![]),
        ("knapsack", "inner_slicer = \"greedy\"", knapsack.to_vec()),
        (
            "quota",
            "entries = [{ kind = \"Message\", cap_count = 1 }]",
            [&knapsack[..], &["inner_slicer", "quotas"]].concat(),
        ),
        (
            "count_quota",
            "quotas = [{ kind = \"Message\" }]",
            [
                &knapsack[..],
                &["inner_slicer", "entries", "scarcity_behavior"],
            ]
            .concat(),
        ),
        (
            "count_constrained_knapsack",
            "inner_slicer = \"greedy\"",
            [&knapsack[..], &["entries", "scarcity_behavior"]].concat(),
        ),
        ("mine", "bucket_size = 10", vec!["slicer_params"]),
    ];
    for (slicer, extra, keys) in rows {
        let key = extra.split(' ').next().unwrap_or_default();
        let c = config_error(&format!(
            "slicer = \"{slicer}\"\n{extra}\n[[scorers]]\ntype = \"recency\"\n"
        ));
        assert_eq!(
            c.to_string(),
            format!("key `{key}` does not apply to slicer `{slicer}`")
        );
        assert_eq!(c.key_path(), Some(key), "{slicer}");
        assert_eq!(c.expected(), keys, "{slicer}");
        let built = SlicerConfig::new(ComponentType::<SlicerType>::from_name(slicer));
        assert_eq!(built.keys(), keys, "{slicer}");
    }
}

/// Parses `toml`, writes it as TOML and as JSON, and reads both back.
fn round_trip(toml: &str) -> PolicyConfig {
    let cfg = PolicyConfig::from_toml_str(toml).unwrap_or_else(|e| panic!("{toml}: {e}"));
    let as_toml = toml::to_string(&cfg).unwrap();
    assert_eq!(
        PolicyConfig::from_toml_str(&as_toml).unwrap(),
        cfg,
        "{as_toml}"
    );
    let as_json = serde_json::to_string(&cfg).unwrap();
    assert_eq!(
        PolicyConfig::from_json_str(&as_json).unwrap(),
        cfg,
        "{as_json}"
    );
    cfg
}

#[test]
fn every_scorer_type_round_trips_with_all_its_keys() {
    let scorers = [
        "{ type = \"recency\", weight = 2.0 }",
        "{ type = \"priority\" }",
        "{ type = \"frequency\" }",
        "{ type = \"reflexive\" }",
        "{ type = \"position\" }",
        "{ type = \"vector\" }",
        "{ type = \"kind\", use_default_weights = false, weights = [{ kind = \"Message\", weight = 0.5 }] }",
        "{ type = \"tag\", tag_weights = [{ tag = \"a\", weight = 1.0 }], case_insensitive_tags = true }",
        "{ type = \"composite\", children = [{ type = \"recency\" }, { type = \"kind\", weight = 3.0 }] }",
        "{ type = \"scaled\", inner_scorer = \"priority\" }",
        "{ type = \"scaled\", inner_scorer = { type = \"tag\", tag_weights = [] } }",
        "{ type = \"decay\", reference_time = \"2025-01-01T00:00:00Z\", null_timestamp_score = 0.25, curve = { type = \"step\", windows = [{ max_age_secs = 60.0, score = 1.0 }] } }",
        "{ type = \"metadata_trust\", default_score = 0.3 }",
        "{ type = \"metadata_key\", key = \"src\", value = \"a\", boost = 2.0 }",
        "{ type = \"bm25\", k1 = 1.5, b = 0.5, stemming = false, neighbours = 0.5, group_key = \"s\", query = \"q\", feedback = 0.3, feedback_docs = 5, feedback_terms = 7, group_weight = 0.2 }",
        "{ type = \"hybrid\", scorers = [{ type = \"bm25\" }, { type = \"vector\" }], fusion = \"rrf\", rrf_k = 30.0 }",
    ];
    let mut seen = Vec::new();
    for s in scorers {
        let cfg = round_trip(&format!("scorers = [{s}]\n"));
        seen.push(cfg.scorers[0].scorer_type());
    }
    // Every built-in type is among them.
    for t in ScorerType::ALL {
        assert!(seen.contains(&ComponentType::Builtin(*t)), "{t}");
    }
    // The keys reached the variant's fields.
    let cfg = round_trip(&format!("scorers = [{}]\n", scorers[14]));
    let ScorerConfig::Bm25(b) = &cfg.scorers[0] else {
        panic!("{cfg:?}")
    };
    assert_eq!(
        (b.k1, b.feedback_terms, b.group_key.as_deref()),
        (Some(1.5), Some(7), Some("s"))
    );
}

#[test]
fn every_slicer_type_round_trips_with_all_its_keys() {
    let slicers = [
        "slicer = \"greedy\"",
        "slicer = \"score_order\"",
        "slicer = \"contiguous\"",
        "slicer = \"knapsack\"\nbucket_size = 50\nmax_table_cells = 1000\nmax_table_bytes = 4096",
        "slicer = \"quota\"\nbucket_size = 50\ninner_slicer = \"knapsack\"\nquotas = [{ kind = \"Message\", require = 10.0, cap = 50.0 }]",
        "slicer = \"count_quota\"\ninner_slicer = \"greedy\"\nscarcity_behavior = \"throw\"\nentries = [{ kind = \"Message\", require_count = 1, cap_count = 2 }]",
        "slicer = \"count_constrained_knapsack\"\nbucket_size = 10\nmax_table_bytes = 4096\nentries = [{ kind = \"Message\", cap_count = 2 }]",
    ];
    let mut seen = Vec::new();
    for s in slicers {
        let cfg = round_trip(&format!("{s}\n[[scorers]]\ntype = \"recency\"\n"));
        assert!(cfg.build().is_ok(), "{s}");
        seen.push(cfg.slicer.slicer_type());
    }
    for t in SlicerType::ALL {
        assert!(seen.contains(&ComponentType::Builtin(*t)), "{t}");
    }
}

#[test]
fn a_custom_component_keeps_its_name_weight_and_params() {
    let cfg = round_trip(
        "slicer = \"mine\"\nslicer_params = { n = 3 }\n[[scorers]]\ntype = \"keyword\"\nweight = 2.5\nparams = { keywords = [\"go\"] }\n",
    );
    let ScorerConfig::Custom(c) = &cfg.scorers[0] else {
        panic!("{cfg:?}")
    };
    assert_eq!((c.name.as_str(), c.weight), ("keyword", 2.5));
    assert_eq!(c.params, Some(serde_json::json!({ "keywords": ["go"] })));
    let SlicerConfig::Custom(s) = &cfg.slicer else {
        panic!("{cfg:?}")
    };
    assert_eq!(s.name, "mine");
    assert_eq!(s.slicer_params, Some(serde_json::json!({ "n": 3 })));
    // Written back: the same keys (`type`, `weight`, `params`).
    let json = serde_json::to_value(&cfg).unwrap();
    assert_eq!(
        json["scorers"][0],
        serde_json::json!({ "type": "keyword", "weight": 2.5, "params": { "keywords": ["go"] } })
    );
    assert_eq!(json["slicer"], "mine");
}

#[test]
fn the_policy_table_converts_with_the_same_error() {
    let table: PolicyTable =
        toml::from_str("[[scorers]]\ntype = \"recency\"\nboost = 2.0\n").unwrap();
    let e = PolicyConfig::try_from(table).unwrap_err();
    assert_eq!(
        e.to_string(),
        "scorers[0]: key `boost` does not apply to scorer type `recency`"
    );
    // Plain serde reports the same words, with no key path of its own.
    let e = toml::from_str::<PolicyConfig>("[[scorers]]\ntype = \"recency\"\nboost = 2.0\n")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("scorers[0]: key `boost` does not apply to scorer type `recency`"),
        "{e}"
    );
}

#[test]
fn the_weight_is_reachable_on_every_variant() {
    for t in ScorerType::ALL {
        let mut s = ScorerConfig::new(*t).weight(2.0);
        assert_eq!(s.weight_value(), 2.0, "{t}");
        *s.weight_mut() = 0.5;
        assert_eq!(s.weight_value(), 0.5, "{t}");
    }
    let custom = ScorerConfig::new(ComponentType::Custom("mine".into())).weight(3.0);
    assert_eq!(custom.weight_value(), 3.0);
}
