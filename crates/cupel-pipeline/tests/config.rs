//! Declarative policies: parsing, strictness, building, presets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{ContextBudget, ContextItem, ContextKind, CupelError, Scorer, SlicerKind};
use cupel_pipeline::{
    ComponentType, Pipeline, PolicyConfig, ScorerConfig, ScorerType, SlicerConfig, SlicerType,
    preset, presets,
};

const FULL: &str = r#"
slicer = "count_quota"
inner_slicer = "greedy"
scarcity_behavior = "degrade"
placer = "u-shaped"
deduplication = false
overflow_strategy = "Truncate"

[[entries]]
kind = "ToolOutput"
require_count = 1
cap_count = 3

[[scorers]]
type = "recency"
weight = 2.0

[[scorers]]
type = "composite"
weight = 1.0
[[scorers.children]]
type = "kind"
weights = [{ kind = "Document", weight = 0.9 }]
[[scorers.children]]
type = "scaled"
inner_scorer = "priority"

[[scorers]]
type = "decay"
reference_time = 2025-01-01T12:00Z
curve = { type = "step", windows = [{ max_age_secs = 3600, score = 0.9 }, { max_age_secs = 86400.5, score = 0.5 }] }

[[scorers]]
type = "metadata_key"
key = "cupel:priority"
value = "high"
boost = 1.5

[[scorers]]
type = "metadata_trust"
default_score = 0.25

[[scorers]]
type = "tag"
tag_weights = [{ tag = "a", weight = 1.0 }]
case_insensitive_tags = true
"#;

#[test]
fn every_component_can_be_expressed_and_built() {
    let cfg = PolicyConfig::from_toml_str(FULL).unwrap();
    assert_eq!(cfg.slicer.slicer_type(), SlicerType::CountQuota);
    assert_eq!(cfg.scorers.len(), 6);
    assert_eq!(cfg.scorers[1].scorer_type(), ScorerType::Composite);
    let policy = cfg.build().unwrap();
    assert_eq!(policy.slicer().slicer_kind(), SlicerKind::CountQuota);
    assert!(!policy.deduplication());
    // Round trip through JSON keeps the meaning.
    let json = serde_json::to_string(&cfg).unwrap();
    let back = PolicyConfig::from_json_str(&json).unwrap();
    assert_eq!(back, cfg);
}

#[test]
fn unknown_keys_are_named() {
    let e = PolicyConfig::from_toml_str(
        "slicer = \"greedy\"\ndedupliction = false\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown policy key `dedupliction`"
    );
    let e =
        PolicyConfig::from_toml_str("[[scorers]]\ntype = \"recency\"\nwieght = 2.0\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown policy key `scorers[0].wieght`"
    );
}

#[test]
fn misplaced_keys_are_named() {
    let e =
        PolicyConfig::from_toml_str("[[scorers]]\ntype = \"recency\"\nboost = 2.0\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: scorers[0]: key `boost` does not apply to scorer type `recency`"
    );
    let e = PolicyConfig::from_toml_str(
        "slicer = \"greedy\"\nbucket_size = 10\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: key `bucket_size` does not apply to slicer `greedy`"
    );
}

#[test]
fn bad_values_say_what_to_fix() {
    // A name that is not built in reads as a custom type; building without
    // a registry that knows it fails, listing the choices.
    let e = PolicyConfig::from_toml_str("slicer = \"fancy\"\n[[scorers]]\ntype = \"recency\"\n")
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: slicer: unknown slicer `fancy` (built-in: greedy, knapsack, quota, count_quota, count_constrained_knapsack, contiguous, score_order; registered: none)"
    );
    let e = PolicyConfig::from_toml_str("slicer = \"greedy\"\n").unwrap_err();
    assert!(e.to_string().contains("missing field `scorers`"), "{e}");
    let e = PolicyConfig::from_toml_str("scorers = []\n")
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: policy key `scorers`: at least one scorer is required"
    );
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"tag\"\n")
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: scorers[0]: scorer type `tag` needs key `tag_weights`"
    );
    let e = PolicyConfig::from_toml_str(
        "slicer = \"knapsack\"\nbucket_size = 0\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert!(
        matches!(e, CupelError::SlicerConfig(ref m) if m.starts_with("bucket_size: ")),
        "{e}"
    );
    let e = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"recency\"\nweight = 1.0\n[[scorers]]\ntype = \"kind\"\nweight = -1.0\n",
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert!(
        matches!(e, CupelError::ScorerConfig(ref m) if m.starts_with("scorers: ")),
        "{e}"
    );
    let e = PolicyConfig::from_toml_str(
        "slicer = \"count_quota\"\ninner_slicer = \"knapsack\"\n[[entries]]\nkind = \"a\"\ncap_count = 1\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert!(e.to_string().contains("KnapsackSlice"), "{e}");
}

