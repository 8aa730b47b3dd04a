//! The recall window (`Trim::recall`): hand-derived cases (which turns are
//! recalled, with the BM25 arithmetic), placement per provider, typed
//! errors, and a property test over random transcripts.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    ChatError, Decision, Format, Granularity, Message, MessageCounter, RecallOptions, RecallSkip,
    Role, Transcript, Trim, trim, trim_transcript,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Tokens = the `t` field when a message has one, else the words of its
/// text (what the recall's context message is counted by): small numbers
/// the arithmetic below can follow. No request overhead.
struct Words;

impl MessageCounter for Words {
    fn count_message(&self, m: &Message) -> i64 {
        match m.extra.get("t").and_then(Value::as_i64) {
            Some(t) => t,
            None => m.text().split_whitespace().count() as i64,
        }
    }
    fn describe(&self) -> String {
        "words".into()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-5
}

/// The transcript of the first hand-derived case.
fn travel() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("alpha beta gamma delta epsilon zeta eta theta iota kappa"),
        Message::assistant("lambda"),
        Message::user("tokyo flight booked"),
        Message::assistant("paris hotel"),
        Message::user("tokyo tokyo ramen"),
        Message::assistant("cats"),
        Message::user("one two three four five six seven eight"),
        Message::assistant("nine ten eleven twelve"),
        Message::user("tokyo flight when"),
    ]
}

/// Which turns are recalled, derived by hand.
///
/// Tokens (words): #0 2 (pinned); #1 10, #2 1, #3 3, #4 2, #5 3, #6 1,
/// #7 8, #8 4, #9 3: 35 of conversation. Budget 32, overhead 0: the
/// conversation may spend 32 - 2 = 30, so the newest-turns window alone
/// would drop the oldest (35 > 30) and recall goes ahead.
///
/// Newest share 0.5: floor(30 * 0.5) = 15. Newest first: #9 3, #8 4 (7),
/// #7 8 (15 <= 15); #6 (1) is over: the newest turns are #7..#9, 15
/// tokens, starting with a user message. The older units (one message
/// each) are #1..#6, as lines `role: text` (no dates, no names):
///
/// ```text
/// c1 "user: alpha ... kappa"   terms user + 10            dl 11
/// c2 "assistant: lambda"       assist, lambda             dl 2
/// c3 "user: tokyo flight booked" user, tokyo, flight, book dl 4
/// c4 "assistant: paris hotel"  assist, pari, hotel        dl 3
/// c5 "user: tokyo tokyo ramen" user, tokyo, tokyo, ramen  dl 4
/// c6 "assistant: cats"         assist, cat                dl 2
/// ```
///
/// N = 6, avgdl = 26 / 6 = 4.3333. Query (the newest user message) "tokyo
/// flight when": terms tokyo (in 2 units), flight (in 1); "when" is a stop
/// word.
/// IDF(tokyo)  = ln((6 - 2 + 0.5) / (2 + 0.5) + 1) = ln 2.8    = 1.029619
/// IDF(flight) = ln((6 - 1 + 0.5) / (1 + 0.5) + 1) = ln 4.6667 = 1.540445
/// norm(dl 4)  = 1.2 (0.25 + 0.75 * 4 / 4.3333)   = 1.130769
/// raw(c3) = (1.029619 + 1.540445) * 2.2 / (1 + 1.130769)  = 2.653568
/// raw(c5) = 1.029619 * 2 * 2.2 / (2 + 1.130769)           = 1.447032
/// Neighbour lift 0.5: c2 = c4 = 0.5 * raw(c3) = 1.326784, c6 = 0.5 *
/// raw(c5) = 0.723516, c1 = 0 (its neighbour c2 has raw 0).
/// Normalised by 2.653568: c3 1, c5 0.545312, c4 = c2 = 0.5, c6 0.272656, c1 0.
///
/// Room: 30 - 15 = 15. The header line ("Earlier in this conversation
/// (recalled for relevance):") is 7 words: 8 left. Best first, ties to
/// the newer: c3 (4 words as a line) -> 4 left; c5 (4) -> 0 left; c4 (3),
/// c2 (2), c6 (2) do not fit 0; c1 is not relevant.
/// The message: 7 + 4 + 4 = 15 words; the window 2 + 15 + 15 = 32 <= 32.
#[test]
fn which_turns_are_recalled_by_hand() {
    let messages = travel();
    let opts = Trim::openai(32).counter(Words).recall(RecallOptions::new());
    let out = trim(&messages, &opts).unwrap();
    let recall = out.recall.as_ref().unwrap();
    assert_eq!(recall.query, "tokyo flight when");
    assert_eq!(recall.newest_budget, 15);
    assert_eq!(recall.positions, vec![3, 5]);
    assert_eq!(recall.candidates, 6);
    assert_eq!(recall.tokens, 15);
    assert_eq!(recall.at, 1);
    assert_eq!(out.positions, vec![0, 7, 8, 9]);
    assert_eq!(out.tokens.window, 32);
    assert_eq!(out.tokens.recalled, 15);
    let text = recall.message.as_ref().unwrap().text();
    assert_eq!(
        text,
        "Earlier in this conversation (recalled for relevance):\n\
         user: tokyo flight booked\n\
         user: tokyo tokyo ramen"
    );
    let d = |i: usize| out.rows[i].decision.clone();
    match d(3) {
        Decision::Recalled {
            relevance,
            unit_tokens,
        } => {
            assert_eq!(relevance.score, 1.0);
            assert_eq!(relevance.terms, ["tokyo", "flight"]);
            assert_eq!(unit_tokens, 4);
        }
        other => panic!("{other:?}"),
    }
    match d(5) {
        Decision::Recalled { relevance, .. } => {
            assert!(close(relevance.score, 1.447032 / 2.653568), "{relevance}");
            assert!(close(relevance.score, 0.545312), "{relevance}");
            assert_eq!(relevance.terms, ["tokyo"]);
        }
        other => panic!("{other:?}"),
    }
    for (i, score) in [(2, 0.5), (4, 0.5), (6, 0.272656)] {
        match d(i) {
            Decision::NotRecalled {
                relevance,
                available_tokens,
                ..
            } => {
                assert!(close(relevance.score, score), "#{i} {relevance}");
                assert!(
                    relevance.terms.is_empty(),
                    "#{i} lifted by a neighbour only"
                );
                assert_eq!(available_tokens, 0, "#{i}");
            }
            other => panic!("#{i} {other:?}"),
        }
    }
    assert!(matches!(d(1), Decision::NotRecalled { ref relevance, .. } if relevance.score == 0.0));
    // The rows say what was recalled and why.
    assert_eq!(
        out.rows[3].to_string(),
        "#3 user recalled into the context message (relevance 1.00: matched tokyo, flight; 4 tokens as text)"
    );
    assert_eq!(
        out.rows[4].to_string(),
        "#4 assistant dropped: older than the newest turns; relevance 0.50, through a neighbour, but its text needs 3 tokens, 0 left for recall"
    );
    // Sent: the system prompt, the context message (OpenAI: a system
    // message), then the newest turns.
    let sent = out.cloned_messages();
    assert_eq!(sent.len(), 5);
    assert_eq!(sent[1].role, Role::System);
    assert_eq!(sent[1].text(), text);
    assert_eq!(sent[2].text(), messages[7].text());
    // The report holds the recalled messages as included, by relevance.
    assert_eq!(out.report.included.len(), 6);
}

