//! Replays the seeded 300-request agent and chat transcripts under the
//! three window strategies with the Anthropic profile and prints the totals
//! and the issue-26 targets, then the same with tool results older than two
//! exchanges aged (`cargo run --release -p cupel-benches --example
//! cache_sim [MAX_TOKENS] [--write FILE.json]`). With `--seeds K` it
//! replays the agent transcripts of K consecutive seeds instead (the
//! README's seed first) and prints the spread of the issue-26 measures, so
//! one seed's figure can be read against the generator's variation, and
//! the issue-52 compaction ratios on the agent and chat transcripts of
//! those seeds.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_benches::agent::{AGENT_SEED, agent_transcript, chat_transcript};
use cupel_chat::{
    AgeToolResults, CacheProfile, Compaction, DigestSummarizer, SimStrategy, Transcript, Trim,
    simulate,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max: i64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(40_000);
    if let Some(i) = args.iter().position(|a| a == "--seeds") {
        let k: u64 = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(10);
        spread(k, max);
        println!();
        compaction_spread(k, max);
        return;
    }
    let agent = agent_transcript(AGENT_SEED, 300).unwrap();
    let chat = chat_transcript(AGENT_SEED, 300).unwrap();
    if let Some(i) = args.iter().position(|a| a == "--write") {
        std::fs::write(&args[i + 1], agent.to_json_pretty()).unwrap();
    }
    report(
        "agent transcript (tool calls, a user message every 2-6 steps)",
        &agent,
        max,
    );
    println!();
    report(
        "chat transcript (one user/assistant exchange per request)",
        &chat,
        max,
    );
    println!();
    compaction("agent transcript", &agent, max);
    println!();
    compaction("chat transcript", &chat, max);
}

/// Issue 52: the session with summaries against the session without and
/// against summarising on every request; ageing at cuts against none.
fn compaction(title: &str, doc: &Transcript, max: i64) {
    let profile = CacheProfile::anthropic();
    let bound = max / 40;
    let c = Compaction::new(DigestSummarizer::new())
        .max_tokens(bound)
        .unwrap();
    let sim = simulate(doc.messages(), &Trim::anthropic(max).summarize(c), &profile).unwrap();
    println!("## {title}: compaction (digest summariser, bound {bound} tokens)");
    print!("{}", sim.totals_table());
    let cost = |s: SimStrategy| sim.run(s).unwrap().cost;
    let (aware, with, every) = (
        cost(SimStrategy::CacheAware),
        cost(SimStrategy::CacheAwareSummary),
        cost(SimStrategy::SummarizeEvery),
    );
    println!(
        "aware+summary / cache-aware: {:.3}x (target <= 1.1x); aware+summary / summarize-every: {:.3}x (target <= 0.5x); aware+summary / langchain-state: {:.3}x",
        with / aware,
        with / every,
        with / cost(SimStrategy::SummarizationMiddleware)
    );
    for s in [SimStrategy::CacheAware, SimStrategy::CacheAwareSummary] {
        let r = sim.run(s).unwrap();
        let cuts = r
            .turns
            .iter()
            .filter(|t| t.note.as_deref().is_some_and(|n| n.contains("removed")))
            .count();
        println!(
            "{s}: cost from reads {:.0}, writes {:.0}, uncached {}; {cuts} cuts; low-water mark at the last request {}",
            profile.read_multiplier * r.total.read as f64,
            profile.write_multiplier * r.total.written as f64,
            r.total.uncached,
            r.turns.last().map_or(0, |t| t.low_water)
        );
    }
    if !doc
        .messages()
        .iter()
        .any(cupel_chat::Message::is_tool_result)
    {
        return;
    }
    for (name, aging) in [
        ("aged after 2 exchanges", AgeToolResults::new(2)),
        (
            "aged after 2 exchanges, clear_at_least 5000",
            AgeToolResults::new(2).clear_at_least(5_000),
        ),
    ] {
        let aged = simulate(
            doc.messages(),
            &Trim::anthropic(max).age_tool_results(aging),
            &profile,
        )
        .unwrap();
        let a = aged.run(SimStrategy::CacheAware).unwrap().cost;
        println!(
            "cache-aware {name}: {a:.0} vs {aware:.0} without ageing ({:.3}x; target <= 1x)",
            a / aware
        );
    }
}

fn report(title: &str, doc: &Transcript, max: i64) {
    report_with(title, doc, &Trim::anthropic(max));
    if !doc
        .messages()
        .iter()
        .any(cupel_chat::Message::is_tool_result)
    {
        return;
    }
    println!();
    report_with(
        &format!("{title}; tool results aged after 2 exchanges"),
        doc,
        &Trim::anthropic(max).age_tool_results(AgeToolResults::new(2)),
    );
}