#[test]
fn plain_serde_ignores_unknown_keys_for_forward_compatibility() {
    let cfg: PolicyConfig =
        toml::from_str("future_key = 1\n[[scorers]]\ntype = \"recency\"\nnew_knob = true\n")
            .unwrap();
    assert_eq!(cfg.scorers.len(), 1);
}

fn support_items() -> Vec<ContextItem> {
    let t = |s: &str| s.parse().unwrap();
    vec![
        ContextItem::builder("system: be concise", 20)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .build()
            .unwrap(),
        ContextItem::builder("user: my invoice is wrong", 30)
            .timestamp(t("2025-01-01T10:00:00Z"))
            .priority(5)
            .future_relevance_hint(0.9)
            .build()
            .unwrap(),
        ContextItem::builder("tool: invoice #42 total $120", 60)
            .kind(ContextKind::TOOL_OUTPUT)
            .timestamp(t("2025-01-01T10:01:00Z"))
            .priority(8)
            .future_relevance_hint(0.8)
            .tag("billing")
            .build()
            .unwrap(),
        ContextItem::builder("doc: refund policy", 200)
            .kind(ContextKind::DOCUMENT)
            .timestamp(t("2024-12-01T00:00:00Z"))
            .priority(3)
            .future_relevance_hint(0.6)
            .tag("billing")
            .build()
            .unwrap(),
        ContextItem::builder("memory: customer prefers email", 15)
            .kind(ContextKind::MEMORY)
            .future_relevance_hint(0.4)
            .build()
            .unwrap(),
        ContextItem::builder("user: hello", 5)
            .timestamp(t("2025-01-01T09:59:00Z"))
            .future_relevance_hint(0.1)
            .build()
            .unwrap(),
    ]
}

#[test]
fn every_preset_builds_and_selects_within_budget() {
    let items = support_items();
    let budget = ContextBudget::new(400, 150).unwrap();
    for p in presets() {
        let policy = p.config.build().unwrap();
        let pipeline = Pipeline::new(policy, budget.clone());
        let window = pipeline.run(&items).unwrap();
        let tokens: i64 = window.iter().map(ContextItem::tokens).sum();
        assert!(tokens <= 150, "{}: {tokens}", p.name);
        assert!(
            window.iter().any(|i| i.content() == "system: be concise"),
            "{}: pinned item missing",
            p.name
        );
        let report = pipeline.dry_run(&items).unwrap();
        assert_eq!(
            report.total_candidates,
            report.included.len() + report.excluded.len()
        );
        // The report's included list is the window.
        let a: Vec<&str> = window.iter().map(ContextItem::content).collect();
        let b: Vec<&str> = report.included.iter().map(|i| i.item.content()).collect();
        assert_eq!(a, b, "{}", p.name);
    }
}

#[test]
fn preset_lookup_is_case_insensitive_and_lists_names_on_error() {
    assert_eq!(preset("CODE-REVIEW").unwrap().name, "code-review");
    assert_eq!(preset("document_qa").unwrap().name, "document-qa");
    let e = preset("speedy").unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown preset `speedy` (expected one of: newest-turns, chat, recent-dense, code-review, rag, document-qa, tool-use, long-running, debugging, recall)"
    );
}

