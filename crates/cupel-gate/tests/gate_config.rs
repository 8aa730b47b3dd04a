//! Gate configuration: TOML and JSON, strict keys, every fail-fast case.
#![cfg(feature = "config")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::CupelError;
use cupel_gate::CodeLanguage;
use cupel_gate::{CompactionPolicy, CompactionRule, GateConfig, GateConfigError};

const SEED_EXAMPLE: &str = r#"
id = "manage_budget"
max_context_tokens = 5000
encoding = "cl100k_base"
divide_new_content = "<<<New content"

[[compact_code.rules]]
language = "sql"
policy = "demand"
inbox_key = "compact_sql"

[[compact_code.rules]]
language = "sql"
policy = "threshold"
threshold = 0.4

[[compact_code.rules]]
language = "dotnet"
policy = "always"
"#;

#[test]
fn the_seed_example_reads_from_toml_and_json_alike() {
    let cfg = GateConfig::from_toml_str(SEED_EXAMPLE).unwrap();
    assert_eq!(cfg.id(), "manage_budget");
    assert_eq!(cfg.max_context_tokens(), 5000);
    assert_eq!(cfg.encoding(), Some("cl100k_base"));
    assert_eq!(cfg.divide_new_content(), Some("<<<New content"));
    assert_eq!(
        cfg.rules(),
        [
            CompactionRule::demand(CodeLanguage::Sql, "compact_sql"),
            CompactionRule::threshold(CodeLanguage::Sql, 0.4),
            CompactionRule::always(CodeLanguage::Dotnet),
        ]
    );
    // First match wins: the sql demand rule.
    assert_eq!(
        cfg.rule_for(CodeLanguage::Sql).unwrap().policy,
        CompactionPolicy::Demand {
            inbox_key: "compact_sql".into()
        }
    );
    assert_eq!(cfg.rule_for(CodeLanguage::Unknown), None);

    let json = serde_json::to_string(&cfg).unwrap();
    assert_eq!(GateConfig::from_json_str(&json).unwrap(), cfg);
    let built = GateConfig::builder("manage_budget", 5000)
        .encoding("cl100k_base")
        .divide_new_content("<<<New content")
        .rule(CompactionRule::demand(CodeLanguage::Sql, "compact_sql"))
        .rule(CompactionRule::threshold(CodeLanguage::Sql, 0.4))
        .rule(CompactionRule::always(CodeLanguage::Dotnet))
        .build()
        .unwrap();
    assert_eq!(built, cfg);
}

#[test]
fn minimal_config_has_no_rules() {
    let cfg = GateConfig::from_json_str(r#"{"id": "g", "max_context_tokens": 10}"#).unwrap();
    assert!(cfg.rules().is_empty());
    assert_eq!(cfg.divide_new_content(), None);
}

fn toml_err(rules: &str) -> GateConfigError {
    GateConfig::from_toml_str(&format!("id = \"g\"\nmax_context_tokens = 100\n{rules}"))
        .unwrap_err()
}

const OK_RULE: &str = "[[compact_code.rules]]\nlanguage = \"dotnet\"\npolicy = \"always\"\n";

#[test]
fn every_invalid_case_of_the_seed_fails_fast_naming_the_rule() {
    // The bad rule is the second one: index 1.
    let cases: [(&str, &str); 8] = [
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\n",
            "`compact_code.rules[1].threshold` is required: rule 1 has policy `threshold`, which needs a fraction of max_context_tokens in (0, 1]",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\nthreshold = 0.0\n",
            "`compact_code.rules[1].threshold`: rule 1 has threshold 0, outside (0, 1]",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\nthreshold = 1.5\n",
            "`compact_code.rules[1].threshold`: rule 1 has threshold 1.5, outside (0, 1]",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\nthreshold = -0.2\n",
            "`compact_code.rules[1].threshold`: rule 1 has threshold -0.2, outside (0, 1]",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"demand\"\n",
            "`compact_code.rules[1].inbox_key` is required: rule 1 has policy `demand`, which needs the topic of the messages that ask for compaction",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"python\"\npolicy = \"always\"\n",
            "`compact_code.rules[1].language`: rule 1 has unknown language `python` (expected sql or dotnet; csharp and c# name dotnet; case does not matter)",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"sometimes\"\n",
            "`compact_code.rules[1].policy`: rule 1 has unknown policy `sometimes` (expected always, threshold or demand; case does not matter)",
        ),
        (
            "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"always\"\nthreshold = 0.5\n",
            "`compact_code.rules[1].threshold`: rule 1 has policy `always`, which takes no `threshold`",
        ),
    ];
    for (rule, message) in cases {
        let e = toml_err(&format!("{OK_RULE}{rule}"));
        assert_eq!(e.to_string(), message);
    }
}

