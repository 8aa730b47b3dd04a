//! What-if analysis of one context window: how full it is, what a smaller
//! budget loses, what budget a document needs, who is in at which size, and
//! what another preset would pick.
//!
//! Run with `cargo run -p cupel-rs-analytics --example what_if`.

use cupel_analytics::{
    budget_sweep, budget_utilization, find_min_budget_for, find_min_budget_for_exact,
    get_marginal_items, kind_diversity, policy_sensitivity, timestamp_coverage,
};
use cupel_core::{ContextBudget, ContextItem, ContextKind, CupelError, parse_timestamp};
use cupel_pipeline::{Pipeline, preset};

fn at(time: &str) -> Result<chrono::DateTime<chrono::Utc>, CupelError> {
    parse_timestamp(time).ok_or_else(|| CupelError::InvalidArgument(format!("bad time {time}")))
}

fn items() -> Result<Vec<ContextItem>, CupelError> {
    let msg = |text: &str, tokens, time: &str| -> Result<ContextItem, CupelError> {
        ContextItem::builder(text, tokens)
            .kind(ContextKind::MESSAGE)
            .timestamp(at(time)?)
            .build()
    };
    let doc = |text: &str, tokens, hint, time: &str| -> Result<ContextItem, CupelError> {
        ContextItem::builder(text, tokens)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(hint)
            .timestamp(at(time)?)
            .build()
    };
    Ok(vec![
        ContextItem::builder("You are a support agent for Acme Cloud.", 120)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .build()?,
        msg(
            "user: my deploy fails with 'quota exceeded'",
            40,
            "2025-03-01T09:00:00Z",
        )?,
        msg(
            "agent: which region are you deploying to?",
            30,
            "2025-03-01T09:01:00Z",
        )?,
        msg("user: eu-west, project 'shop'", 25, "2025-03-01T09:02:00Z")?,
        ContextItem::builder("tool: quota report for project 'shop' (eu-west) ...", 900)
            .kind(ContextKind::TOOL_OUTPUT)
            .future_relevance_hint(0.2)
            .priority(9)
            .timestamp(at("2025-03-01T09:03:00Z")?)
            .build()?,
        doc(
            "doc: Quotas and limits (full reference)",
            1_400,
            0.8,
            "2024-11-20T00:00:00Z",
        )?,
        doc(
            "doc: Requesting a quota increase",
            600,
            0.95,
            "2025-01-15T00:00:00Z",
        )?,
        ContextItem::builder("doc: Regions overview", 700)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(0.3)
            .priority(7)
            .timestamp(at("2024-06-01T00:00:00Z")?)
            .build()?,
        ContextItem::builder("memory: user prefers CLI instructions", 50)
            .kind(ContextKind::MEMORY)
            .future_relevance_hint(0.6)
            .timestamp(at("2025-02-10T00:00:00Z")?)
            .build()?,
        msg("user: can you raise it today?", 20, "2025-03-01T09:04:00Z")?,
    ])
}

fn short(item: &ContextItem) -> String {
    let c = item.content();
    match c.char_indices().nth(44) {
        Some((i, _)) => format!("{}…", &c[..i]),
        None => c.to_owned(),
    }
}

fn main() -> Result<(), CupelError> {
    let items = items()?;
    let budget = ContextBudget::builder(2_400, 1_800)
        .output_reserve(400)
        .build()?;
    let chat = preset("chat")?.config.build()?;
    let pipeline = Pipeline::new(chat.clone(), budget.clone());

    // 1. The window and its metrics.
    let report = pipeline.dry_run(&items)?;
    println!("== window at max 2400 / target 1800 (reserve 400), preset `chat`");
    for inc in &report.included {
        println!("  {:>5} tok  {}", inc.item.tokens(), short(&inc.item));
    }
    println!(
        "  utilisation {:.3} of max, {} kinds, {:.0}% timestamped",
        budget_utilization(&report, &budget),
        kind_diversity(&report),
        100.0 * timestamp_coverage(&report)
    );

    // 2. What would 500 fewer tokens cost?
    let lost = get_marginal_items(&pipeline, &items, &budget, 500)?;
    println!("\n== with 500 tokens less the window loses:");
    for &i in &lost {
        println!("  [{i}] {}", short(&items[i]));
    }
    if lost.is_empty() {
        println!("  nothing");
    }

    // 3. What budget does the full quota reference need?
    let target = 5;
    let ceiling = 8_000;
    let binary = find_min_budget_for(&pipeline, &items, target, ceiling)?;
    let exact = find_min_budget_for_exact(&pipeline, &items, target, ceiling)?;
    println!(
        "\n== smallest budget (max = target = b, reserve kept) for [{target}] {}:",
        short(&items[target])
    );
    println!("  binary search (spec): {binary:?}   exact scan: {exact:?}");

    // 4. Who is in at which size.
    let sizes: Vec<i64> = (1..=16).map(|k| k * 500).collect();
    let sweep = budget_sweep(&pipeline, &items, &sizes)?;
    println!("\n== sweep (x = included, ! = no window at that size)");
    print!("  {:>5}", "b");
    for i in 0..items.len() {
        print!(" {i:>2}");
    }
    println!();
    for row in &sweep.rows {
        print!("  {:>5}", row.budget);
        for i in 0..items.len() {
            let mark = if row.no_window.is_some() {
                "!"
            } else if row.included.contains(&i) {
                "x"
            } else {
                "."
            };
            print!(" {mark:>2}");
        }
        println!();
    }
    let wobbly = sweep.non_monotonic_items();
    println!("  items whose inclusion is not monotonic over these sizes: {wobbly:?}");

    // 5. What would another preset pick at the same budget?
    let rag = preset("rag")?.config.build()?;
    let debugging = preset("debugging")?.config.build()?;
    let sensitivity = policy_sensitivity(
        &items,
        &budget,
        &[("chat", &chat), ("rag", &rag), ("debugging", &debugging)],
    )?;
    println!("\n== items that swing between presets (chat / rag / debugging)");
    for d in &sensitivity.diffs {
        let marks: Vec<&str> = d
            .statuses
            .iter()
            .map(|(_, s)| match s {
                cupel_analytics::ItemStatus::Included => "in ",
                cupel_analytics::ItemStatus::Excluded => "out",
            })
            .collect();
        println!("  {}  {}", marks.join(" / "), d.content);
    }
    Ok(())
}
