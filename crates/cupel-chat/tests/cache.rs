//! Hand-derived cache sessions, breakpoints and billing. Token counts are
//! set per message (field `t`, read by a test counter, no request overhead)
//! so every expected value follows from the arithmetic in the comments.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    AgeToolResults, Block, CacheProfile, CacheSession, CacheStatus, CacheUsage, ChatError,
    CutFront, Format, LowWater, MAX_CACHE_MARKERS, Message, MessageCounter, PrefixBreak,
    PromptCache, SimStrategy, Transcript, Trim, apply_breakpoints, cache_marker_paths,
    count_cache_markers, plan_breakpoints, request_ends, simulate_with, trim,
};
use serde_json::{Value, json};

struct Fixed;

impl MessageCounter for Fixed {
    fn count_message(&self, m: &Message) -> i64 {
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn describe(&self) -> String {
        "fixed".into()
    }
}

fn t(mut m: Message, tokens: i64) -> Message {
    m.extra.insert("t".into(), json!(tokens));
    m
}

/// System (10 tokens), then `n` exchanges of a user message and an
/// assistant reply, 10 tokens each: S=#0, U1=#1, A1=#2, U2=#3, ...
fn chat(n: usize) -> Vec<Message> {
    let mut v = vec![t(Message::system("Be brief."), 10)];
    for i in 1..=n {
        v.push(t(Message::user(format!("question {i}")), 10));
        v.push(t(Message::assistant(format!("answer {i}")), 10));
    }
    v
}

/// The test profile: Anthropic prices and rules with a 15-token minimum.
fn profile() -> CacheProfile {
    CacheProfile::anthropic().min_prefix_tokens(15)
}

/// Budget 100, low-water mark 50 (window tokens): 90 tokens for the
/// conversation after the 10-token system prompt, cut down to 40.
fn session() -> CacheSession {
    CacheSession::new(Trim::openai(100).counter(Fixed), profile()).low_water(LowWater::Tokens(50))
}

#[test]
fn appends_while_it_fits_then_cuts_deep_and_appends_again() {
    let all = chat(9);
    let ends = request_ends(&all);
    // Request k holds the messages before assistant k: S, U1, A1, ..., Uk.
    assert_eq!(ends, vec![2, 4, 6, 8, 10, 12, 14, 16, 18]);
    let mut s = session();

    // Turns 1-5: the conversation is 20k - 10 tokens (k users, k - 1
    // replies): 10, 30, 50, 70, 90 <= 90, so every message is appended.
    for (k, &end) in ends.iter().take(5).enumerate() {
        let turn = s.next(&all[..end]).unwrap();
        assert_eq!(turn.positions, (0..end).collect::<Vec<_>>());
        assert!(turn.cut.is_none());
        if k > 0 {
            // The whole previous window (2k messages) is kept.
            assert_eq!(turn.kept_prefix, 2 * k);
            assert_eq!(turn.broke, None);
        }
    }

    // Turn 6: 20 * 6 - 10 = 110 > 90. Exchanges 1-5 hold 20 tokens, U6 10.
    // Remove E1: 110 > 90, must -> 90. E2: 90 - 20 = 70 >= 40 -> 70.
    // E3: 70 - 20 = 50 >= 40 -> 50. E4: 50 - 20 = 30 < 40: stop.
    // Window: S, U4 A4 U5 A5 U6 = #0, #7..#11, 10 + 50 = 60 tokens.
    let t6 = s.next(&all[..12]).unwrap();
    assert_eq!(t6.positions, vec![0, 7, 8, 9, 10, 11]);
    assert_eq!(t6.window_tokens, 60);
    assert_eq!(t6.low_water, 50);
    assert!(t6.window_tokens >= t6.low_water);
    let cut = t6.cut.unwrap();
    assert_eq!((cut.first_unit, cut.last_unit), (1, 3));
    assert_eq!(
        (cut.reached, cut.removed_messages, cut.removed_tokens),
        (120, 6, 60)
    );
    assert_eq!(t6.broke, Some(PrefixBreak::Cut));
    assert_eq!(t6.removed, vec![1, 2, 3, 4, 5, 6]); // U1 A1 U2 A2 U3 A3
    assert_eq!(t6.kept_prefix, 1); // only the system prompt
    // The cut stopped at exchange 4 (U4 + A4 = 20 tokens): without it the
    // window would hold 60 - 20 = 40 < 50 tokens.
    assert_eq!(
        (cut.front_unit, cut.front_unit_tokens, cut.front_reason),
        (4, 20, CutFront::Mark)
    );
    assert_eq!((cut.shortened, cut.shortened_saved), (0, 0));
    assert!(
        t6.explain().starts_with(
            "turn 6: window reached 120 of 100; removed exchanges 1–3 (60 tokens) to 60 tokens \
             (low-water mark 50); exchange 4 (20 tokens) stays: without it the window would \
             fall under the mark; 60 of 100 tokens"
        ),
        "{}",
        t6.explain()
    );

    // Every input message has a row. Turn 5's window was #0..#9, so:
    // #0 pinned; #1..#6 cut with exchanges 1, 1, 2, 2, 3, 3; #7..#9 were
    // in the previous window but follow the moved front: sent again;
    // #10 (A5) and #11 (U6) are new.
    use cupel_chat::CacheStatus as St;
    let statuses: Vec<St> = t6.rows.iter().map(|r| r.status.clone()).collect();
    let cut_in = |unit| St::Cut { unit };
    assert_eq!(
        statuses,
        vec![
            St::Pinned,
            cut_in(1),
            cut_in(1),
            cut_in(2),
            cut_in(2),
            cut_in(3),
            cut_in(3),
            St::Resent,
            St::Resent,
            St::Resent,
            St::New,
            St::New,
        ]
    );
    assert_eq!(
        t6.rows[1].to_string(),
        "#1 user removed by this turn's cut, with exchange 1 (10 tokens)"
    );

    // Turn 7: 50 + A6 + U7 = 70 <= 90: appended after the whole window.
    let t7 = s.next(&all[..14]).unwrap();
    // #1..#6 went in turn 6; #7..#11 are turn 6's window unchanged; A6 and
    // U7 (#12, #13) are appended.
    assert_eq!(
        t7.rows_text(),
        "#0 system kept: pinned prompt (10 tokens)\n\
         #1–#6: 6 messages removed by earlier turns' cuts\n\
         #7 user kept: unchanged prefix, same bytes as the previous window (10 tokens)\n\
         #8 assistant kept: unchanged prefix, same bytes as the previous window (10 tokens)\n\
         #9 user kept: unchanged prefix, same bytes as the previous window (10 tokens)\n\
         #10 assistant kept: unchanged prefix, same bytes as the previous window (10 tokens)\n\
         #11 user kept: unchanged prefix, same bytes as the previous window (10 tokens)\n\
         #12 assistant kept: not in the previous window (10 tokens)\n\
         #13 user kept: not in the previous window (10 tokens)\n"
    );
    assert_eq!(t7.positions, vec![0, 7, 8, 9, 10, 11, 12, 13]);
    assert_eq!(t7.kept_prefix, 6);
    // Turn 8: 90 <= 90 (exactly full): still appended.
    let t8 = s.next(&all[..16]).unwrap();
    assert_eq!(t8.kept_prefix, 8);
    assert_eq!(t8.window_tokens, 100);
    // Turn 9: 110 > 90 -> remove E4 (must), E5 (70 >= 40), E6 (50 >= 40);
    // E7 would leave 30 < 40. Window S, U7 A7 U8 A8 U9 = #0, #13..#17.
    let t9 = s.next(&all[..18]).unwrap();
    assert_eq!(t9.positions, vec![0, 13, 14, 15, 16, 17]);
    let cut = t9.cut.unwrap();
    assert_eq!((cut.first_unit, cut.last_unit), (4, 6));
    // The pinned prompt never moved.
    for w in [&t6, &t7, &t8, &t9] {
        assert_eq!(w.positions[0], 0);
        assert_eq!(w.pinned, 1);
    }
}

#[test]
fn expected_billing_follows_the_markers() {
    let all = chat(6);
    let mut s = session();
    // Turn 1: [S 10, U1 10]; the system prefix (10) is under the 15-token
    // minimum, so one marker at the end (20): everything written.
    let t1 = s.next(&all[..2]).unwrap();
    assert_eq!(t1.breakpoints, vec![2]);
    assert_eq!(
        t1.usage,
        CacheUsage {
            uncached: 0,
            written: 20,
            read: 0
        }
    );
    assert_eq!(t1.cost, 25.0); // 1.25 * 20
    // Turn 2: [S, U1, A1, U2] = 40; markers at the reused prefix (2) and the
    // end (4): reads 20, writes 40 - 20 = 20; cost 0.1 * 20 + 1.25 * 20 = 27.
    let t2 = s.next(&all[..4]).unwrap();
    assert_eq!(t2.breakpoints, vec![2, 4]);
    assert_eq!(
        t2.usage,
        CacheUsage {
            uncached: 0,
            written: 20,
            read: 20
        }
    );
    assert!((t2.cost - 27.0).abs() < 1e-9);
    for end in [6, 8, 10] {
        s.next(&all[..end]).unwrap();
    }
    // Turn 6 cuts: [S, U4, A4, U5, A5, U6] = 60 is a new sequence after the
    // system prompt, which was never cached (10 < 15): all 60 written.
    let t6 = s.next(&all[..12]).unwrap();
    assert_eq!(t6.breakpoints, vec![6]);
    assert_eq!(
        t6.usage,
        CacheUsage {
            uncached: 0,
            written: 60,
            read: 0
        }
    );
}

/// Counts `t` per message, 3 tokens of reply priming per request, and
/// 1,200 tokens for any tool definitions.
struct WithTools;

impl MessageCounter for WithTools {
    fn count_message(&self, m: &Message) -> i64 {
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn count_request(&self, tools: Option<&Value>) -> i64 {
        3 + if tools.is_some() { 1_200 } else { 0 }
    }
    fn describe(&self) -> String {
        "with tools".into()
    }
}

#[test]
fn tool_definitions_are_cached_as_the_front_of_the_prefix() {
    let tools =
        json!([{"name": "grep", "description": "search", "input_schema": {"type": "object"}}]);
    let opts = Trim::anthropic(10_000).counter(WithTools).tools(tools);
    let msgs = vec![
        t(Message::system("Be brief."), 100),
        t(Message::user("Find the bug."), 200),
        t(Message::assistant("Where?"), 50),
        t(Message::user("In main."), 100),
    ];
    // The trim splits the 1,203 tokens of overhead: 1,200 of tools (with
    // tools minus without), 3 of priming.
    let one_off = trim(&msgs[..2], &opts).unwrap();
    assert_eq!(
        (one_off.tokens.overhead, one_off.tokens.tools),
        (1_203, 1_200)
    );
    // Sent on its own, the window gets markers after S (1,200 + 100 = 1,300)
    // and U (1,500): both prefixes reach the minimum only with the tools.
    let profile = CacheProfile::anthropic();
    assert_eq!(one_off.breakpoints(Format::Anthropic, &profile), vec![1, 2]);
    let mut s = CacheSession::new(opts.clone(), CacheProfile::anthropic());
    // Turn 1 sends tools 1,200 | S 100 | U 200, then 3 tokens of priming.
    // Prefix ends: tools 1,200, +S 1,300, +U 1,500 — the pinned end (1,300)
    // and the end (1,500) reach Anthropic's 1,024 minimum, so markers go on
    // S and U (message positions 1 and 2). Nothing is cached yet: 1,500
    // written, the 3 tokens of priming uncached. (Billing the tools uncached
    // would leave 100 and 300 under the minimum: no markers, 1,503 uncached.)
    let t1 = s.next(&msgs[..2]).unwrap();
    assert_eq!(t1.breakpoints, vec![1, 2]);
    assert_eq!(
        t1.usage,
        CacheUsage {
            uncached: 3,
            written: 1_500,
            read: 0
        }
    );
    // Turn 2 appends A 50 and U 100: ends 1,550 and 1,650. Markers: the
    // pinned end (1), the reused prefix (2) and the end (4). It reads the
    // 1,500 written at position 2, writes 1,650 - 1,500 = 150.
    let t2 = s.next(&msgs).unwrap();
    assert_eq!(t2.breakpoints, vec![1, 2, 4]);
    assert_eq!(
        t2.usage,
        CacheUsage {
            uncached: 3,
            written: 150,
            read: 1_500
        }
    );
    // 1,500 + 150 + 3 = 1,653 = overhead 1,203 + messages 450.
    assert_eq!(t2.usage.total(), 1_653);
    // The simulation bills the same requests the same way. A request is
    // what precedes an assistant message, so with a second reply appended
    // the requests are the first 2 messages and the first 4: turns 1 and 2.
    let mut replayed = msgs.clone();
    replayed.push(t(Message::assistant("Fixed."), 10));
    let session = CacheSession::new(opts.clone(), CacheProfile::anthropic());
    let sim = simulate_with(&replayed, &opts, session).unwrap();
    for strategy in [SimStrategy::NewestMessages, SimStrategy::CacheAware] {
        let run = sim.run(strategy).unwrap();
        let usage: Vec<CacheUsage> = run.turns.iter().map(|t| t.usage).collect();
        assert_eq!(usage, vec![t1.usage, t2.usage], "{strategy:?}");
    }
}

#[test]
fn a_new_message_displaces_nothing_until_the_budget_forces_a_cut() {
    // S 10, U1 10, A1 10, U2 10, then a huge tool exchange arrives.
    let mut all = chat(2);
    all.pop(); // ... U2 is the last message (request 2).
    let mut s = session();
    s.next(&all[..2]).unwrap();
    let before = s.next(&all).unwrap().positions;
    assert_eq!(before, vec![0, 1, 2, 3]);
    // A2 calls a tool whose 45-token result makes the conversation
    // 30 + 5 + 45 = 80 <= 90: appended, the prefix untouched.
    all.push(t(Message::assistant_calls([("c1", "grep", "{}")]), 5));
    all.push(t(Message::tool("c1", "big output"), 45));
    all.push(t(Message::assistant("done"), 5));
    let mut req = all.clone();
    req.pop(); // request 3 ends before the assistant's text reply
    let t3 = s.next(&req).unwrap();
    assert_eq!(t3.positions, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(t3.kept_prefix, 4);
    assert!(t3.cut.is_none());
    // U3 (15 tokens) makes it 80 + 5 (reply) + 15 = 100 > 90: now the cut.
    // E1 (20): must, -> 80. E2 = U2 A2 tool A = 10 + 5 + 45 + 5 = 65:
    // 80 - 65 = 15 < 40, stop. Window S, E2, U3 = 10 + 80 = 90 tokens.
    all.push(t(Message::user("next"), 15));
    let t4 = s.next(&all).unwrap();
    assert_eq!(t4.positions, vec![0, 3, 4, 5, 6, 7]);
    assert_eq!(t4.window_tokens, 90);
    let cut = t4.cut.unwrap();
    assert_eq!(
        (cut.first_unit, cut.last_unit, cut.removed_tokens),
        (1, 1, 20)
    );
}

#[test]
fn resumed_sessions_keep_a_window_from_a_state_file() {
    let all = chat(3);
    let mut first = session();
    let w = first.next(&all[..4]).unwrap();
    let state: Vec<Message> = w.messages.iter().map(|m| (*m).clone()).collect();
    let mut resumed = session().resume(state);
    let t = resumed.next(&all[..6]).unwrap();
    assert_eq!(t.kept_prefix, 4);
    // Seeded cache: marks at 4 (reused) and 6: reads 40, writes 60 - 40 = 20.
    assert_eq!(
        t.usage,
        CacheUsage {
            uncached: 0,
            written: 20,
            read: 40
        }
    );
    // An edited system prompt breaks the prefix at once.
    let mut edited = all[..6].to_vec();
    edited[0] = t_sys("Be verbose.");
    let mut s = session().resume(w.messages.iter().map(|m| (*m).clone()).collect());
    assert_eq!(
        s.next(&edited).unwrap().broke,
        Some(PrefixBreak::PinnedChanged)
    );
}

#[test]
fn turns_are_numbered_from_the_caller_or_the_transcript() {
    let all = chat(3);
    let mut first = session();
    let w = first.next(&all[..4]).unwrap();
    assert_eq!(w.turn, 1);
    let state: Vec<Message> = w.messages.iter().map(|m| (*m).clone()).collect();
    // By default a resumed session numbers the resumed window 1.
    let mut resumed = session().resume(state.clone());
    assert_eq!(resumed.next(&all[..6]).unwrap().turn, 2);
    // all[..6] is S U1 A1 U2 A2 U3: two answered requests (A1, A2), so
    // this request is the third; later turns count on from it.
    let n = request_ends(&all[..6]).len() + 1;
    assert_eq!(n, 3);
    let mut numbered = session().resume(state).turn_number(n);
    assert_eq!(numbered.next(&all[..6]).unwrap().turn, 3);
    assert_eq!(numbered.next(&all[..7]).unwrap().turn, 4);
    // Turn numbers are 1-based: 0 counts as 1.
    assert_eq!(session().turn_number(0).next(&all[..2]).unwrap().turn, 1);
}

#[test]
fn a_request_after_the_cache_lifetime_reads_nothing() {
    use std::time::Duration;
    let all = chat(3);
    let run = |s: &mut CacheSession, idle: Option<Duration>| {
        s.next(&all[..4]).unwrap();
        let expired = idle.is_some_and(|d| s.idle(d));
        (expired, s.next(&all[..6]).unwrap().usage)
    };
    // Within the 5-minute lifetime: as in the resumed case, the markers sit
    // at 4 (the previous window's end) and 6: reads 40, writes 60 - 40 = 20.
    let warm = CacheUsage {
        uncached: 0,
        written: 20,
        read: 40,
    };
    assert_eq!(
        run(&mut session(), Some(Duration::from_secs(299))),
        (false, warm)
    );
    assert_eq!(run(&mut session(), None), (false, warm));
    // Six minutes later the entries are gone: the same window, the same
    // markers, nothing read, all 60 tokens up to the last marker written.
    let cold = CacheUsage {
        uncached: 0,
        written: 60,
        read: 0,
    };
    assert_eq!(
        run(&mut session(), Some(Duration::from_secs(360))),
        (true, cold)
    );
    // A profile without a lifetime never expires.
    let mut forever = CacheSession::new(Trim::openai(100).counter(Fixed), profile().lifetime(None))
        .low_water(LowWater::Tokens(50));
    assert_eq!(
        run(&mut forever, Some(Duration::from_secs(86_400))),
        (false, warm)
    );
    // Before the first turn there is nothing cached to lose.
    let mut fresh = session();
    assert!(!fresh.idle(Duration::from_secs(360)));
    assert!(fresh.next(&all[..2]).unwrap().expired.is_none());
    // The expiry is told once: the turn after reads the cache again.
    let mut s = session();
    s.next(&all[..4]).unwrap();
    s.idle(Duration::from_secs(360));
    let cold_turn = s.next(&all[..6]).unwrap();
    let expiry = cold_turn.expired.unwrap();
    assert_eq!(expiry.lifetime, Duration::from_secs(300));
    assert!(cold_turn.to_string().starts_with(
        "turn 2: the cache had expired (6m since the previous request; a prefix lives 5m unused); "
    ));
    assert!(s.next(&all[..7]).unwrap().usage.read > 0);
}

fn t_sys(text: &str) -> Message {
    t(Message::system(text), 10)
}

#[test]
fn invalid_low_water_marks_are_refused_with_the_numbers() {
    let all = chat(1);
    let mut s = session().low_water(LowWater::Tokens(150));
    let e = s.next(&all[..2]).unwrap_err();
    assert_eq!(
        e,
        ChatError::InvalidLowWater {
            low_water: 150,
            max_tokens: 100
        }
    );
    let mut s = session().low_water(LowWater::Fraction(0.0));
    assert!(matches!(
        s.next(&all[..2]).unwrap_err(),
        ChatError::InvalidLowWaterFraction { .. }
    ));
}

#[test]
fn default_low_water_comes_from_the_write_price() {
    // Budget 100, system 10: 90 for the conversation; Anthropic 5 minutes:
    // floor(90 / 2.25) = 40, one hour: floor(90 / 3) = 30, OpenAI: 45.
    assert_eq!(CacheProfile::anthropic().default_low_water(90), 40);
    assert_eq!(CacheProfile::anthropic_1h().default_low_water(90), 30);
    assert_eq!(CacheProfile::openai().default_low_water(90), 45);
    let mut s = CacheSession::new(Trim::openai(100).counter(Fixed), profile());
    let one = chat(1);
    let w = s.next(&one[..2]).unwrap();
    assert_eq!(w.low_water, 50); // 10 pinned + 40
}

fn one_block(tokens: i64) -> Block {
    Block {
        hash: tokens as u64,
        tokens,
        blocks: 1,
    }
}

#[test]
fn breakpoints_stay_within_the_rules() {
    // System 2,000 tokens, then 49 one-block messages of 100 tokens.
    let mut w = vec![one_block(2_000)];
    w.extend((0..49).map(|i| Block {
        hash: 100 + i,
        tokens: 100,
        blocks: 1,
    }));
    let p = CacheProfile::anthropic();
    // Wanted: the end (50), the reused prefix (10), the system (1); from 50
    // the lookback sees 20 blocks back: positions 30..50, so the furthest
    // marker it still reaches is 30 (50 - 20), the fourth.
    let b = plan_breakpoints(&w, 1, Some(10), &p);
    assert_eq!(b, vec![1, 10, 30, 50]);
    assert!(b.len() <= p.max_breakpoints);
    // A 500-token system prompt is under the 1,024 minimum: no marker on it,
    // nor on the prefix of 5 messages (500 + 400 = 900 < 1,024).
    let mut short = vec![one_block(500)];
    short.extend((0..9).map(|i| Block {
        hash: 200 + i,
        tokens: 100,
        blocks: 1,
    }));
    assert_eq!(plan_breakpoints(&short, 1, Some(5), &p), vec![10]);
    // Implicit caches take no markers.
    assert!(plan_breakpoints(&w, 1, Some(10), &CacheProfile::openai()).is_empty());
}

#[test]
fn lookback_limits_what_a_marker_finds() {
    let p = CacheProfile::anthropic();
    let mut cache = PromptCache::new(p);
    let mut w = vec![one_block(2_000)];
    cache.request(&w, &[1], 0);
    // 25 more one-block messages and one marker at the end: the entry at 1
    // is 25 blocks back, beyond the 20-block lookback: nothing read, all
    // 2,000 + 2,500 = 4,500 written.
    w.extend((0..25).map(|i| Block {
        hash: 300 + i,
        tokens: 100,
        blocks: 1,
    }));
    let u = cache.request(&w, &[26], 0);
    assert_eq!(
        u,
        CacheUsage {
            uncached: 0,
            written: 4_500,
            read: 0
        }
    );
}

#[test]
fn openai_reads_in_128_token_steps() {
    let mut cache = PromptCache::new(CacheProfile::openai());
    let a = one_block(1_100);
    let b = Block {
        hash: 7,
        tokens: 300,
        blocks: 1,
    };
    assert_eq!(cache.request(&[a], &[], 3).read, 0);
    // Shared 1,100: 1,024 + 128 * floor(76 / 128) = 1,024 read; the rest
    // 1,100 + 300 - 1,024 = 376, plus 3 of overhead, uncached.
    let u = cache.request(&[a, b], &[], 3);
    assert_eq!(
        u,
        CacheUsage {
            uncached: 379,
            written: 0,
            read: 1_024
        }
    );
}

#[test]
fn markers_are_written_into_anthropic_requests() {
    let doc = Transcript::parse(
        r#"{"model": "claude", "system": "Rules.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"}]}"#,
    )
    .unwrap();
    assert_eq!(doc.format(), Format::Anthropic);
    // Window messages: system #0, a #1, b #2, c #3; markers after the
    // system (1) and at the end (4). The input's own marker on "a" goes.
    let v = apply_breakpoints(&doc, &[1, 4], &CacheProfile::anthropic_1h());
    assert_eq!(v["system"][0]["text"], "Rules.");
    assert_eq!(
        v["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert!(
        v["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        v["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(v["messages"][2]["content"][0]["text"], "c");
    let markers = v.to_string().matches("cache_control").count();
    assert_eq!(markers, 2);
}

/// An Anthropic body with the caller's markers everywhere Anthropic reads
/// them (7 in all, 3 more than Anthropic accepts): the top-level automatic
/// marker, the second tool, the system block, message 0's text, the text
/// nested in message 2's tool result, message 4's text and the text inside
/// message 4's document. Message 1's `tool_use` input has a key named
/// `cache_control`: the caller's data, not a marker.
fn marked_body() -> Transcript {
    let mark = json!({"type": "ephemeral"});
    let body = json!({
        "model": "claude",
        "cache_control": mark,
        "tools": [
            {"name": "grep", "input_schema": {"type": "object"}},
            {"name": "read", "input_schema": {"type": "object"}, "cache_control": mark}
        ],
        "system": [{"type": "text", "text": "Rules.", "cache_control": mark}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q1", "cache_control": mark}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "t1", "name": "grep",
                 "input": {"cache_control": "not a marker"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "hit", "cache_control": mark}]},
                {"type": "text", "text": "thanks"}]},
            {"role": "assistant", "content": "a2"},
            {"role": "user", "content": [
                {"type": "text", "text": "q3", "cache_control": mark},
                {"type": "document", "source": {"type": "content", "content": [
                    {"type": "text", "text": "page", "cache_control": mark}]}}]}
        ]
    });
    Transcript::parse(&body.to_string()).unwrap()
}

#[test]
fn the_callers_markers_are_found_wherever_they_sit() {
    let doc = marked_body();
    assert_eq!(
        cache_marker_paths(&doc.to_value()),
        [
            "",
            "/tools/1",
            "/system/0",
            "/messages/0/content/0",
            "/messages/2/content/0/content/0",
            "/messages/4/content/0",
            "/messages/4/content/1/source/content/0",
        ]
    );
    assert_eq!(count_cache_markers(&doc.to_value()), 7);
}

#[test]
fn the_planned_markers_replace_every_marker_of_the_caller() {
    let doc = marked_body();
    // Window messages: the system prompt (window #0), then messages 0-4
    // (window #1-#5). Markers after the system (1), after message 1 (2
    // messages + the system: 3) and at the end (6).
    let v = apply_breakpoints(&doc, &[1, 3, 6], &CacheProfile::anthropic());
    // 1: the last system block; 3: message 1's last block (the tool_use);
    // 6: message 4's last block (the document). The caller's 7 are gone.
    assert_eq!(
        cache_marker_paths(&v),
        [
            "/system/0",
            "/messages/1/content/1",
            "/messages/4/content/1"
        ]
    );
    assert_eq!(
        v["messages"][1]["content"][1]["input"]["cache_control"],
        "not a marker"
    );
    assert_eq!(v["messages"][2]["content"][0]["content"][0]["text"], "hit");
    assert!(v.get("cache_control").is_none());
    assert!(v["tools"][1].get("cache_control").is_none());

    // Six breakpoints asked: at most 4 are written, the longest prefixes:
    // 6, 5, 4 and 3. 6: message 4's document; 5: message 3's string "a2",
    // now one text block; 4: message 2's last block ("thanks"); 3: message
    // 1's tool_use.
    let v = apply_breakpoints(&doc, &[1, 2, 3, 4, 5, 6], &CacheProfile::anthropic());
    assert_eq!(
        cache_marker_paths(&v),
        [
            "/messages/1/content/1",
            "/messages/2/content/1",
            "/messages/3/content/0",
            "/messages/4/content/1",
        ]
    );
    assert_eq!(v["messages"][3]["content"][0]["text"], "a2");
    assert!(count_cache_markers(&v) <= MAX_CACHE_MARKERS);
}

#[test]
fn simulation_bills_the_three_strategies() {
    let all = chat(9);
    let sim = simulate_with(&all, &Trim::openai(100).counter(Fixed), session()).unwrap();
    let aware = sim.run(SimStrategy::CacheAware).unwrap();
    let newest = sim.run(SimStrategy::NewestMessages).unwrap();
    assert_eq!(aware.turns.len(), 9);
    // Turns 1-5 are identical for every strategy (everything fits).
    for k in 0..5 {
        assert_eq!(aware.turns[k].usage, newest.turns[k].usage);
    }
    // Turn 6, newest messages: room 90 after the system: U6 A5 U5 A4 U4
    // A3 U3 A2 U2 (90) fit, A1 does not; starts on U2. Window 100 tokens,
    // sharing only S with turn 5, whose system prefix was never cached:
    // all 100 written.
    assert_eq!(newest.turns[5].window_tokens, 100);
    assert_eq!(
        newest.turns[5].usage,
        CacheUsage {
            uncached: 0,
            written: 100,
            read: 0
        }
    );
    // Turn 7 the newest window moves again (drops U2 A2): nothing reused.
    assert_eq!(newest.turns[6].usage.read, 0);
    // The cache-aware turn 7 reads its whole turn-6 window (60 tokens).
    assert_eq!(aware.turns[6].usage.read, 60);
    assert!(aware.cost < newest.cost);
}

/// S 20, U1 10 / A1 10, U2 120 / A2 10, U3 10 / A3 10. Requests end before
/// A1 (#2), A2 (#4) and A3 (#6): request 1 holds the first 2 messages,
/// request 2 the first 4 (its newest message U2 alone is over the budget),
/// request 3 the first 6.
fn chat_with_a_long_question() -> Vec<Message> {
    let mut all = vec![
        t(Message::system("Be brief."), 20),
        t(Message::user("question 1"), 10),
        t(Message::assistant("answer 1"), 10),
    ];
    all.push(t(Message::user("a long question"), 120));
    all.push(t(Message::assistant("answer 2"), 10));
    all.push(t(Message::user("question 3"), 10));
    all.push(t(Message::assistant("answer 3"), 10));
    all
}

#[test]
fn a_request_that_cannot_be_windowed_is_reported_and_the_replay_goes_on() {
    let all = chat_with_a_long_question();
    assert_eq!(request_ends(&all), vec![2, 4, 6]);
    let sim = simulate_with(&all, &Trim::openai(100).counter(Fixed), session()).unwrap();
    // Budget 100, no request overhead: 100 - 20 (S) = 80 tokens for the
    // conversation.
    for strategy in SimStrategy::ALL {
        let run = sim.run(strategy).unwrap();
        assert_eq!(run.turns.len(), 3, "{strategy}");
        // Request 1: S U1, 20 + 10 = 30 tokens. Markers (15-token minimum):
        // the pinned end at 1 (20 >= 15) and the end at 2 (30); nothing
        // cached yet, so all 30 written: cost 1.25 x 30 = 37.5.
        let r1 = &run.turns[0];
        assert!(r1.is_sent(), "{strategy}");
        assert_eq!(r1.window_tokens, 30, "{strategy}");
        assert_eq!(
            r1.usage,
            CacheUsage {
                uncached: 0,
                written: 30,
                read: 0
            },
            "{strategy}"
        );
        assert_eq!(r1.cost, 37.5, "{strategy}");
        // Request 2: U2 alone (120) is over the 80 left: every strategy
        // fails it the same way, nothing is sent or billed.
        let r2 = &run.turns[1];
        assert!(!r2.is_sent(), "{strategy}");
        match &r2.failure {
            Some(ChatError::NothingFits {
                position,
                label,
                unit_tokens,
                available_tokens,
                ..
            }) => {
                assert_eq!(
                    (*position, label.as_str(), *unit_tokens, *available_tokens),
                    (3, "user", 120, 80),
                    "{strategy}"
                );
            }
            other => panic!("{strategy}: expected NothingFits, got {other:?}"),
        }
        assert_eq!(
            (r2.turn, r2.end, r2.window_messages, r2.window_tokens),
            (2, 4, 0, 0)
        );
        assert_eq!(r2.usage, CacheUsage::default());
        assert_eq!(r2.cost, 0.0);
        // The history is still counted: 20 + 10 + 10 + 120 = 160.
        assert_eq!(r2.history_tokens, 160);
        match r2.error() {
            Some(ChatError::Request {
                request, messages, ..
            }) => assert_eq!((request, messages), (2, 4)),
            other => panic!("{strategy}: expected ChatError::Request, got {other:?}"),
        }
        // Request 3: U3 10 and A2 10 fit the 80, U2 does not; the window
        // starts on a user message: S U3, 20 + 10 = 30 tokens (the
        // cache-aware session cuts exchanges 1 and 2 down to the same).
        // It repeats S from request 1, the last request sent: markers at 1
        // (the reused prefix and the pinned end) and 2; the marker at 1
        // reads request 1's entry for S (20), the end writes U3 (10):
        // cost 0.1 x 20 + 1.25 x 10 = 2 + 12.5 = 14.5.
        let r3 = &run.turns[2];
        assert!(r3.is_sent(), "{strategy}");
        assert_eq!(r3.window_tokens, 30, "{strategy}");
        assert_eq!(
            r3.usage,
            CacheUsage {
                uncached: 0,
                written: 10,
                read: 20
            },
            "{strategy}"
        );
        assert_eq!(r3.cost, 14.5, "{strategy}");
        // Totals: requests 1 and 3 only. Written 30 + 10 = 40, read 20;
        // cost 37.5 + 14.5 = 52; one failure.
        assert_eq!(run.failed, 1, "{strategy}");
        assert_eq!(run.failures().map(|t| t.turn).collect::<Vec<_>>(), [2]);
        assert_eq!(
            run.total,
            CacheUsage {
                uncached: 0,
                written: 40,
                read: 20
            },
            "{strategy}"
        );
        assert_eq!(run.cost, 52.0, "{strategy}");
    }
    assert_eq!(sim.failed(), 3);
    // The session numbers request 3 as turn 3 (the failed request took
    // number 2), and cuts: 20 + 10 + 10 + 120 + 10 + 10 = 180 over 100.
    let aware = sim.run(SimStrategy::CacheAware).unwrap();
    let note = aware.turns[2].note.as_deref().unwrap_or_default();
    assert!(
        note.starts_with("turn 3: window reached 180 of 100; "),
        "{note}"
    );
    // The totals table counts the failures per strategy.
    let table = sim.totals_table();
    assert!(
        table.lines().next().unwrap().ends_with(" failed"),
        "{table}"
    );
    for line in table.lines().skip(1) {
        assert!(line.ends_with(" 1"), "{table}");
    }
}

#[test]
fn a_failed_turn_keeps_the_previous_window() {
    // Turn 1: S U1 (20 tokens). Then U2 of 120 tokens is over the 90 left
    // after S: the turn fails and nothing is sent. The caller shortens U2
    // to 10 tokens and asks again: the session still holds turn 1's
    // window, keeps it (S U1 A1 = 30 tokens, read from the cache where
    // turn 1 wrote 20: S U1) and appends U2.
    let mut s = session();
    let mut all = chat(1);
    let first = all[..2].to_vec();
    assert_eq!(s.next(&first).unwrap().window_tokens, 20);
    all.push(t(Message::user("a long question"), 120));
    assert!(matches!(
        s.next(&all),
        Err(ChatError::NothingFits {
            unit_tokens: 120,
            available_tokens: 90,
            ..
        })
    ));
    all[3] = t(Message::user("a short question"), 10);
    let turn = s.next(&all).unwrap();
    assert_eq!(turn.turn, 2);
    // S U1 kept byte for byte: 2 messages, 10 + 10 = 20 tokens.
    assert_eq!((turn.kept_prefix, turn.kept_prefix_tokens), (2, 20));
    assert_eq!(turn.usage.read, 20);
    assert!(
        turn.to_string()
            .starts_with("turn 2: kept the previous window (2 messages), appended 2"),
        "{turn}"
    );
}

/// S 10, U1 10, A1 a call of 200 tokens, its result R1 10, A1' 10 (the
/// answer). Requests end before the call (#2) and the answer (#4): the
/// second holds the first 4 messages and ends with R1.
fn chat_with_a_long_call() -> Vec<Message> {
    let parse = |j: Value| cupel_chat::message_from_value(j, Format::OpenAi, "m").unwrap();
    vec![
        t(Message::system("Be brief."), 10),
        t(Message::user("question 1"), 10),
        parse(
            json!({"role": "assistant", "content": null, "t": 200, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        ),
        parse(json!({"role": "tool", "tool_call_id": "call_1", "content": "r", "t": 10})),
        t(Message::assistant("answer 2"), 10),
    ]
}

#[test]
fn newest_messages_fails_a_window_without_a_user_message() {
    let all = chat_with_a_long_call();
    assert_eq!(request_ends(&all), vec![2, 4]);
    let sim = simulate_with(&all, &Trim::openai(100).counter(Fixed), session()).unwrap();
    let newest = sim.run(SimStrategy::NewestMessages).unwrap();
    // Newest messages, 90 after S: R1 (10) fits, the call (200) does not;
    // R1 is dropped to start on a user message, and nothing is left. Of
    // the 3 conversation messages (U1, the call, R1), 1 went for the start
    // rule and 2 for the budget.
    assert_eq!(
        newest.turns[1].failure,
        Some(ChatError::NoConversation {
            messages: 3,
            orphans: 0,
            provider_rules: 1,
            budget: 2
        })
    );
    // The chat trim keeps the call with its result: 200 + 10 = 210 > 90,
    // but U1 is the only user message and a tool call follows it (a
    // one-task agent loop): the task is pinned, so the window is S and U1
    // (10 + 10 = 20 of 100), not a failure.
    let chat = sim.run(SimStrategy::ChatTrim).unwrap();
    assert_eq!(chat.turns[1].failure, None);
    assert_eq!(
        (chat.turns[1].window_messages, chat.turns[1].window_tokens),
        (2, 20)
    );
    assert_eq!((newest.failed, chat.failed), (1, 0));
}

#[test]
fn pinned_prompts_over_the_budget_fail_every_request() {
    // S 10 with a budget of 5: no strategy can send anything.
    let all = chat(2);
    let opts = Trim::openai(5).counter(Fixed);
    let s = CacheSession::new(opts.clone(), profile());
    let sim = simulate_with(&all, &opts, s).unwrap();
    for run in &sim.runs {
        assert_eq!(run.failed, 2, "{}", run.strategy);
        assert_eq!(run.cost, 0.0);
        assert_eq!(
            run.turns[0].failure,
            Some(ChatError::PinnedOverBudget {
                pinned_tokens: 10,
                overhead_tokens: 0,
                total: 10,
                max_tokens: 5
            }),
            "{}",
            run.strategy
        );
    }
}

/// S 10, U1 10, A1 call 10 + result 10, A1 text 10, U2 10, A2 30, U3 20:
/// the request before A3. The conversation is 10 + 20 + 10 + 10 + 30 + 20
/// = 100 > 90.
fn tool_chat() -> Vec<Message> {
    vec![
        t(Message::system("Be brief."), 10),
        t(Message::user("u1"), 10),
        t(Message::assistant_calls([("c1", "grep", "{}")]), 10),
        t(Message::tool("c1", "r1"), 10),
        t(Message::assistant("a1"), 10),
        t(Message::user("u2"), 10),
        t(Message::assistant("a2"), 30),
        t(Message::user("u3"), 20),
    ]
}

#[test]
fn exchange_cuts_keep_whole_exchanges() {
    // Low-water 40 -> 30 for the conversation. Exchanges: E1 = #1..#4 (40),
    // E2 = #5 #6 (40), E3 = #7 (20). Remove E1 (100 > 90, must) -> 60; E2
    // would leave 20 < 30: stop. Window S, U2, A2, U3 = 10 + 60 = 70.
    let all = tool_chat();
    let mut s = session().low_water(LowWater::Tokens(40));
    let w = s.next(&all).unwrap();
    assert_eq!(w.positions, vec![0, 5, 6, 7]);
    assert_eq!(w.window_tokens, 70);
}

#[test]
fn message_cuts_still_start_on_a_user_message() {
    // Units of one message (the call with its result is one): U1 10, call
    // group 20, A1 10, U2 10, A2 30, U3 20. Remove U1 (must) -> 90, the
    // group (70 >= 30) -> 70, A1 (60 >= 30) -> 60, U2 (50 >= 30) -> 50; A2
    // would leave 20 < 30: stop at A2. A2 cannot start the conversation, so
    // the chat trim removes it too: S, U3 = 30 tokens (under the mark: the
    // price of cutting by message).
    let all = tool_chat();
    let mut s = session()
        .low_water(LowWater::Tokens(40))
        .granularity(cupel_chat::Granularity::Message);
    let w = s.next(&all).unwrap();
    assert_eq!(w.positions, vec![0, 7]);
    let cut = w.cut.unwrap();
    assert_eq!((cut.removed_messages, cut.removed_tokens), (6, 80));
}

#[test]
fn an_edited_message_breaks_the_prefix_where_it_differs() {
    let all = chat(3);
    let mut s = session();
    s.next(&all[..4]).unwrap(); // S U1 A1 U2
    let mut edited = all[..6].to_vec();
    edited[3] = t(Message::user("question 2, rephrased"), 10);
    let w = s.next(&edited).unwrap();
    // S, U1, A1 are kept; the window's message #3 differs.
    assert_eq!(w.broke, Some(PrefixBreak::Diverged { at: 3 }));
    assert_eq!(w.kept_prefix, 3);
    assert_eq!(w.positions, vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn gemini_caches_from_2048_tokens() {
    let g = CacheProfile::gemini();
    assert_eq!(g.cacheable(2_047), 0);
    assert_eq!(g.cacheable(3_001), 3_001); // step 1: any length above
    // 1,000 uncached + 0.1 * 3,000 read = 1,300.
    let u = CacheUsage {
        uncached: 1_000,
        written: 0,
        read: 3_000,
    };
    assert!((g.cost(&u) - 1_300.0).abs() < 1e-9);
}

/// One token per message plus one per word of its text.
struct Words;

impl MessageCounter for Words {
    fn count_message(&self, m: &Message) -> i64 {
        1 + m.text().split_whitespace().count() as i64
    }
    fn describe(&self) -> String {
        "words".into()
    }
}

/// `tag` and then `n - 2` more words: `n` tokens under [`Words`].
fn said(tag: &str, n: usize) -> String {
    format!("{tag} {}", "w ".repeat(n - 2))
}

/// S (10); E1: U1 A1 (10 + 10); E2: U2 (10), a call C2 (1: no text), its
/// result R2 (40), A2 (10); E3: U3 A3; E4: U4 A4; E5: U5 A5; U6 — #0..#13.
fn aged_chat() -> Vec<Message> {
    let mut v = vec![Message::system(said("system", 10))];
    v.push(Message::user(said("u1", 10)));
    v.push(Message::assistant(said("a1", 10)));
    v.push(Message::user(said("u2", 10)));
    v.push(Message::assistant_calls([("call_2", "grep", "{}")]));
    v.push(Message::tool("call_2", said("r2", 40)));
    v.push(Message::assistant(said("a2", 10)));
    for k in 3..=5 {
        v.push(Message::user(said(&format!("u{k}"), 10)));
        v.push(Message::assistant(said(&format!("a{k}"), 10)));
    }
    v.push(Message::user(said("u6", 10)));
    v
}

#[test]
fn a_cut_shortens_old_tool_results_down_to_the_mark() {
    let all = aged_chat();
    assert_eq!(Words.count_message(&all[4]), 1);
    assert_eq!(Words.count_message(&all[5]), 40);
    // Budget 110 (100 after the system prompt), mark 50 (40 after it);
    // results with a user message after them age, to the default
    // placeholder "[tool result of 40 tokens omitted]": 1 + 6 = 7 tokens.
    let opts = Trim::openai(110).counter(Words);
    let aging = AgeToolResults::new(1);
    let make = |aged: bool| {
        let o = if aged {
            opts.clone().age_tool_results(aging.clone())
        } else {
            opts.clone()
        };
        CacheSession::new(o, profile()).low_water(LowWater::Tokens(50))
    };
    for aged in [false, true] {
        let mut s = make(aged);
        // Turn 1: S E1 E2 U3 = #0..#7: 20 + 61 + 10 = 91 <= 100, all in.
        let t1 = s.next(&all[..8]).unwrap();
        assert_eq!(t1.window_tokens, 101);
        assert!(
            t1.shortened.is_empty(),
            "nothing is shortened while it fits"
        );
        // Turn 2 adds A3 U4: 111 > 100. E1 must go (111 -> 91); E2 (61)
        // may not (91 - 61 = 30 < 40): the cut stops at exchange 2.
        let t2 = s.next(&all[..10]).unwrap();
        assert_eq!(t2.positions, vec![0, 3, 4, 5, 6, 7, 8, 9]);
        let cut = t2.cut.unwrap();
        assert_eq!((cut.removed_messages, cut.removed_tokens), (2, 20));
        assert_eq!((cut.front_unit, cut.front_reason), (2, CutFront::Mark));
        if !aged {
            // Without ageing the window stays at 10 + 91 = 101, 51 above
            // the mark.
            assert_eq!(t2.window_tokens, 101);
            assert_eq!((cut.shortened, cut.front_unit_tokens), (0, 61));
            continue;
        }
        // With ageing, R2 (two user messages after it) goes in as its
        // placeholder: 91 - (40 - 7) = 58 >= 40, so the window is 68.
        assert_eq!(t2.window_tokens, 68);
        assert!(t2.window_tokens >= t2.low_water);
        assert_eq!((cut.shortened, cut.shortened_saved), (1, 33));
        assert_eq!(cut.front_unit_tokens, 10 + 1 + 7 + 10);
        assert_eq!(
            t2.shortened[&5].text(),
            "[tool result of 40 tokens omitted]"
        );
        let sent = t2.cloned_messages();
        assert_eq!(sent[3].text(), "[tool result of 40 tokens omitted]");
        assert_eq!(sent[3].tool_call_id.as_deref(), Some("call_2"));
        assert_eq!(t2.rows[5].sent_tokens, Some(7));
        assert!(
            t2.explain().starts_with(
                "turn 2: window reached 121 of 110; removed exchange 1 (20 tokens) and shortened \
                 1 old tool result by 33 tokens to 68 tokens (low-water mark 50); exchange 2 \
                 (28 tokens) stays: without it the window would fall under the mark; 68 of 110"
            ),
            "{}",
            t2.explain()
        );
        // 68 - 28 = 40 < 50: the reason holds.
        assert!(t2.window_tokens - cut.front_unit_tokens < t2.low_water);

        // Turn 3 adds A4 U5: 58 + 20 = 78 <= 100: appended after the
        // shortened prefix, which stays byte for byte (8 messages).
        let t3 = s.next(&all[..12]).unwrap();
        assert!(t3.cut.is_none());
        assert_eq!(t3.kept_prefix, 8);
        assert_eq!(t3.window_tokens, 10 + 58 + 20);
        assert_eq!(t3.rows[5].status, CacheStatus::Prefix);
        assert_eq!(t3.rows[5].sent_tokens, Some(7));
        assert_eq!(t3.cloned_messages()[..8], sent[..]);

        // A session resumed from that window (as `cupel chat --state`
        // does) recognises the shortened result and keeps all 10 messages;
        // A5 U6 are appended: 78 + 20 = 98 <= 100.
        let mut resumed = make(true).resume(t3.cloned_messages());
        let t4 = resumed.next(&all[..14]).unwrap();
        assert_eq!(t4.broke, None, "{}", t4.explain());
        assert_eq!(t4.kept_prefix, 10);
        assert_eq!(t4.window_tokens, 10 + 98);
        assert_eq!(t4.shortened.keys().copied().collect::<Vec<_>>(), vec![5]);
    }
}