#[test]
fn nan_threshold_is_out_of_range() {
    let e = toml_err(
        "[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\nthreshold = nan\n",
    );
    assert!(
        matches!(e, GateConfigError::ThresholdOutOfRange { rule: 0, .. }),
        "{e}"
    );
}

#[test]
fn threshold_of_exactly_one_is_allowed() {
    let cfg = GateConfig::from_toml_str(
        "id = \"g\"\nmax_context_tokens = 10\n[[compact_code.rules]]\nlanguage = \"sql\"\npolicy = \"threshold\"\nthreshold = 1\n",
    )
    .unwrap();
    assert_eq!(
        cfg.rules()[0].policy,
        CompactionPolicy::Threshold { threshold: 1.0 }
    );
}

#[test]
fn missing_or_invalid_budget_and_id() {
    let e = GateConfig::from_toml_str("id = \"g\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "`max_context_tokens` is required: the global context budget, in tokens"
    );
    let e = GateConfig::from_toml_str("id = \"g\"\nmax_context_tokens = 0\n").unwrap_err();
    assert_eq!(e.to_string(), "`max_context_tokens` must be > 0 (got 0)");
    let e = GateConfig::from_toml_str("max_context_tokens = 5\n").unwrap_err();
    assert!(e.to_string().starts_with("`id` is required"), "{e}");
    let e = GateConfig::from_toml_str("id = \" \"\nmax_context_tokens = 5\n").unwrap_err();
    assert_eq!(e.to_string(), "`id` must not be empty");
}

#[test]
fn rules_must_be_a_list() {
    let e = GateConfig::from_toml_str(
        "id = \"g\"\nmax_context_tokens = 5\n[compact_code]\nrules = \"sql\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::InvalidType {
            path: "compact_code.rules".into(),
            message: "invalid type: string \"sql\", expected `compact_code.rules` to be a list of rule tables".into(),
            line: Some(4),
            column: Some(9),
        }
    );
    let e = GateConfig::from_json_str(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": {"language": "sql"}}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("to be a list of rule tables"), "{e}");
}

#[test]
fn unknown_keys_are_named_with_their_path() {
    let e = GateConfig::from_toml_str("id = \"g\"\nmax_context_tokens = 5\nmax_tokens = 3\n")
        .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::UnknownKey {
            path: "max_tokens".into(),
            expected: vec![
                "id",
                "max_context_tokens",
                "encoding",
                "divide_new_content",
                "compact_code"
            ],
        }
    );
    let e = GateConfig::from_json_str(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": [{"language": "sql", "policy": "always", "treshold": 1}]}}"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::UnknownKey {
            path: "compact_code.rules[0].treshold".into(),
            expected: vec!["language", "policy", "threshold", "inbox_key"],
        }
    );
}

#[test]
fn demand_without_inbox_key_in_json() {
    let e = GateConfig::from_json_str(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": [{"language": "sql", "policy": "demand"}]}}"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::InboxKeyMissing {
            path: "compact_code.rules[0].inbox_key".into(),
            rule: 0
        }
    );
}

#[test]
fn builder_validates_like_the_file_reader() {
    let e = GateConfig::builder("g", 100)
        .rule(CompactionRule::threshold(CodeLanguage::Sql, 2.0))
        .build()
        .unwrap_err();
    assert!(matches!(
        e,
        GateConfigError::ThresholdOutOfRange { rule: 0, .. }
    ));
    let e = GateConfig::builder("g", 100)
        .rule(CompactionRule::always(CodeLanguage::Unknown))
        .build()
        .unwrap_err();
    assert!(matches!(
        e,
        GateConfigError::UnknownLanguage { rule: 0, .. }
    ));
    let c: CupelError = GateConfig::builder("g", -1).build().unwrap_err().into();
    assert!(matches!(c, CupelError::PipelineConfig(m) if m.contains("must be > 0 (got -1)")));
}

