//! Relevance in a pipeline run: report notes, vector and hybrid scorers from
//! a policy file, typed embedding errors at input positions.
#![allow(clippy::expect_used)]

use cupel_core::{ContextBudget, ContextItem, CupelError, Query};
use cupel_pipeline::{Pipeline, PolicyConfig, RunOptions};

fn item(text: &str, tokens: i64, emb: Option<Vec<f32>>) -> ContextItem {
    ContextItem::builder(text, tokens)
        .embedding_opt(emb)
        .build()
        .expect("valid item")
}

fn pipeline(policy_toml: &str, max: i64) -> Pipeline {
    let policy = PolicyConfig::from_toml_str(policy_toml)
        .expect("valid policy")
        .build()
        .expect("builds");
    Pipeline::new(policy, ContextBudget::new(max, max).expect("budget"))
}

const BM25: &str = "slicer = \"greedy\"\nplacer = \"chronological\"\n[[scorers]]\ntype = \"bm25\"\nstemming = false\n";

/// Report rows carry the bm25 notes, on the row of the right input item:
/// a pinned item first shifts the scoreable slice by one.
/// Query "tokyo travel" over "tokyo travel" (both terms, equal
/// contributions: alphabetical) and "paris" (no match: no note).
#[test]
fn report_rows_carry_the_matched_words() -> Result<(), CupelError> {
    let p = pipeline(BM25, 100);
    let items = vec![
        ContextItem::builder("system prompt", 5)
            .pinned(true)
            .build()?,
        item("paris", 5, None),
        item("tokyo travel", 5, None),
    ];
    let q = Query::new("travel to tokyo");
    let out = p.run_with(&items, RunOptions::new().query(&q).report(true))?;
    let report = out.report.expect("asked for");
    let row = report
        .included
        .iter()
        .find(|r| r.position == 2)
        .expect("tokyo row");
    assert_eq!(row.notes.len(), 1);
    assert_eq!(
        row.notes[0].to_string(),
        "relevance 1.00: matched tokyo, travel"
    );
    assert!(
        report
            .included
            .iter()
            .filter(|r| r.position != 2)
            .all(|r| r.notes.is_empty())
    );
    // The same run without a report builds no notes and selects the same.
    let plain = p.run_with(&items, RunOptions::new().query(&q))?;
    assert_eq!(plain.items, out.items);
    assert!(plain.report.is_none());
    Ok(())
}

#[test]
fn json_rows_carry_notes_only_when_there_are_some() -> Result<(), CupelError> {
    let p = pipeline(BM25, 100);
    let items = vec![item("tokyo", 1, None), item("paris", 1, None)];
    let q = Query::new("tokyo");
    let report = p
        .run_with(&items, RunOptions::new().query(&q).report(true))?
        .report
        .expect("asked for");
    let json = serde_json::to_value(&report).expect("serialises");
    let rows = json["included"].as_array().expect("rows");
    let tokyo = rows
        .iter()
        .find(|r| r["item"]["content"] == "tokyo")
        .expect("row");
    assert_eq!(tokyo["notes"][0]["terms"], serde_json::json!(["tokyo"]));
    assert_eq!(tokyo["notes"][0]["scorer"], "bm25");
    let paris = rows
        .iter()
        .find(|r| r["item"]["content"] == "paris")
        .expect("row");
    assert!(paris.get("notes").is_none());
    Ok(())
}

const HYBRID: &str = r#"
slicer = "greedy"
placer = "chronological"
[[scorers]]
type = "hybrid"
fusion = "rrf"
children = [{ type = "bm25" }, { type = "vector" }]
"#;

#[test]
fn a_hybrid_policy_file_runs_and_fails_with_typed_errors() -> Result<(), CupelError> {
    let p = pipeline(HYBRID, 2);
    let items = vec![
        ContextItem::builder("pinned", 0).pinned(true).build()?,
        item("tokyo trip", 1, Some(vec![1.0, 0.0])),
        item("car", 1, Some(vec![0.0, 1.0])),
        item("dog", 1, Some(vec![-1.0, 0.0])),
    ];
    // "tokyo trip" first for both children; "car" second by vector (0.5
    // vs the dog's 0), so the 2-token window holds those two.
    let q = Query::new("tokyo").with_embedding(vec![1.0, 0.0]);
    let out = p.run_with(&items, RunOptions::new().query(&q))?;
    let got: Vec<&str> = out.items.iter().map(ContextItem::content).collect();
    assert_eq!(got, ["pinned", "tokyo trip", "car"]);
    // Mismatch: item 3 of the input (the pinned item shifts the scored
    // slice, the error names the input position).
    let mut bad = items.clone();
    bad[3] = item("dog", 1, Some(vec![1.0, 0.0, 0.0]));
    let e = p.run_with(&bad, RunOptions::new().query(&q)).unwrap_err();
    assert_eq!(
        e,
        CupelError::EmbeddingDimensionMismatch {
            index: 3,
            item_dims: 3,
            query_dims: 2
        }
    );
    // A query without an embedding, and no query at all.
    let e = p
        .run_with(&items, RunOptions::new().query(&Query::new("tokyo")))
        .unwrap_err();
    assert!(matches!(e, CupelError::QueryEmbeddingMissing { .. }), "{e}");
    assert!(matches!(
        p.run(&items),
        Err(CupelError::QueryEmbeddingMissing { .. })
    ));
    Ok(())
}

#[test]
fn policy_keys_are_checked() {
    let bad = HYBRID.replace("fusion = \"rrf\"", "fusion = \"rrf\"\nk1 = 1.0");
    let e = PolicyConfig::from_toml_str(&bad).unwrap_err();
    assert!(e.to_string().contains("k1"), "{e}");
    let bad = HYBRID.replace("fusion = \"rrf\"", "fusion = \"weighted\"\nrrf_k = 10.0");
    let e = PolicyConfig::from_toml_str(&bad)
        .and_then(|c| c.build().map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("rrf_k"), "{e}");
    let bad = HYBRID.replace("fusion = \"rrf\"", "fusion = \"borda\"");
    assert!(PolicyConfig::from_toml_str(&bad).is_err());
    let e = PolicyConfig::from_toml_str("[[scorers]]\ntype = \"hybrid\"\n")
        .and_then(|c| c.build().map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("children"), "{e}");
}
