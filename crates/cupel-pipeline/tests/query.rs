//! The per-run query (`RunOptions::query`): read by query-aware scorers,
//! through composites, and changing nothing for other scorers.
#![allow(clippy::expect_used)]

use cupel_core::{ContextBudget, ContextItem, CupelError, Query};
use cupel_pipeline::{Pipeline, RunOptions};
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{Bm25Scorer, CompositeScorer, PriorityScorer};
use cupel_slicers::GreedySlice;

fn items() -> Vec<ContextItem> {
    [
        "I moved to Paris",
        "My first trip to Tokyo was in May",
        "Lunch was good",
    ]
    .iter()
    .map(|t| ContextItem::builder(*t, 10).build())
    .collect::<Result<_, _>>()
    .expect("valid items")
}

fn contents(out: &[ContextItem]) -> Vec<&str> {
    out.iter().map(ContextItem::content).collect()
}

#[test]
fn the_run_query_reaches_a_bm25_scorer_inside_a_composite() -> Result<(), CupelError> {
    let scorer = CompositeScorer::builder()
        .add(Bm25Scorer::new(), 1.0)
        .add(PriorityScorer, 0.1)
        .build()?;
    let pipeline = Pipeline::builder()
        .scorer(scorer)
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 10)?)
        .build()?;
    let items = items();
    let q = Query::new("When did I first travel to Tokyo?");
    let out = pipeline.run_with(&items, RunOptions::new().query(&q))?;
    assert_eq!(contents(&out.items), ["My first trip to Tokyo was in May"]);
    let q = Query::new("paris");
    let out = pipeline.run_with(&items, RunOptions::new().query(&q).report(true))?;
    assert_eq!(contents(&out.items), ["I moved to Paris"]);
    let report = out.report.expect("asked for");
    assert_eq!(report.included.len(), 1);
    Ok(())
}

#[test]
fn without_a_query_the_run_is_a_plain_run() -> Result<(), CupelError> {
    let pipeline = Pipeline::builder()
        .scorer(PriorityScorer)
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 20)?)
        .build()?;
    let items = items();
    let plain = pipeline.run(&items)?;
    let q = Query::new("tokyo");
    // A scorer that does not read the query scores as before.
    let with = pipeline
        .run_with(&items, RunOptions::new().query(&q))?
        .items;
    assert_eq!(plain, with);
    assert_eq!(plain, pipeline.run_with(&items, RunOptions::new())?.items);
    Ok(())
}