#[test]
fn plain_serde_validates_too() {
    let e = serde_json::from_str::<GateConfig>(r#"{"id": "g"}"#).unwrap_err();
    assert!(e.to_string().contains("max_context_tokens"), "{e}");
}

/// A fixture whose rule 0 is valid and whose rule 1 carries `body` (TOML).
fn with_rule(body: &str) -> String {
    format!(
        "id = \"g\"\nmax_context_tokens = 5000\n\n[[compact_code.rules]]\nlanguage = \"dotnet\"\npolicy = \"always\"\n\n[[compact_code.rules]]\n{body}"
    )
}

#[test]
fn type_errors_name_the_key_path_and_the_position() {
    // Line 11 (two header lines, a blank, rule 0's four lines, a blank, the
    // rule header, language, policy), column 13 (after `threshold = `).
    let e = GateConfig::from_toml_str(&with_rule(
        "language = \"sql\"\npolicy = \"threshold\"\nthreshold = \"0.4\"\n",
    ))
    .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::InvalidType {
            path: "compact_code.rules[1].threshold".into(),
            message: "invalid type: string \"0.4\", expected f64".into(),
            line: Some(11),
            column: Some(13),
        }
    );
    assert_eq!(
        e.to_string(),
        "`compact_code.rules[1].threshold`: invalid type: string \"0.4\", expected f64 (line 11, column 13)"
    );

    let e = GateConfig::from_toml_str("id = \"g\"\nmax_context_tokens = \"5000\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "`max_context_tokens`: invalid type: string \"5000\", expected i64 (line 2, column 22)"
    );

    // A rule that is a string, not a table.
    let e = GateConfig::from_toml_str(
        "id = \"g\"\nmax_context_tokens = 5\ncompact_code.rules = [\"sql\"]\n",
    )
    .unwrap_err();
    assert!(
        matches!(&e, GateConfigError::InvalidType { path, line: Some(3), column: Some(23), .. } if path == "compact_code.rules[0]"),
        "{e:?}"
    );

    // JSON: the same paths; serde_json reports the value's last character, here
    // the closing quote of "0.4" (the opening one is column 121).
    let e = GateConfig::from_json_str(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": [{"language": "sql", "policy": "threshold", "threshold": "0.4"}]}}"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        GateConfigError::InvalidType {
            path: "compact_code.rules[0].threshold".into(),
            message: "invalid type: string \"0.4\", expected f64".into(),
            line: Some(1),
            column: Some(125),
        }
    );
    let e = GateConfig::from_json_str(r#"{"id": "g", "max_context_tokens": "5000"}"#).unwrap_err();
    assert!(
        matches!(&e, GateConfigError::InvalidType { path, .. } if path == "max_context_tokens"),
        "{e:?}"
    );
    // A root that is not a table has no key path.
    let e = GateConfig::from_json_str("3").unwrap_err();
    assert!(matches!(e, GateConfigError::Parse { .. }), "{e:?}");
}

#[test]
fn a_rule_without_language_or_policy_names_the_missing_key() {
    let e = GateConfig::from_toml_str(&with_rule("policy = \"always\"\n")).unwrap_err();
    assert_eq!(
        e,
        GateConfigError::MissingKey {
            path: "compact_code.rules[1].language".into(),
            what: "the rule's language (sql or dotnet)",
        }
    );
    let e = GateConfig::from_toml_str(&with_rule("language = \"sql\"\n")).unwrap_err();
    assert_eq!(
        e,
        GateConfigError::MissingKey {
            path: "compact_code.rules[1].policy".into(),
            what: "the rule's policy (always, threshold or demand)",
        }
    );
    assert_eq!(
        e.to_string(),
        "`compact_code.rules[1].policy` is required: the rule's policy (always, threshold or demand)"
    );
}

#[test]
fn inbox_key_on_a_rule_that_is_not_demand_is_rejected() {
    for (policy, extra) in [("always", ""), ("threshold", "threshold = 0.5\n")] {
        let e = GateConfig::from_toml_str(&with_rule(&format!(
            "language = \"sql\"\npolicy = \"{policy}\"\n{extra}inbox_key = \"compact_sql\"\n"
        )))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "`compact_code.rules[1].inbox_key`: rule 1 has policy `{policy}`, which takes no `inbox_key`"
            )
        );
    }
}

#[test]
fn a_blank_inbox_key_is_rejected() {
    for key in ["", "   ", "\\t"] {
        let e = GateConfig::from_toml_str(&with_rule(&format!(
            "language = \"sql\"\npolicy = \"demand\"\ninbox_key = \"{key}\"\n"
        )))
        .unwrap_err();
        assert_eq!(
            e,
            GateConfigError::EmptyValue {
                path: "compact_code.rules[1].inbox_key".into()
            },
            "inbox_key = {key:?}"
        );
    }
}

/// An embedder's own file type with a `GateConfig` inside.
#[derive(Debug, serde::Deserialize)]
struct AppFile {
    gate: GateConfig,
}