#[test]
fn recent_dense_preset_selects_recent_turns_in_order() {
    // recent-dense = recency 3, kind 1 (composite, normalised 0.75 / 0.25); greedy; chronological.
    // Scoreable: 5 items; timestamped: user-invoice (10:00), tool (10:01), doc (Dec), hello (09:59).
    // Recency ranks among 4 timestamped: doc 0, hello 1/3, invoice 2/3, tool 1; memory (none) 0.
    // Kind (defaults): message 0.2, tool 0.6, document 0.4, memory 0.8.
    //   tool    = 0.75*1    + 0.25*0.6 = 0.9        density 0.9/60   = 0.015
    //   invoice = 0.75*2/3  + 0.25*0.2 = 0.55       density 0.55/30  = 0.01833
    //   hello   = 0.75*1/3  + 0.25*0.2 = 0.30       density 0.30/5   = 0.06
    //   memory  = 0           + 0.25*0.8 = 0.20     density 0.20/15  = 0.01333
    //   doc     = 0           + 0.25*0.4 = 0.10     density 0.10/200 = 0.0005
    // Budget 400/150, pinned 20: effective target 130.
    // Greedy by density: hello 5 (125 left), invoice 30 (95), tool 60 (35), memory 15 (20), doc 200 no.
    // Chronological: hello 09:59, invoice 10:00, tool 10:01, then undated: system (pinned, merged first), memory.
    let policy = preset("recent-dense").unwrap().config.build().unwrap();
    let p = Pipeline::new(policy, ContextBudget::new(400, 150).unwrap());
    let window = p.run(&support_items()).unwrap();
    let got: Vec<&str> = window.iter().map(ContextItem::content).collect();
    assert_eq!(
        got,
        [
            "user: hello",
            "user: my invoice is wrong",
            "tool: invoice #42 total $120",
            "system: be concise",
            "memory: customer prefers email"
        ]
    );
}

#[test]
fn unknown_keys_inside_an_inline_inner_scorer_are_named() {
    let e = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"scaled\"\ninner_scorer = { type = \"kind\", wieghts = [] }\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown policy key `scorers[0].inner_scorer.wieghts`"
    );
    let ok = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"scaled\"\ninner_scorer = { type = \"kind\", weights = [{ kind = \"a\", weight = 1.0 }] }\n",
    )
    .unwrap();
    ok.build().unwrap();
}

#[test]
fn a_policy_of_the_wrong_shape_says_what_was_expected() {
    let e = PolicyConfig::from_json_str("\"chat\"").unwrap_err();
    assert!(e.to_string().contains("expected a policy table"), "{e}");
}

#[test]
fn a_kind_weighted_twice_is_an_error_not_a_silent_overwrite() {
    // "ToolOutput" and "tooloutput" name one kind (kinds compare ignoring ASCII
    // case). Keeping only the last weight would silently drop the 0.9.
    let e = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"kind\"\nweights = [{ kind = \"ToolOutput\", weight = 0.9 }, { kind = \"tooloutput\", weight = 0.1 }]\n",
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert!(
        matches!(e, CupelError::ScorerConfig(ref m)
            if m.starts_with("scorers[0]: ") && m.contains("configured twice")),
        "{e}"
    );
}

#[test]
fn use_default_weights_wins_over_an_empty_weight_list() {
    // Defaults: Memory 0.8. An empty custom list alone would score it 0.0.
    let memory = ContextItem::builder("m", 1)
        .kind(ContextKind::MEMORY)
        .build()
        .unwrap();
    let score = |toml: &str| {
        let cfg = PolicyConfig::from_toml_str(toml).unwrap();
        cfg.scorers[0].build().unwrap().score(0, &[&memory])
    };
    assert_eq!(
        score("[[scorers]]\ntype = \"kind\"\nuse_default_weights = true\nweights = []\n"),
        0.8
    );
    assert_eq!(score("[[scorers]]\ntype = \"kind\"\nweights = []\n"), 0.0);
    assert_eq!(score("[[scorers]]\ntype = \"kind\"\n"), 0.8);
}

/// `depth` scaled scorers, each wrapping the next, around a priority scorer.
fn nested_scaled(depth: usize) -> cupel_pipeline::ScorerConfig {
    use cupel_pipeline::{InnerScorer, ScaledScorerConfig, ScorerConfig};
    let mut s = ScorerConfig::new(ScorerType::Priority);
    for _ in 1..depth {
        let mut outer = ScaledScorerConfig::default();
        outer.inner_scorer = Some(InnerScorer::Config(Box::new(s)));
        s = ScorerConfig::Scaled(outer);
    }
    s
}

