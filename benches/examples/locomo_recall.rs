//! Evidence recall on LoCoMo: how much of the evidence for a question a
//! window of 500 / 1,000 / 2,000 / 4,000 tokens holds, for the newest turns,
//! plain BM25 (the shared README's baseline) and Cupel's `recall` preset.
//!
//! ```text
//! cargo run --release -p cupel-benches --example locomo_recall [-- DIR]
//! ```
//!
//! `DIR` (default `../shared/locomo-dev`) holds the LoCoMo conversation
//! files (`*.json`); the data is read there, never copied into the
//! repository. One item per dialog turn: content `[session date] speaker:
//! text` (plus ` [photo: caption]` for a shared photo), tokens
//! `max(1, chars / 4)`, timestamp the session date, `dia_id` and `session`
//! in metadata. Questions of categories 1-4; the recall of a question is the
//! share of its evidence turns inside the window, averaged over questions.
//!
//! The chat recall row (`cupel_chat::Trim::recall`) reads the same turns as
//! a chat transcript: one message per turn, `user` for the conversation's
//! first speaker and `assistant` for the other, the speaker as `name`, the
//! session date as `timestamp`, the text (and caption) as content, each
//! counted as `max(1, chars / 4)` of `[date] speaker: text` (its item's
//! tokens), the recall query the question; a turn is in the window when it
//! is among the newest turns kept or recalled into the context message.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{NaiveDateTime, TimeZone, Utc};
use cupel_core::{ContextBudget, ContextItem, Query, ScoreContext, Scorer};
use cupel_pipeline::{Pipeline, PolicyConfig, RunOptions};
use serde_json::Value;

const BUDGETS: [i64; 4] = [500, 1_000, 2_000, 4_000];

struct Conversation {
    turns: Vec<ContextItem>,
    questions: Vec<(String, Vec<String>)>,
    /// The turns as a chat (see the module docs).
    chat: Vec<cupel_chat::Message>,
}

/// Counts a chat message as its LoCoMo item: `max(1, chars / 4)` of
/// `[date] speaker: text` (the recall's context message: of its text).
struct CharsOver4;

impl cupel_chat::MessageCounter for CharsOver4 {
    fn count_message(&self, m: &cupel_chat::Message) -> i64 {
        let text = m.text();
        let chars = match (m.extra.get("timestamp").and_then(Value::as_str), &m.name) {
            (Some(date), Some(name)) => format!("[{date}] {name}: {text}").chars().count(),
            _ => text.chars().count(),
        };
        (chars as i64 / 4).max(1)
    }
    fn describe(&self) -> String {
        "chars / 4".into()
    }
}

fn parse_date(s: &str) -> Option<chrono::DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s, "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|n| Utc.from_utc_datetime(&n))
}

fn load(path: &Path, captions: bool) -> Result<Conversation, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let obj = v.as_object().ok_or("not an object")?;
    let mut turns = Vec::new();
    let mut chat = Vec::new();
    let mut first_speaker: Option<String> = None;
    for n in 1.. {
        let Some(session) = obj.get(&format!("session_{n}")).and_then(Value::as_array) else {
            break;
        };
        let date = obj
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("");
        for t in session {
            let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
            let mut content = format!("[{date}] {}: {}", field("speaker"), field("text"));
            if captions && !field("blip_caption").is_empty() {
                content.push_str(&format!(" [photo: {}]", field("blip_caption")));
            }
            let mut text = field("text").to_string();
            if captions && !field("blip_caption").is_empty() {
                text.push_str(&format!(" [photo: {}]", field("blip_caption")));
            }
            let speaker = field("speaker").to_string();
            let first = first_speaker.get_or_insert_with(|| speaker.clone());
            let role = if *first == speaker {
                "user"
            } else {
                "assistant"
            };
            chat.push(
                cupel_chat::message_from_value(
                    serde_json::json!({"role": role, "name": speaker, "content": text, "timestamp": date}),
                    cupel_chat::Format::OpenAi,
                    "turn",
                )
                .map_err(|e| e.to_string())?,
            );
            let tokens = (content.chars().count() as i64 / 4).max(1);
            let item = ContextItem::builder(content, tokens)
                .timestamp_opt(parse_date(date))
                .metadata("dia_id", field("dia_id"))
                .metadata("session", n.to_string())
                .build()
                .map_err(|e| e.to_string())?;
            turns.push(item);
        }
    }
    let mut questions = Vec::new();
    for q in obj
        .get("qa")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let cat = q.get("category").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=4).contains(&cat) {
            continue;
        }
        let evidence: Vec<String> = q
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .flat_map(|e| e.split(';'))
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        if evidence.is_empty() {
            continue;
        }
        let question = q.get("question").and_then(Value::as_str).unwrap_or("");
        questions.push((question.to_string(), evidence));
    }
    Ok(Conversation {
        turns,
        questions,
        chat,
    })
}