#[test]
fn plain_serde_rejects_unknown_keys_at_every_level() {
    // The same table is accepted without the typo...
    let ok: AppFile = toml::from_str("[gate]\nid = \"g\"\nmax_context_tokens = 5\n").unwrap();
    assert_eq!(ok.gate.max_context_tokens(), 5);
    // ...and rejected with it, in TOML and JSON, at the gate and rule levels.
    let e =
        toml::from_str::<AppFile>("[gate]\nid = \"g\"\nmax_context_tokens = 5\nmax_tokens = 9\n")
            .unwrap_err();
    assert!(e.to_string().contains("unknown field `max_tokens`"), "{e}");
    let e = serde_json::from_str::<GateConfig>(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": [{"language": "sql", "policy": "always", "treshold": 1}]}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("unknown field `treshold`"), "{e}");
    let e = serde_json::from_str::<GateConfig>(
        r#"{"id": "g", "max_context_tokens": 5, "compact_code": {"rules": [], "mode": 1}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("unknown field `mode`"), "{e}");
    // The wire shape is strict on its own too.
    let e = serde_json::from_str::<cupel_gate::GateSpec>(r#"{"idd": "g"}"#).unwrap_err();
    assert!(e.to_string().starts_with("unknown field `idd`"), "{e}");
}

/// Issue 28 point 2: the seed lists `sql | dotnet` and `always | threshold |
/// demand`; the original read them without regard to case, and .NET code is
/// commonly called C#.
#[test]
fn language_and_policy_names_ignore_case_and_csharp_names_dotnet() {
    for (language, expected) in [
        ("SQL", CodeLanguage::Sql),
        ("Sql", CodeLanguage::Sql),
        ("DotNet", CodeLanguage::Dotnet),
        ("csharp", CodeLanguage::Dotnet),
        ("CSharp", CodeLanguage::Dotnet),
        ("c#", CodeLanguage::Dotnet),
        ("C#", CodeLanguage::Dotnet),
    ] {
        for policy in ["always", "ALWAYS", "Always"] {
            let text = format!(
                "id = \"g\"\nmax_context_tokens = 10\n[[compact_code.rules]]\nlanguage = \"{language}\"\npolicy = \"{policy}\"\n"
            );
            let cfg = GateConfig::from_toml_str(&text).unwrap();
            assert_eq!(
                cfg.rules(),
                [CompactionRule::always(expected)],
                "{language}/{policy}"
            );
        }
    }
    let cfg = GateConfig::from_toml_str(
        "id = \"g\"\nmax_context_tokens = 10\n[[compact_code.rules]]\nlanguage = \"Sql\"\npolicy = \"Threshold\"\nthreshold = 0.5\n[[compact_code.rules]]\nlanguage = \"C#\"\npolicy = \"DEMAND\"\ninbox_key = \"k\"\n",
    )
    .unwrap();
    assert_eq!(
        cfg.rules(),
        [
            CompactionRule::threshold(CodeLanguage::Sql, 0.5),
            CompactionRule::demand(CodeLanguage::Dotnet, "k"),
        ]
    );
    // `unknown` is a classifier answer, never a rule language (seed: "no
    // compaction rule matches unknown").
    assert!(matches!(
        toml_err("[[compact_code.rules]]\nlanguage = \"unknown\"\npolicy = \"always\"\n"),
        GateConfigError::UnknownLanguage { .. }
    ));
}

/// Issue 28 point 3 (clarification G-24): an empty or blank
/// `divide_new_content` is refused at validation, from a file and from the
/// builder alike; a divider with text still works.
#[test]
fn an_empty_or_blank_divider_is_rejected() {
    for divider in ["", " ", "\n\t "] {
        let text = format!(
            "id = \"g\"\nmax_context_tokens = 10\ndivide_new_content = {}\n",
            toml_quote(divider)
        );
        let e = GateConfig::from_toml_str(&text).unwrap_err();
        assert_eq!(e.to_string(), "`divide_new_content` must not be empty");
        let e = GateConfig::builder("g", 10)
            .divide_new_content(divider)
            .build()
            .unwrap_err();
        assert_eq!(
            e,
            GateConfigError::EmptyValue {
                path: "divide_new_content".to_string()
            }
        );
    }
    let cfg = GateConfig::builder("g", 10)
        .divide_new_content(" <<<New content ")
        .build()
        .unwrap();
    assert_eq!(cfg.divide_new_content(), Some(" <<<New content "));
}

fn toml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\n', "\\n").replace('\t', "\\t"))
}
