//! Wire-format tests: round-trips and pinned JSON shapes.
#![cfg(feature = "serde")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem,
    InclusionReason, OverflowEvent, PipelineStage, SelectionReport, TraceEvent,
};

fn ts(s: &str) -> chrono::DateTime<chrono::Utc> {
    s.parse().unwrap()
}

fn sample_report() -> SelectionReport {
    let recent = ContextItem::builder("Recent conversation turn", 256)
        .timestamp(ts("2025-01-01T12:00:00Z"))
        .build()
        .unwrap();
    let system = ContextItem::builder("System prompt", 128)
        .kind(ContextKind::SYSTEM_PROMPT)
        .pinned(true)
        .build()
        .unwrap();
    let old = ContextItem::builder("Old tool output", 2048)
        .kind(ContextKind::TOOL_OUTPUT)
        .tags(["build", "ci"])
        .metadata("cupel:trust", "0.4")
        .build()
        .unwrap();
    let dup = ContextItem::new("Recent conversation turn", 256).unwrap();
    let mut report = SelectionReport::new(
        vec![
            // Input order: system 0, recent 1, old 2, dup 3.
            IncludedItem::new(system, 1.0, InclusionReason::Pinned).at_position(0),
            IncludedItem::new(recent, 0.92, InclusionReason::Scored).at_position(1),
        ],
        vec![
            ExcludedItem::new(
                old,
                0.45,
                ExclusionReason::BudgetExceeded {
                    item_tokens: 2048,
                    available_tokens: 512,
                },
            )
            .at_position(2),
            ExcludedItem::new(
                dup,
                0.3,
                ExclusionReason::Deduplicated {
                    deduplicated_against: "Recent conversation turn".into(),
                },
            )
            .at_position(3),
        ],
    );
    report.events = vec![
        TraceEvent::new(PipelineStage::Classify, 0.25, 4, None),
        TraceEvent::new(
            PipelineStage::Slice,
            0.0,
            1,
            Some("BudgetExceeded: 2048 tokens requested, 512 available".into()),
        ),
    ];
    assert_eq!(report.total_candidates, 4);
    assert_eq!(report.total_tokens_considered, 2688);
    report
}

#[test]
fn report_json_shape_is_pinned() {
    insta::assert_json_snapshot!(sample_report());
}

#[test]
fn a_report_row_without_a_position_reads_as_position_zero() {
    // Written by a version (or another implementation) without positions.
    let json = r#"{"item": {"content": "a", "tokens": 5}, "score": 0.5,
        "reason": {"reason": "BudgetExceeded", "item_tokens": 5, "available_tokens": 2}}"#;
    let row: ExcludedItem = serde_json::from_str(json).unwrap();
    assert_eq!(row.position, 0);
    let json = r#"{"item": {"content": "a", "tokens": 5}, "score": 0.5,
        "reason": {"reason": "Scored"}, "position": 7}"#;
    let row: IncludedItem = serde_json::from_str(json).unwrap();
    assert_eq!(row.position, 7);
}

#[test]
fn report_round_trips() {
    let r = sample_report();
    let json = serde_json::to_string(&r).unwrap();
    let back: SelectionReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
}

#[test]
fn every_exclusion_reason_has_the_spec_wire_shape() {
    let reasons = vec![
        ExclusionReason::BudgetExceeded {
            item_tokens: 2048,
            available_tokens: 512,
        },
        ExclusionReason::ScoredTooLow {
            score: 0.12,
            threshold: 0.25,
        },
        ExclusionReason::Deduplicated {
            deduplicated_against: "tool_output_abc123".into(),
        },
        ExclusionReason::QuotaCapExceeded {
            kind: "ToolOutput".into(),
            cap: 3,
            actual: 4,
        },
        ExclusionReason::QuotaRequireDisplaced {
            displaced_by_kind: "SystemPrompt".into(),
        },
        ExclusionReason::NegativeTokens { tokens: -1 },
        ExclusionReason::PinnedOverride {
            displaced_by: "System prompt".into(),
        },
        ExclusionReason::Filtered {
            filter_name: "max_age_filter".into(),
        },
        ExclusionReason::CountCapExceeded {
            kind: "ToolOutput".into(),
            cap: 2,
            count: 2,
        },
    ];
    for r in &reasons {
        let json = serde_json::to_string(r).unwrap();
        let back: ExclusionReason = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, r, "{json}");
    }
    insta::assert_json_snapshot!(reasons);
}