/// An explicit query wins over the newest user message: "ramen" is only in
/// c5, so c5 scores 1 and c4 and c6 (its neighbours) 0.5: of the 8 words
/// left after the header, c5 (4 words) leaves 4, c6 (2, the newer of the
/// tie) leaves 2, and c4 (3) does not fit.
#[test]
fn an_explicit_query_wins() {
    let opts = Trim::openai(32)
        .counter(Words)
        .recall(RecallOptions::new().query("Ramen?"));
    let messages = travel();
    let out = trim(&messages, &opts).unwrap();
    assert_eq!(out.recall.as_ref().unwrap().positions, vec![5, 6]);
    // Without the lift only c5 is relevant.
    let opts = Trim::openai(32)
        .counter(Words)
        .recall(RecallOptions::new().query("ramen").neighbours(0.0));
    let out = trim(&messages, &opts).unwrap();
    assert_eq!(out.recall.as_ref().unwrap().positions, vec![5]);
}

/// Nothing to recall: the window is the newest-turns window of the whole
/// budget, and the recall says why.
#[test]
fn without_anything_to_recall_the_window_is_the_plain_trim() {
    let messages = travel();
    let plain = trim(&messages, &Trim::openai(32).counter(Words)).unwrap();
    for (query, why) in [
        ("the of and", RecallSkip::NoQueryTerms),
        ("zebra", RecallSkip::NothingRelevant),
    ] {
        let opts = Trim::openai(32)
            .counter(Words)
            .recall(RecallOptions::new().query(query));
        let out = trim(&messages, &opts).unwrap();
        assert_eq!(out.positions, plain.positions, "{query}");
        assert_eq!(out.recall.as_ref().unwrap().skipped, Some(why));
        assert!(out.recall_message().is_none());
    }
    // Everything fits (35 + 2 <= 40): nothing older is left out.
    let out = trim(
        &messages,
        &Trim::openai(40).counter(Words).recall(RecallOptions::new()),
    )
    .unwrap();
    assert_eq!(out.positions.len(), messages.len());
    assert_eq!(
        out.recall.as_ref().unwrap().skipped,
        Some(RecallSkip::NothingOlder)
    );
}

