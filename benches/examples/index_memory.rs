//! Memory of the persistent BM25 index against the text it indexes, and the
//! time of a query through it against the plain scorer, on real
//! conversation turns (issue 51, item 9): every turn of the LoCoMo
//! development conversations, one item per turn
//! (`[session date] speaker: text`).
//!
//! ```text
//! cargo run --release -p cupel-benches --example index_memory -- ../shared/locomo-dev
//! ```
//!
//! Prints the index's heap bytes (tables at capacity, interned term bytes)
//! over the indexed text bytes, and the mean time of one scoring pass per
//! question, plain and indexed, with the maximum score difference.

use std::path::PathBuf;
use std::time::Instant;

use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
use cupel_scorers::{Bm25Scorer, IndexedBm25Scorer};
use serde_json::Value;

fn turns_and_questions(dir: &PathBuf) -> Result<(Vec<ContextItem>, Vec<String>), String> {
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let obj = v.get("conversation").unwrap_or(&v);
        for n in 1.. {
            let Some(session) = obj.get(format!("session_{n}")).and_then(Value::as_array) else {
                if n > 40 {
                    break;
                }
                continue;
            };
            let date = obj
                .get(format!("session_{n}_date_time"))
                .and_then(Value::as_str)
                .unwrap_or("");
            for t in session {
                let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let content = format!("[{date}] {}: {}", field("speaker"), field("text"));
                let tokens = (content.chars().count() / 4).max(1) as i64;
                let item = ContextItem::builder(content, tokens)
                    .metadata("session", n.to_string())
                    .build()
                    .map_err(|e| e.to_string())?;
                turns.push(item);
            }
        }
        for q in v.get("qa").and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = q.get("question").and_then(Value::as_str) {
                questions.push(s.to_string());
            }
        }
    }
    Ok((turns, questions))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "../shared/locomo-dev".into()),
    );
    let (turns, questions) = turns_and_questions(&dir)?;
    let plain = Bm25Scorer::builder()
        .neighbours(0.5)
        .group_key("session")
        .build()?;
    let indexed = IndexedBm25Scorer::new(plain.clone());
    let t0 = Instant::now();
    indexed.extend(&turns)?;
    indexed.shrink_to_fit();
    let build = t0.elapsed();
    let (heap, text, docs) = indexed.with_index(|i| (i.heap_bytes(), i.text_bytes(), i.len()));
    println!(
        "{} turns ({docs} distinct), {text} text bytes; index {heap} heap bytes = {:.2}x the text; built in {:.1} ms",
        turns.len(),
        heap as f64 / text as f64,
        build.as_secs_f64() * 1e3
    );
    let refs: Vec<&ContextItem> = turns.iter().collect();
    let mut max_diff = 0.0f64;
    let (mut t_plain, mut t_index) = (0.0, 0.0);
    for q in &questions {
        let query = Query::new(q.as_str());
        let cx = ScoreContext::new().query(Some(&query));
        let t = Instant::now();
        let a = plain.score_all_in(&refs, &cx);
        t_plain += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = indexed.score_all_in(&refs, &cx);
        t_index += t.elapsed().as_secs_f64();
        for (x, y) in a.iter().zip(&b) {
            max_diff = max_diff.max((x - y).abs());
        }
    }
    let n = questions.len().max(1) as f64;
    println!(
        "{} queries: plain {:.3} ms, indexed {:.3} ms per query ({:.1}x faster); max score difference {max_diff:e}",
        questions.len(),
        t_plain / n * 1e3,
        t_index / n * 1e3,
        t_plain / t_index.max(1e-12)
    );
    Ok(())
}