#[test]
fn scorer_nesting_has_a_documented_depth_limit() {
    // Issue 18 (4): ~6,000 levels overflowed the stack in build(), with
    // memory quadratic in the depth. Now: MAX_SCORER_DEPTH levels build,
    // one more is a clear error, and a very deep config fails fast.
    use cupel_pipeline::MAX_SCORER_DEPTH;
    let mut cfg = PolicyConfig::from_toml_str("scorers = [{ type = \"priority\" }]").unwrap();
    cfg.scorers = vec![nested_scaled(MAX_SCORER_DEPTH)];
    assert!(cfg.build().is_ok());
    cfg.scorers = vec![nested_scaled(MAX_SCORER_DEPTH + 1)];
    let err = cfg.build().unwrap_err();
    assert!(
        matches!(&err, CupelError::PipelineConfig(m) if m.contains("more than 64 levels")),
        "{err}"
    );
    assert!(cfg.check_keys().is_err());
    // 20,000 levels: rejected without recursing (a stack overflow would abort).
    let deep = nested_scaled(20_000);
    assert!(deep.build().is_err());
    cfg.scorers = vec![deep];
    assert!(cfg.build().is_err());
    // Drop without recursion: let the nested boxes go level by level.
    let mut s = cfg.scorers.pop();
    while let Some(c) = s {
        s = match c {
            cupel_pipeline::ScorerConfig::Scaled(mut c) => match c.inner_scorer.take() {
                Some(cupel_pipeline::InnerScorer::Config(b)) => Some(*b),
                _ => None,
            },
            _ => None,
        };
    }
}