/// A tool group is recalled whole, and in an Anthropic body the context
/// message is a user text block first in `messages` (the system prompt
/// stays top-level, untouched).
#[test]
fn anthropic_tool_group_recalled_whole_after_the_system_prompt() {
    let doc = Transcript::parse(
        &json!({
            "model": "claude",
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "find the tokyo booking", "t": 3},
                {"role": "assistant", "t": 4, "content": [
                    {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "tokyo"}}]},
                {"role": "user", "t": 6, "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "seat 32A on NH 204"}]},
                {"role": "assistant", "content": "found it", "t": 2},
                {"role": "user", "content": "filler one two three", "t": 4},
                {"role": "assistant", "content": "filler four five six", "t": 4},
                {"role": "user", "content": "which seat on the tokyo flight", "t": 6}
            ]
        })
        .to_string(),
    )
    .unwrap();
    // Conversation: 3 + 4 + 6 + 2 + 4 + 4 + 6 = 29; system "Be brief." 2
    // words. Budget 30: 28 for the conversation (29 > 28: recall goes on);
    // newest share 0.5: 14 -> #7 6, #6 4, #5 4 (14). Older units: #1, the
    // group #2+#3, #4. Room 28 - 14 = 14, header 7: 7 left. The group's
    // text "assistant: [called search({"q":"tokyo"})]" + "user: [result of
    // tu_1] seat 32A on NH 204" is 3 + 9 = 12 words: over 7, skipped;
    // #1 "user: find the tokyo booking" (5) fits (the group and #1 both
    // hold tokyo; the group also holds "seat", so it ranks first).
    let opts = Trim::anthropic(30)
        .counter(Words)
        .recall(RecallOptions::new());
    let (window, out) = trim_transcript(&doc, &opts).unwrap();
    let recall = out.recall.as_ref().unwrap();
    assert_eq!(recall.positions, vec![1]);
    assert!(matches!(
        out.rows[2].decision,
        Decision::NotRecalled {
            unit_tokens: 12,
            available_tokens: 7,
            ..
        }
    ));
    assert_eq!(
        out.rows[2].decision, out.rows[3].decision,
        "the group moves whole"
    );
    let v = window.to_value();
    assert_eq!(v["system"], "Be brief.");
    assert_eq!(v["messages"][0]["role"], "user");
    assert_eq!(v["messages"][0]["content"][0]["type"], "text");
    assert!(
        v["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("user: find the tokyo booking")
    );
    // With room for the group (newest share 0.25: floor(28 * 0.25) = 7
    // holds #7 (6) only; room 28 - 6 = 22, 15 after the header), the call
    // and its result are recalled together: 12 words, 3 left; #1 needs 5;
    // #4 "assistant: found it" (3 words, lifted by its neighbour, the
    // group's result) fits the 3.
    let opts = Trim::anthropic(30)
        .counter(Words)
        .recall(RecallOptions::new().newest_share(0.25));
    let out = trim(doc.messages(), &opts).unwrap();
    assert_eq!(out.recall.as_ref().unwrap().positions, vec![2, 3, 4]);
    let text = out.recall_message().unwrap().1.text();
    assert!(
        text.contains("[called search({\"q\":\"tokyo\"})]"),
        "{text}"
    );
    assert!(
        text.contains("[result of tu_1] seat 32A on NH 204"),
        "{text}"
    );
}

#[test]
fn bad_recall_options_are_typed_errors() {
    let m = travel();
    for share in [0.0, -0.5, 1.5, f64::NAN] {
        let e = trim(
            &m,
            &Trim::openai(32).recall(RecallOptions::new().newest_share(share)),
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                ChatError::InvalidRecall {
                    option: "newest_share",
                    ..
                }
            ),
            "{e}"
        );
    }
    let e = trim(
        &m,
        &Trim::openai(32).recall(RecallOptions::new().neighbours(2.0)),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "recall neighbours must be in [0, 1], got 2");
    let big = "tokyo ".repeat(200_000); // 1.2 MB
    let e = trim(
        &m,
        &Trim::openai(32).recall(RecallOptions::new().query(big)),
    )
    .unwrap_err();
    assert_eq!(
        e,
        ChatError::QueryTooLong {
            bytes: 1_200_000,
            max: 1 << 20
        }
    );
    // A huge newest user message is read up to the limit, never a panic.
    let mut long = m.clone();
    long.push(Message::assistant("ok"));
    long.push(Message::user("tokyo ".repeat(200_000)));
    let out = trim(
        &long,
        &Trim::openai(2_000_000)
            .counter(Words)
            .recall(RecallOptions::new()),
    )
    .unwrap();
    assert!(out.recall.as_ref().unwrap().query.len() <= 1 << 20);
}