/// The best-scoring turns that fit (ties to the newer turn), as ids;
/// `stop`: stop at the first turn that does not fit (the newest-turns
/// window, which has no holes).
fn best_that_fit(
    turns: &[ContextItem],
    scores: &[f64],
    budget: i64,
    stop: bool,
) -> BTreeSet<usize> {
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(b.cmp(&a)));
    let mut left = budget;
    let mut out = BTreeSet::new();
    for i in order {
        if turns[i].tokens() <= left {
            left -= turns[i].tokens();
            out.insert(i);
        } else if stop {
            break;
        }
    }
    out
}

fn recall(turns: &[ContextItem], window: &BTreeSet<usize>, evidence: &[String]) -> f64 {
    let held: BTreeSet<&str> = window
        .iter()
        .filter_map(|&i| turns[i].metadata().get("dia_id").map(String::as_str))
        .collect();
    let hits = evidence
        .iter()
        .filter(|e| held.contains(e.as_str()))
        .count();
    hits as f64 / evidence.len() as f64
}

/// The chat recall window's evidence recall for one question at `budget`
/// with the newest turns' `share`.
fn chat_recall(
    c: &Conversation,
    question: &str,
    budget: i64,
    share: f64,
    evidence: &[String],
) -> Result<f64, Box<dyn std::error::Error>> {
    let opts = cupel_chat::Trim::openai(budget)
        .counter(CharsOver4)
        .report(false)
        .recall(
            cupel_chat::RecallOptions::new()
                .query(question)
                .newest_share(share),
        );
    let out = cupel_chat::trim(&c.chat, &opts)?;
    let mut window: BTreeSet<usize> = out.positions.iter().copied().collect();
    if let Some(r) = out.recall.as_ref().filter(|r| r.message.is_some()) {
        window.extend(r.positions.iter().copied());
    }
    Ok(recall(&c.turns, &window, evidence))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("../shared/locomo-dev"), PathBuf::from);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let plain = cupel_scorers::Bm25Scorer::builder()
        .k1(1.5)
        .b(0.75)
        .stemming(false)
        .build()?;
    let mut rows: Vec<(&str, [f64; 4])> = vec![
        ("newest turns that fit", [0.0; 4]),
        ("plain BM25 (no stemming, no neighbours)", [0.0; 4]),
        ("Cupel `recall` preset", [0.0; 4]),
        ("Cupel chat recall window (newest share 0.5)", [0.0; 4]),
        ("Cupel chat recall window (newest share 0.2)", [0.0; 4]),
    ];
    // The `recall` preset, or (for experiments) the policy file named by
    // `CUPEL_RECALL_POLICY`.
    let recall_policy = match std::env::var("CUPEL_RECALL_POLICY") {
        Ok(path) => PolicyConfig::from_toml_str(&std::fs::read_to_string(path)?)?.build()?,
        Err(_) => cupel_pipeline::preset("recall")?.config.build()?,
    };
    let mut count = 0usize;
    for f in &files {
        let bare = load(f, false)?;
        let full = load(f, true)?;
        let refs: Vec<&ContextItem> = bare.turns.iter().collect();
        for (qi, (question, evidence)) in bare.questions.iter().enumerate() {
            count += 1;
            let query = Query::new(question.as_str());
            let cx = ScoreContext::new().query(Some(&query));
            let newest: Vec<f64> = (0..bare.turns.len()).map(|i| i as f64).collect();
            let bm25 = plain.score_all_in(&refs, &cx);
            for (b, &budget) in BUDGETS.iter().enumerate() {
                rows[0].1[b] += recall(
                    &bare.turns,
                    &best_that_fit(&bare.turns, &newest, budget, true),
                    evidence,
                );
                rows[1].1[b] += recall(
                    &bare.turns,
                    &best_that_fit(&bare.turns, &bm25, budget, false),
                    evidence,
                );
                let pipeline = Pipeline::builder()
                    .policy(&recall_policy)
                    .budget(ContextBudget::new(budget, budget)?)
                    .build()?;
                let out = pipeline.run_with(&full.turns, RunOptions::new().query(&query))?;
                let ids: BTreeSet<&str> = out
                    .items
                    .iter()
                    .filter_map(|i| i.metadata().get("dia_id").map(String::as_str))
                    .collect();
                let ev = &full.questions[qi].1;
                let hits = ev.iter().filter(|e| ids.contains(e.as_str())).count();
                rows[2].1[b] += hits as f64 / ev.len() as f64;
                rows[3].1[b] += chat_recall(&full, question, budget, 0.5, ev)?;
                rows[4].1[b] += chat_recall(&full, question, budget, 0.2, ev)?;
            }
        }
    }
    println!(
        "LoCoMo evidence recall, {} conversations, {count} questions (categories 1-4)\n",
        files.len()
    );
    println!("| budget (tokens) | 500 | 1,000 | 2,000 | 4,000 |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, sums) in rows {
        let cells: Vec<String> = sums
            .iter()
            .map(|s| format!("{:.3}", s / count as f64))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}