#[test]
fn deeply_nested_text_is_rejected_while_it_is_read() {
    // 66 levels of TOML (the TOML parser has its own recursion limit a
    // little above that).
    let mut key = String::from("scorers = [{ type = \"scaled\", ");
    for _ in 0..65 {
        key.push_str("inner_scorer.");
    }
    key.push_str("type = \"priority\" }]");
    let err = PolicyConfig::from_toml_str(&key).unwrap_err();
    assert!(err.to_string().contains("more than 64 levels"), "{err}");
    // JSON, 62 scaled levels around a composite of 4 levels (children count too).
    let mut json = String::from(r#"{"scorers": ["#);
    for _ in 0..62 {
        json.push_str(r#"{"type": "scaled", "inner_scorer": "#);
    }
    for _ in 0..3 {
        json.push_str(r#"{"type": "composite", "children": ["#);
    }
    json.push_str(r#"{"type": "priority"}"#);
    json.push_str(&"]}".repeat(3));
    json.push_str(&"}".repeat(62));
    json.push_str("]}");
    let err = PolicyConfig::from_json_str(&json).unwrap_err();
    assert!(err.to_string().contains("more than 64 levels"), "{err}");
}

#[test]
fn non_finite_scores_fail_the_run_naming_scorer_and_item() {
    // Issue 18 (7): one rule for NaN and ±inf from a custom scorer.
    struct Bad(f64);
    impl Scorer for Bad {
        fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
            if index == 1 { self.0 } else { 0.5 }
        }
    }
    let items = vec![
        ContextItem::new("a", 10).unwrap(),
        ContextItem::new("b", 10).unwrap(),
        ContextItem::new("c", 10).unwrap(),
    ];
    let budget = ContextBudget::new(1000, 500).unwrap();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for wrap in [false, true] {
            let mut b = cupel_pipeline::Policy::builder();
            b = if wrap {
                b.scorer(cupel_scorers::ScaledScorer::wrap(Bad(bad)))
            } else {
                b.scorer(Bad(bad))
            };
            for slicer in ["greedy", "knapsack"] {
                let b = if slicer == "knapsack" {
                    b.clone().slicer(cupel_slicers::KnapsackSlice::default())
                } else {
                    b.clone().slicer(cupel_slicers::GreedySlice::new())
                };
                let policy = b
                    .placer(cupel_placers::ChronologicalPlacer)
                    .build()
                    .unwrap();
                let p = Pipeline::new(policy, budget.clone());
                let err = p.run(&items).unwrap_err();
                let name = if wrap { "ScaledScorer" } else { "Bad" };
                assert!(
                    matches!(&err, CupelError::NonFiniteScore { scorer, index: 1, .. } if scorer == name),
                    "{err}"
                );
                assert!(err.to_string().contains("item 1"), "{err}");
                assert!(p.dry_run(&items).is_err());
            }
        }
    }
}

#[test]
fn non_finite_scores_fail_grouped_runs_too() {
    // H-1 holds on the grouped path (spec chapter 18) as well: b (input
    // index 1) is in a group with c, and its +inf is an error naming it.
    struct Bad;
    impl Scorer for Bad {
        fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
            if index == 1 { f64::INFINITY } else { 0.5 }
        }
    }
    let items = vec![
        ContextItem::new("a", 10).unwrap(),
        ContextItem::builder("b", 10).group("g").build().unwrap(),
        ContextItem::builder("c", 10).group("g").build().unwrap(),
    ];
    let policy = cupel_pipeline::Policy::builder()
        .scorer(Bad)
        .slicer(cupel_slicers::GreedySlice::new())
        .placer(cupel_placers::ChronologicalPlacer)
        .build()
        .unwrap();
    let p = Pipeline::new(policy, ContextBudget::new(1000, 500).unwrap());
    for err in [p.run(&items).unwrap_err(), p.dry_run(&items).unwrap_err()] {
        assert!(
            matches!(&err, CupelError::NonFiniteScore { scorer, index: 1, .. } if scorer == "Bad"),
            "{err}"
        );
    }
}

#[test]
fn a_bom_is_skipped_and_json_policies_are_objects() {
    // Issue 18 (5): one rule for TOML and JSON.
    let toml = PolicyConfig::from_toml_str("\u{feff}scorers = [{ type = \"priority\" }]").unwrap();
    let json =
        PolicyConfig::from_json_str("\u{feff}{\"scorers\": [{\"type\": \"priority\"}]}").unwrap();
    assert_eq!(toml, json);
    let err = PolicyConfig::from_json_str("[[{\"type\": \"priority\"}]]").unwrap_err();
    assert!(err.to_string().contains("a JSON object"), "{err}");
}

fn decay_with_curve(curve: &str) -> String {
    format!(
        "[[scorers]]\ntype = \"decay\"\nreference_time = \"2025-01-01T00:00:00Z\"\ncurve = {curve}\n"
    )
}

#[test]
fn unknown_keys_inside_a_curve_are_named() {
    let e = PolicyConfig::from_toml_str(&decay_with_curve(
        "{ type = \"exponential\", half_life_secs = 1, extra = 2 }",
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown policy key `scorers[0].curve.extra`"
    );
    // JSON takes the same path.
    let e = PolicyConfig::from_json_str(
        r#"{"scorers": [{"type": "decay", "curve": {"type": "window", "max_age_secs": 5, "extra": 1}}]}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`scorers[0].curve.extra`"), "{e}");
}

#[test]
fn a_key_of_another_curve_type_is_rejected() {
    let e = PolicyConfig::from_toml_str(&decay_with_curve(
        "{ type = \"window\", max_age_secs = 60, half_life_secs = 1 }",
    ))
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("key `half_life_secs` does not apply to curve type `window`"),
        "{e}"
    );
    let e = PolicyConfig::from_toml_str(&decay_with_curve(
        "{ type = \"exponential\", half_life_secs = 1, windows = [] }",
    ))
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("key `windows` does not apply to curve type `exponential`"),
        "{e}"
    );
    let e = PolicyConfig::from_toml_str(&decay_with_curve("{ type = \"step\" }")).unwrap_err();
    assert!(
        e.to_string()
            .contains("curve type `step` needs key `windows`"),
        "{e}"
    );
    let e = PolicyConfig::from_toml_str(&decay_with_curve("{ type = \"linear\" }")).unwrap_err();
    assert!(e.to_string().contains("unknown curve type `linear`"), "{e}");
}

#[test]
fn unknown_keys_inside_a_step_window_are_named() {
    let e = PolicyConfig::from_toml_str(&decay_with_curve(
        "{ type = \"step\", windows = [{ max_age_secs = 60, score = 1.0 }, { max_age_sec = 600, score = 0.5 }] }",
    ))
    .unwrap_err();
    // The typo is unknown and the real key is then missing: either is named.
    let msg = e.to_string();
    assert!(msg.contains("max_age_sec"), "{msg}");
    let e = PolicyConfig::from_toml_str(&decay_with_curve(
        "{ type = \"step\", windows = [{ max_age_secs = 60, score = 1.0, extra = true }] }",
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipeline configuration: unknown policy key `scorers[0].curve.windows[0].extra`"
    );
}

#[test]
fn every_curve_type_still_parses_and_round_trips() {
    for curve in [
        "{ type = \"exponential\", half_life_secs = 3600 }",
        "{ type = \"window\", max_age_secs = 60.5 }",
        "{ type = \"step\", windows = [{ max_age_secs = 60, score = 1.0 }] }",
    ] {
        let cfg = PolicyConfig::from_toml_str(&decay_with_curve(curve)).unwrap();
        cfg.build().unwrap();
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(PolicyConfig::from_json_str(&json).unwrap(), cfg, "{curve}");
    }
}

#[test]
fn overflow_and_scarcity_use_the_core_enums_with_the_same_wire_names() {
    use cupel_core::OverflowStrategy;
    use cupel_slicers::ScarcityBehavior;
    let cfg = PolicyConfig::from_toml_str(
        "overflow_strategy = \"Truncate\"\nslicer = \"count_quota\"\nscarcity_behavior = \"THROW\"\nentries = [{ kind = \"Message\", cap_count = 2 }]\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap();
    assert_eq!(cfg.overflow_strategy, OverflowStrategy::Truncate);
    let cupel_pipeline::SlicerConfig::CountQuota(slicer) = &cfg.slicer else {
        panic!("{:?}", cfg.slicer)
    };
    assert_eq!(slicer.scarcity_behavior, Some(ScarcityBehavior::Throw));
    let json = serde_json::to_value(&cfg).unwrap();
    assert_eq!(json["overflow_strategy"], "truncate");
    assert_eq!(json["scarcity_behavior"], "throw");
    assert_eq!(json["scorers"][0]["type"], "recency");
    let e = PolicyConfig::from_toml_str(
        "overflow_strategy = \"explode\"\n[[scorers]]\ntype = \"recency\"\n",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains(
            "unknown overflow_strategy `explode` (expected one of: throw, truncate, proceed)"
        ),
        "{e}"
    );
    assert_eq!(
        cupel_pipeline::overflow_strategy_name(OverflowStrategy::Proceed),
        "proceed"
    );
}

#[test]
fn pipeline_builder_takes_the_components_of_a_built_policy_as_arcs() {
    let policy =
        PolicyConfig::from_toml_str("placer = \"u-shaped\"\n[[scorers]]\ntype = \"reflexive\"\n")
            .unwrap()
            .build()
            .unwrap();
    let pipeline = Pipeline::builder()
        .scorer_arc(std::sync::Arc::clone(policy.scorer()))
        .slicer_arc(std::sync::Arc::clone(policy.slicer()))
        .placer_arc(std::sync::Arc::clone(policy.placer()))
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(
        pipeline.policy().scorer(),
        policy.scorer()
    ));
    assert!(std::sync::Arc::ptr_eq(
        pipeline.policy().slicer(),
        policy.slicer()
    ));
    assert!(std::sync::Arc::ptr_eq(
        pipeline.policy().placer(),
        policy.placer()
    ));
}

#[test]
fn config_errors_carry_the_key_path_position_expected_keys_and_source() {
    use std::error::Error as _;
    // A type error: key path, line and column, the TOML error as source.
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"recency\"\nweight = \"heavy\"\n")
        .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0].weight"));
    assert_eq!((c.line(), c.column()), (Some(3), Some(10)));
    assert!(c.source().is_some());
    // One prefix, one line.
    let text = e.to_string();
    assert!(
        text.starts_with("pipeline configuration: invalid policy: `scorers[0].weight`: "),
        "{text}"
    );
    assert_eq!(text.matches("pipeline configuration").count(), 1, "{text}");
    assert!(!text.contains('\n'), "{text}");
    assert!(text.ends_with("(line 3, column 10)"), "{text}");

    // A syntax error.
    let e = PolicyConfig::from_toml_str("slicer = \n").unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.line(), Some(1));
    assert!(c.message().starts_with("invalid TOML: "), "{c}");
    assert!(c.source().is_some());

    // An unknown key: its path and the keys expected there.
    let e =
        PolicyConfig::from_toml_str("[[scorers]]\ntype = \"recency\"\nwieght = 2.0\n").unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0].wieght"));
    assert!(
        c.expected().iter().any(|k| k == "weight"),
        "{:?}",
        c.expected()
    );

    // A misplaced key: the keys that do apply.
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"metadata_trust\"\nboost = 2.0\n")
        .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0].boost"));
    assert_eq!(c.expected(), ["type", "weight", "default_score"]);

    // JSON: position without the parser's suffix, no double prefix for a bad name.
    let e = PolicyConfig::from_json_str(
        "{\"scorers\": [{\"type\": \"scaled\", \"inner_scorer\": \"bogus\"}]}",
    )
    .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(c.key_path(), Some("scorers[0].inner_scorer"));
    assert_eq!(c.line(), Some(1));
    let text = e.to_string();
    assert_eq!(text.matches("pipeline configuration").count(), 1, "{text}");
    assert!(text.contains("unknown scorer `bogus`"), "{text}");
    assert!(!text.contains(" at line "), "{text}");
}