fn report_with(title: &str, doc: &Transcript, opts: &Trim) {
    let max = opts.max_tokens();
    let profile = CacheProfile::anthropic();
    let sim = simulate(doc.messages(), opts, &profile).unwrap();
    if std::env::var_os("CACHE_SIM_DEBUG").is_some() {
        debug(&sim);
    }
    let aware = sim.run(SimStrategy::CacheAware).unwrap();
    let newest = sim.run(SimStrategy::NewestMessages).unwrap();
    let history = aware.turns.last().map_or(0, |t| t.history_tokens);
    let cuts = aware
        .turns
        .iter()
        .filter(|t| t.note.as_deref().is_some_and(|n| n.contains("removed")))
        .count();
    let under = aware
        .turns
        .iter()
        .filter(|t| t.history_tokens >= t.low_water && t.window_tokens < t.low_water)
        .count();
    let min_after = aware
        .turns
        .iter()
        .filter(|t| t.history_tokens >= t.low_water)
        .map(|t| t.window_tokens)
        .min()
        .unwrap_or(0);
    println!("## {title}");
    println!(
        "{} requests, {} messages, history {} tokens, budget {max}, low-water {} ({})",
        aware.turns.len(),
        doc.messages().len(),
        history,
        aware.turns.last().map_or(0, |t| t.low_water),
        profile
    );
    print!("{}", sim.totals_table());
    println!(
        "cache-aware: {:.1}% of input from cache (target >= 80%); newest-messages {:.1}% (target <= 20%)",
        aware.total.read_share() * 100.0,
        newest.total.read_share() * 100.0
    );
    println!(
        "cost ratio cache-aware / newest-messages: {:.1}% (target <= 40%)",
        aware.cost / newest.cost * 100.0
    );
    println!(
        "cuts: {cuts}; turns under the low-water mark once the history exceeds it: {under}; smallest window then: {min_after}"
    );
}

/// Per seed: cost ratio, both read shares and the cut count; then the
/// median and range of each.
fn spread(k: u64, max: i64) {
    let profile = CacheProfile::anthropic();
    let mut rows: Vec<[f64; 4]> = Vec::new();
    println!("| seed | cost aware/newest | aware from cache | newest from cache | cuts |");
    println!("|---|---:|---:|---:|---:|");
    for s in 0..k {
        let seed = AGENT_SEED.wrapping_add(s);
        let doc = agent_transcript(seed, 300).unwrap();
        let sim = simulate(doc.messages(), &Trim::anthropic(max), &profile).unwrap();
        let aware = sim.run(SimStrategy::CacheAware).unwrap();
        let newest = sim.run(SimStrategy::NewestMessages).unwrap();
        let cuts = aware
            .turns
            .iter()
            .filter(|t| t.note.as_deref().is_some_and(|n| n.contains("removed")))
            .count();
        let row = [
            aware.cost / newest.cost * 100.0,
            aware.total.read_share() * 100.0,
            newest.total.read_share() * 100.0,
            cuts as f64,
        ];
        println!(
            "| {seed:#x} | {:.1}% | {:.1}% | {:.1}% | {} |",
            row[0], row[1], row[2], row[3]
        );
        rows.push(row);
    }
    let names = [
        "cost aware/newest",
        "aware from cache",
        "newest from cache",
        "cuts",
    ];
    for (c, name) in names.iter().enumerate() {
        let mut v: Vec<f64> = rows.iter().map(|r| r[c]).collect();
        v.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (v.first(), v.last()) {
            println!(
                "{name}: median {:.1}, range {lo:.1}-{hi:.1}",
                v[v.len() / 2]
            );
        }
    }
}

/// The issue-52 ratios of one transcript: aware+summary over cache-aware
/// and over summarize-every.
fn compaction_ratios(doc: &Transcript, max: i64) -> [f64; 2] {
    let c = Compaction::new(DigestSummarizer::new())
        .max_tokens(max / 40)
        .unwrap();
    let sim = simulate(
        doc.messages(),
        &Trim::anthropic(max).summarize(c),
        &CacheProfile::anthropic(),
    )
    .unwrap();
    let cost = |s: SimStrategy| sim.run(s).unwrap().cost;
    let with = cost(SimStrategy::CacheAwareSummary);
    [
        with / cost(SimStrategy::CacheAware),
        with / cost(SimStrategy::SummarizeEvery),
    ]
}

/// Per seed, the compaction ratios on the agent and the chat transcript;
/// then the median and range of each.
fn compaction_spread(k: u64, max: i64) {
    println!(
        "| seed | agent: summary/aware | agent: summary/every | chat: summary/aware | chat: summary/every |"
    );
    println!("|---|---:|---:|---:|---:|");
    let mut rows: Vec<[f64; 4]> = Vec::new();
    for s in 0..k {
        let seed = AGENT_SEED.wrapping_add(s);
        let [aa, ae] = compaction_ratios(&agent_transcript(seed, 300).unwrap(), max);
        let [ca, ce] = compaction_ratios(&chat_transcript(seed, 300).unwrap(), max);
        println!("| {seed:#x} | {aa:.3}x | {ae:.3}x | {ca:.3}x | {ce:.3}x |");
        rows.push([aa, ae, ca, ce]);
    }
    let names = [
        "agent summary/aware (target <= 1.1x)",
        "agent summary/every (target <= 0.5x)",
        "chat summary/aware (target <= 1.1x)",
        "chat summary/every (target <= 0.5x)",
    ];
    for (c, name) in names.iter().enumerate() {
        let mut v: Vec<f64> = rows.iter().map(|r| r[c]).collect();
        v.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (v.first(), v.last()) {
            println!(
                "{name}: median {:.3}x, range {lo:.3}x-{hi:.3}x",
                v[v.len() / 2]
            );
        }
    }
}

#[allow(dead_code)]
fn debug(sim: &cupel_chat::Simulation) {
    let newest = sim.run(SimStrategy::NewestMessages).unwrap();
    for t in newest.turns.iter().skip(60).take(30) {
        println!(
            "{:>4} end {:>4} msgs {:>4} win {:>6} read {:>6} written {:>6}",
            t.turn, t.end, t.window_messages, t.window_tokens, t.usage.read, t.usage.written
        );
    }
}