#[test]
fn unknown_reasons_are_tolerated_on_input() {
    let r: ExclusionReason = serde_json::from_str(r#"{"reason":"TooSpicy","heat":9000}"#).unwrap();
    assert_eq!(
        r,
        ExclusionReason::Unknown {
            reason: "TooSpicy".into()
        }
    );
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"reason":"TooSpicy"}"#
    );
    let i: InclusionReason = serde_json::from_str(r#"{"reason":"Boosted"}"#).unwrap();
    assert_eq!(i.name(), "Boosted");
    let s: PipelineStage = serde_json::from_str(r#""Rerank""#).unwrap();
    assert_eq!(s, PipelineStage::Unknown);
}

#[test]
fn known_reason_missing_a_field_is_an_error() {
    let e =
        serde_json::from_str::<ExclusionReason>(r#"{"reason":"BudgetExceeded","item_tokens":5}"#)
            .unwrap_err();
    assert!(e.to_string().contains("available_tokens"), "{e}");
}

#[test]
fn inclusion_reason_is_an_envelope() {
    assert_eq!(
        serde_json::to_string(&InclusionReason::ZeroToken).unwrap(),
        r#"{"reason":"ZeroToken"}"#
    );
}

#[test]
fn item_accepts_spec_camel_case_and_validates() {
    let item: ContextItem = serde_json::from_str(
        r#"{"content":"x","tokens":3,"kind":"toolOutput","futureRelevanceHint":0.7,"originalTokens":9,"timestamp":"2024-06-01T00:00:00Z","metadata":{"b":"2","a":"1"}}"#,
    )
    .unwrap();
    assert_eq!(item.kind(), &ContextKind::TOOL_OUTPUT);
    assert_eq!(item.future_relevance_hint(), Some(0.7));
    assert_eq!(item.original_tokens(), Some(9));
    let json = serde_json::to_string(&item).unwrap();
    assert_eq!(
        json,
        r#"{"content":"x","tokens":3,"kind":"toolOutput","source":"Chat","metadata":{"a":"1","b":"2"},"timestamp":"2024-06-01T00:00:00Z","future_relevance_hint":0.7,"original_tokens":9}"#
    );
    assert!(serde_json::from_str::<ContextItem>(r#"{"content":"","tokens":1}"#).is_err());
    assert!(
        serde_json::from_str::<ContextItem>(r#"{"content":"a","tokens":1,"kind":" "}"#).is_err()
    );
}

#[test]
fn budget_round_trips_and_validates() {
    let b = ContextBudget::builder(1000, 800)
        .output_reserve(100)
        .reserved_slot(ContextKind::MEMORY, 50)
        .safety_margin_percent(5.0)
        .build()
        .unwrap();
    let json = serde_json::to_string(&b).unwrap();
    assert_eq!(
        json,
        r#"{"max_tokens":1000,"target_tokens":800,"output_reserve":100,"reserved_slots":{"Memory":50},"estimation_safety_margin_percent":5.0}"#
    );
    assert_eq!(serde_json::from_str::<ContextBudget>(&json).unwrap(), b);
    let camel: ContextBudget =
        serde_json::from_str(r#"{"maxTokens":4096,"targetTokens":3072}"#).unwrap();
    assert_eq!(camel.max_tokens(), 4096);
    let err = serde_json::from_str::<ContextBudget>(r#"{"max_tokens":10,"target_tokens":20}"#)
        .unwrap_err();
    assert!(
        err.to_string().contains("must not exceed max_tokens"),
        "{err}"
    );
}

#[test]
fn a_reserved_slot_kind_given_twice_is_rejected_not_merged() {
    // "Tool" and "TOOL" are one kind; keeping the last value would silently
    // reserve 20 tokens where the input asks for 10 + 20.
    let err = serde_json::from_str::<ContextBudget>(
        r#"{"max_tokens":100,"target_tokens":90,"reserved_slots":{"Tool":10,"TOOL":20}}"#,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("reserved_slots: kind 'TOOL' is given twice (also as 'Tool'"),
        "{err}"
    );
    let err = toml::from_str::<ContextBudget>(
        "max_tokens = 100\ntarget_tokens = 90\n[reserved_slots]\nmemory = 5\nMemory = 5\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("is given twice"), "{err}");
    // Distinct kinds are all kept: 10 + 20 = 30 reserved.
    let ok: ContextBudget = serde_json::from_str(
        r#"{"max_tokens":100,"target_tokens":90,"reserved_slots":{"Tool":10,"Memory":20}}"#,
    )
    .unwrap();
    assert_eq!(ok.reserved_tokens(), 30);
}

#[test]
fn slicer_outcomes_and_stage_traces_round_trip() {
    use cupel_core::{CapExclusion, CountRequirementShortfall, SliceOutcome, StageTrace};
    let outcome = SliceOutcome {
        selected: vec![2, 0],
        shortfalls: vec![CountRequirementShortfall::new(ContextKind::MEMORY, 2, 1)],
        cap_exclusions: vec![CapExclusion::new(1, ContextKind::TOOL_OUTPUT, 1, 1)],
        rooms: vec![cupel_core::SliceRoom::new(296, vec![1, 2])],
    };
    let json = serde_json::to_string(&outcome).unwrap();
    assert_eq!(
        serde_json::from_str::<SliceOutcome>(&json).unwrap(),
        outcome
    );
    let trace = StageTrace::new(
        PipelineStage::Slice,
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(7),
        std::time::Duration::from_micros(1500),
        3,
        2,
    );
    let json = serde_json::to_string(&trace).unwrap();
    assert_eq!(serde_json::from_str::<StageTrace>(&json).unwrap(), trace);
}

#[test]
fn overflow_event_round_trips() {
    let ev = OverflowEvent::new(
        384,
        vec![ContextItem::new("a", 512).unwrap()],
        ContextBudget::new(4096, 3072).unwrap(),
    );
    let json = serde_json::to_string(&ev).unwrap();
    assert_eq!(serde_json::from_str::<OverflowEvent>(&json).unwrap(), ev);
}

#[test]
fn items_read_native_toml_datetimes_including_toml_1_1_forms() {
    #[derive(serde::Deserialize)]
    struct Doc {
        items: Vec<ContextItem>,
    }
    let doc: Doc = toml::from_str(
        r#"
        [[items]]
        content = "a"
        tokens = 1
        timestamp = 2024-01-01T00:00Z

        [[items]]
        content = "b"
        tokens = 2
        timestamp = "2024-01-01T02:00:00+02:00"
        futureRelevanceHint = 0.5
        "#,
    )
    .unwrap();
    assert_eq!(doc.items[0].timestamp(), doc.items[1].timestamp());
    assert_eq!(doc.items[0].timestamp(), Some(ts("2024-01-01T00:00:00Z")));
    let err = toml::from_str::<Doc>(
        "[[items]]\ncontent = \"c\"\ntokens = 1\ntimestamp = 2024-01-01T00:00:00\n",
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("offset is required"), "{err}");
}

#[test]
fn group_excluded_wire_shape_round_trips() {
    let r = ExclusionReason::GroupExcluded {
        group: "call-1".into(),
        group_tokens: 210,
        available_tokens: 100,
    };
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"reason": "GroupExcluded", "group": "call-1", "group_tokens": 210, "available_tokens": 100})
    );
    assert_eq!(serde_json::from_value::<ExclusionReason>(json).unwrap(), r);
    // A missing field is an error, like every known reason.
    assert!(
        serde_json::from_value::<ExclusionReason>(
            serde_json::json!({"reason": "GroupExcluded", "group": "g"})
        )
        .is_err()
    );
}

#[test]
fn item_group_is_optional_on_the_wire_and_must_not_be_empty() {
    let plain = ContextItem::new("x", 1).unwrap();
    assert!(serde_json::to_value(&plain).unwrap().get("group").is_none());
    let grouped = ContextItem::builder("x", 1).group("g").build().unwrap();
    let json = serde_json::to_value(&grouped).unwrap();
    assert_eq!(json["group"], "g");
    assert_eq!(
        serde_json::from_value::<ContextItem>(json).unwrap(),
        grouped
    );
    assert!(
        serde_json::from_value::<ContextItem>(
            serde_json::json!({"content": "x", "tokens": 1, "group": ""})
        )
        .is_err()
    );
}