// ---- property test ----

#[derive(Debug, Clone)]
enum Op {
    User(i64, usize),
    Assistant(i64, usize),
    Tools(i64, Vec<i64>, usize),
    System(i64),
}

const WORDS: [&str; 6] = ["tokyo", "flight", "hotel", "ramen", "seat", "cats"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1i64..40, 0usize..64).prop_map(|(t, w)| Op::User(t, w)),
        4 => (1i64..40, 0usize..64).prop_map(|(t, w)| Op::Assistant(t, w)),
        2 => (1i64..20, prop::collection::vec(1i64..80, 1..3), 0usize..64)
            .prop_map(|(c, r, w)| Op::Tools(c, r, w)),
        1 => (1i64..20).prop_map(Op::System),
    ]
}

/// Text of up to three vocabulary words chosen by the bits of `w`.
fn text(w: usize) -> String {
    let words: Vec<&str> = (0..6)
        .filter(|b| w & (1 << b) != 0)
        .map(|b| WORDS[b])
        .take(3)
        .collect();
    if words.is_empty() {
        "ok".into()
    } else {
        words.join(" ")
    }
}

fn build(ops: &[Op]) -> Vec<Message> {
    let parse = |j: Value| cupel_chat::message_from_value(j, Format::OpenAi, "m").unwrap();
    let mut v = Vec::new();
    let mut id = 0;
    for o in ops {
        match o {
            Op::User(t, w) => v.push(parse(json!({"role": "user", "content": text(*w), "t": t}))),
            Op::Assistant(t, w) => {
                v.push(parse(
                    json!({"role": "assistant", "content": text(*w), "t": t}),
                ));
            }
            Op::System(t) => v.push(parse(json!({"role": "system", "content": "s", "t": t}))),
            Op::Tools(c, results, w) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        id += 1;
                        format!("call_{id}")
                    })
                    .collect();
                let calls: Vec<Value> = ids
                    .iter()
                    .map(|i| {
                        json!({"id": i, "type": "function",
                    "function": {"name": "f", "arguments": "{}"}})
                    })
                    .collect();
                v.push(parse(
                    json!({"role": "assistant", "content": null, "tool_calls": calls, "t": c}),
                ));
                for (i, t) in ids.iter().zip(results) {
                    v.push(parse(
                        json!({"role": "tool", "tool_call_id": i, "content": text(*w), "t": t}),
                    ));
                }
            }
        }
    }
    v
}