/// The field names of a derived `Debug` rendering `Name { a: .., b: .. }`,
/// outermost struct only: an account of a struct's fields that does not
/// come from serde.
fn debug_fields(rendered: &str) -> Vec<String> {
    let Some(body) = rendered.find('{').map(|i| &rendered[i + 1..]) else {
        return Vec::new();
    };
    let (mut depth, mut quoted, mut start) = (0usize, false, 0usize);
    let mut fields = Vec::new();
    let bytes = body.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => quoted = !quoted,
            _ if quoted => {}
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' if depth > 0 => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                fields.push(
                    body[start..i]
                        .trim()
                        .trim_start_matches(',')
                        .trim()
                        .to_string(),
                );
            }
            b',' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    fields
}

#[test]
fn the_unknown_key_hint_names_every_field_of_the_policy_and_scorer_types() {
    use cupel_core::strict::KeyPath;
    let cfg = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"kind\"\n").unwrap();
    // The policy table on the wire: PolicyConfig's fields with the slicer's
    // fields in place of `slicer` (its `slicer` field is the key), for every
    // slicer type (one variant each) and a custom one.
    let mut policy_keys = debug_fields(&format!("{cfg:?}"));
    let slicers = SlicerType::ALL
        .iter()
        .map(|&t| SlicerConfig::new(t))
        .chain([SlicerConfig::new(ComponentType::Custom("mine".into()))]);
    for slicer in slicers {
        // A custom slicer's `name` is the `slicer` key itself.
        policy_keys.extend(
            debug_fields(&format!("{slicer:?}"))
                .into_iter()
                .filter(|k| k != "name"),
        );
    }
    assert!(
        policy_keys.iter().any(|k| k == "slicer_params"),
        "{policy_keys:?}"
    );
    assert!(
        policy_keys.iter().any(|k| k == "placer_params"),
        "{policy_keys:?}"
    );
    assert!(
        policy_keys.iter().any(|k| k == "scarcity_behavior"),
        "{policy_keys:?}"
    );
    let hint = PolicyConfig::expected_keys(&KeyPath::parse("slicr"));
    for key in &policy_keys {
        assert!(
            hint.contains(&key.as_str()),
            "`{key}` missing from {hint:?}"
        );
    }
    // A scorer: the fields of every type's variant struct (a custom
    // scorer's `name` is `type` on the wire).
    let mut scorer_keys: Vec<String> = Vec::new();
    let scorers = ScorerType::ALL
        .iter()
        .map(|&t| ScorerConfig::new(t))
        .chain([ScorerConfig::new(ComponentType::Custom("mine".into()))]);
    for scorer in scorers {
        scorer_keys.extend(debug_fields(&format!("{scorer:?}")));
    }
    scorer_keys.sort();
    scorer_keys.dedup();
    // `weight`, the 26 keys of the types (use_default_weights, ..., rrf_k,
    // params) and the custom scorer's `name`: 1 + 26 + 1 = 28.
    assert_eq!(scorer_keys.len(), 28, "{scorer_keys:?}");
    let hint = PolicyConfig::expected_keys(&KeyPath::parse("scorers[0].wieght"));
    for key in &scorer_keys {
        let wire = if key == "name" { "type" } else { key.as_str() };
        assert!(hint.contains(&wire), "`{wire}` missing from {hint:?}");
    }
    // And the error carries that list.
    let e = PolicyConfig::from_toml_str("slicr = \"greedy\"\n[[scorers]]\ntype = \"kind\"\n")
        .unwrap_err();
    let CupelError::Config(c) = &e else {
        panic!("{e:?}")
    };
    assert!(c.expected().iter().any(|k| k == "placer_params"), "{c}");
}