/// Which side of the window a row is on: 0 kept, 1 recalled, 2 out.
fn side(d: &Decision) -> u8 {
    if d.is_kept() {
        0
    } else if d.is_recalled() {
        1
    } else {
        2
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn recall_windows_are_valid_within_budget_with_the_newest_share_contiguous(
        ops in prop::collection::vec(op(), 1..40),
        max in 1i64..400,
        share in 0.1f64..=1.0,
        exchange in any::<bool>(),
    ) {
        let messages = build(&ops);
        let g = if exchange { Granularity::Exchange } else { Granularity::Message };
        let opts = Trim::openai(max).counter(Words).granularity(g)
            .recall(RecallOptions::new().newest_share(share));
        let out = match trim(&messages, &opts) {
            Ok(out) => out,
            Err(ChatError::NothingFits { .. } | ChatError::PinnedOverBudget { .. }
                | ChatError::NoConversation { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        };
        // Budget held, the context message counted whole.
        prop_assert!(out.tokens.window <= max, "{} > {max}", out.tokens.window);
        let sent = out.cloned_messages();
        let counted: i64 = sent.iter().map(|m| Words.count_message(m)).sum();
        prop_assert_eq!(counted, out.tokens.window);
        // Groups whole: a call and its results are on the same side.
        for (i, m) in messages.iter().enumerate() {
            for c in m.calls() {
                for (j, r) in messages.iter().enumerate() {
                    if r.answered_ids().any(|a| a == c.id) {
                        prop_assert_eq!(side(&out.rows[i].decision), side(&out.rows[j].decision),
                            "call #{} and result #{}", i, j);
                    }
                }
            }
        }
        // Valid: no orphan in the messages sent; the context message sits
        // right after the leading prompts; the conversation starts with a
        // user message.
        for (k, m) in sent.iter().enumerate() {
            for c in m.calls() {
                prop_assert!(sent[k + 1..].iter().any(|r| r.answered_ids().any(|a| a == c.id)));
            }
            for a in m.answered_ids() {
                prop_assert!(sent[..k].iter().any(|c| c.calls().any(|c| c.id == a)));
            }
        }
        if let Some((at, _)) = out.recall_message() {
            let leading = out.positions.iter().take_while(|&&p| out.rows[p].decision.is_pinned()).count();
            prop_assert_eq!(at, leading);
            prop_assert!(out.tokens.recalled > 0);
        }
        let first_conv = sent.iter().enumerate()
            .find(|(k, m)| !m.role.is_prompt() && out.recall_message().is_none_or(|(at, _)| *k != at));
        if let Some((_, first)) = first_conv {
            prop_assert_eq!(&first.role, &Role::User);
            prop_assert!(!first.is_tool_result());
        }
        // Newest share contiguous: nothing between the oldest kept
        // conversation message and the end is left out or recalled; every
        // recalled message is older; the newest part holds at most its
        // share, unless it is one unit (the newest is always kept).
        let kept: Vec<usize> = out.rows.iter()
            .filter(|r| r.decision == Decision::Kept).map(|r| r.position).collect();
        if let Some(&oldest) = kept.first() {
            for r in &out.rows[oldest..] {
                prop_assert!(r.decision.is_kept(), "{} inside the newest turns", r);
            }
            for r in out.rows.iter().filter(|r| r.decision.is_recalled()) {
                prop_assert!(r.position < oldest);
                let relevant = matches!(&r.decision, Decision::Recalled { relevance, .. } if relevance.score > 0.0);
                prop_assert!(relevant, "#{} recalled without relevance", r.position);
            }
        }
        if let Some(recall) = out.recall.as_ref().filter(|r| r.message.is_some()) {
            // Over the share only by reaching back to a valid start: without
            // its oldest unit, the newest part would be empty or start where
            // no window may (not a user message).
            let kept: Vec<&cupel_chat::MessageRow<'_>> =
                out.rows.iter().filter(|r| r.decision == Decision::Kept).collect();
            let newest: i64 = kept.iter().map(|r| r.tokens).sum();
            if newest > recall.newest_budget {
                let oldest_unit = kept[0].unit;
                let rest = kept.iter().find(|r| r.unit != oldest_unit);
                let rest_starts = rest.is_some_and(|r| r.message.role == Role::User && !r.message.is_tool_result());
                prop_assert!(!rest_starts,
                    "newest {newest} over its share {} though #{} could start it",
                    recall.newest_budget, rest.map_or(0, |r| r.position));
            }
        }
    }
}

/// `simulate` replays the recall window fourth when the options carry
/// recall (the other three without it), and bills its context message:
/// on the travel transcript at 32 words, the last request (the whole
/// transcript but its final answer) is the hand-derived window above:
/// 2 + 15 + 15 = 32 tokens, 4 + 1 messages.
#[test]
fn cache_sim_replays_the_recall_window() {
    let mut t = travel();
    t.push(Message::assistant("NH 204"));
    let opts = Trim::openai(32).counter(Words).recall(RecallOptions::new());
    let sim = cupel_chat::simulate(&t, &opts, &cupel_chat::CacheProfile::anthropic()).unwrap();
    let names: Vec<&str> = sim.runs.iter().map(|r| r.strategy.as_str()).collect();
    assert_eq!(
        names,
        ["newest-messages", "chat-trim", "cache-aware", "chat-recall"]
    );
    let recall = sim.run(cupel_chat::SimStrategy::ChatRecall).unwrap();
    let last = recall.turns.last().unwrap();
    assert_eq!(last.end, 10);
    assert_eq!((last.window_tokens, last.window_messages), (32, 5));
    // Without recall: three strategies, as before.
    let plain = cupel_chat::simulate(
        &t,
        &Trim::openai(32).counter(Words),
        &cupel_chat::CacheProfile::anthropic(),
    )
    .unwrap();
    assert_eq!(plain.runs.len(), 3);
    assert_eq!(
        plain.run(cupel_chat::SimStrategy::ChatTrim),
        sim.run(cupel_chat::SimStrategy::ChatTrim)
    );
}
