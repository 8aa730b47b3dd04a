//! Compaction: the running summary in the trim and the cache session.
//! Tokens are counted by [`Words`] (one token per message plus one per
//! word), so every expected value follows from the arithmetic in the
//! comments. The summary message is `[Summary of the earlier conversation]`
//! (5 words) on its first line, then the summariser's text: a summary of
//! `n` words costs `1 + 5 + n` tokens.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Mutex;
use std::time::Duration;

use cupel_chat::{
    AgeToolResults, AsyncSummarizer, CacheProfile, CacheSession, CommandSummarizer, Compaction,
    DigestSummarizer, Format, LowWater, Message, MessageCounter, Oversize, Role, RunningSummary,
    SUMMARY_HEADER, SummarizeError, Summarizer, SummaryFailure, SummaryFuture, SummaryInput,
    SummaryStatus, Transcript, Trim, trim,
};

/// One token per message plus one per word of its text.
struct Words;

impl MessageCounter for Words {
    fn count_message(&self, m: &Message) -> i64 {
        let calls: usize = m
            .calls()
            .map(|c| 1 + c.arguments_text().split_whitespace().count())
            .sum();
        1 + m.text().split_whitespace().count() as i64 + calls as i64
    }
    fn describe(&self) -> String {
        "words".into()
    }
}

/// `tag` and then `n - 2` more words: `n` tokens under [`Words`].
fn said(tag: &str, n: usize) -> String {
    format!("{tag} {}", "w ".repeat(n - 2))
        .trim_end()
        .to_string()
}

/// What a summariser was given, per call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    previous: Option<String>,
    positions: Vec<usize>,
    texts: Vec<String>,
}

/// Answers `Summary N messages.` (3 words: a 9-token message) and records
/// its input.
#[derive(Default)]
struct Counting {
    seen: Mutex<Vec<Seen>>,
}

impl Counting {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn record(input: &SummaryInput<'_>) -> Seen {
    Seen {
        previous: input.previous.map(|p| p.text().to_string()),
        positions: input.positions(),
        texts: input
            .evicted
            .iter()
            .flat_map(|u| u.messages.iter().map(|m| m.text()))
            .collect(),
    }
}

impl Summarizer for &'static Counting {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        let seen = record(input);
        let n = seen.positions.len();
        self.seen.lock().unwrap().push(seen);
        Ok(format!("Summary {n} messages."))
    }
}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

/// A summariser with a fixed answer.
struct Says(Result<String, SummarizeError>);

impl Summarizer for Says {
    fn summarize(&self, _: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        self.0.clone()
    }
}

/// S (10), then U1 A1 ... U(n-1) A(n-1) Un, 10 tokens each.
fn chat(n: usize) -> Vec<Message> {
    let mut v = vec![Message::system(said("system", 10))];
    for i in 1..=n {
        v.push(Message::user(said(&format!("u{i}"), 10)));
        if i < n {
            v.push(Message::assistant(said(&format!("a{i}"), 10)));
        }
    }
    v
}

/// The running summary's text of a trim.
fn text_of(out: &cupel_chat::Trimmed<'_>) -> String {
    out.summary
        .as_ref()
        .unwrap()
        .summary
        .as_ref()
        .unwrap()
        .text()
        .to_string()
}

fn opts(max: i64, c: Compaction) -> Trim {
    Trim::openai(max).counter(Words).summarize(c)
}

#[test]
fn trim_folds_what_it_evicts_into_one_summary_after_the_pins() {
    // S=#0, U1=#1, A1=#2, U2=#3, A2=#4, U3=#5, A3=#6, U4=#7.
    let msgs = chat(4);
    let sum = leak(Counting::default());
    let c = Compaction::new(sum).max_tokens(30).unwrap();
    let out = trim(&msgs, &opts(100, c)).unwrap();
    // 30 held back: 70 for the trim; S 10 leaves 60. Newest first: U4 A3
    // U3 A2 U2 A1 = 60 fit, U1 does not (0 left); A1 then goes by the
    // start rule. Evicted: U1 (#1), A1 (#2).
    assert_eq!(out.positions, vec![0, 3, 4, 5, 6, 7]);
    let r = out.summary.as_ref().unwrap();
    assert!(r.is_made());
    assert_eq!(r.evicted, vec![1, 2]);
    assert_eq!(sum.seen()[0].previous, None);
    assert_eq!(sum.seen()[0].positions, vec![1, 2]);
    // "Summary 2 messages." is 3 words: 1 + 5 + 3 = 9 tokens.
    assert_eq!(r.tokens(), 9);
    assert_eq!(out.tokens.summary, 9);
    // Window: S 10 + summary 9 + five messages of 10 = 69 of 100.
    assert_eq!(out.tokens.window, 69);
    let sent = out.cloned_messages();
    assert_eq!(sent.len(), 7);
    assert_eq!(sent[1].role, Role::System, "OpenAI: a system message");
    assert_eq!(
        sent[1].text(),
        format!("{SUMMARY_HEADER}\nSummary 2 messages.")
    );
    let s = r.summary.as_ref().unwrap();
    assert_eq!((s.through, s.covers, s.folds), (Some(2), 2, 1));
    // U1 + A1 = 20 original tokens.
    assert_eq!(s.original_tokens, 20);
}

#[test]
fn the_next_fold_takes_the_previous_summary_alone_and_only_newer_units() {
    let sum = leak(Counting::default());
    let four = chat(4);
    let first = trim(
        &four,
        &opts(100, Compaction::new(sum).max_tokens(30).unwrap()),
    )
    .unwrap();
    let prev = first.summary.unwrap().summary.unwrap();
    // Two more exchanges: S, U1..U6 (#0..#11). 60 for the conversation:
    // U6 A5 U5 A4 U4 A3 fit (60), U3 (#5) does not; A2 (#4), U2 (#3) are
    // older; A3 (#6) goes by the start rule; A1, U1 (#1, #2) are in the
    // previous summary (through #2).
    let msgs = chat(6);
    let c = Compaction::new(sum)
        .max_tokens(30)
        .unwrap()
        .previous(Some(prev.clone()));
    let out = trim(&msgs, &opts(100, c)).unwrap();
    assert_eq!(out.positions, vec![0, 7, 8, 9, 10, 11]);
    let seen = &sum.seen()[1];
    assert_eq!(seen.previous.as_deref(), Some("Summary 2 messages."));
    assert_eq!(seen.positions, vec![3, 4, 5, 6]);
    // Never the summary text among the evicted units.
    assert!(seen.texts.iter().all(|t| !t.contains(SUMMARY_HEADER)));
    let s = out.summary.unwrap().summary.unwrap();
    // 2 messages before, 4 now.
    assert_eq!((s.through, s.covers, s.folds), (Some(6), 6, 2));
}

#[test]
fn an_oversized_summary_is_cut_at_its_last_fitting_sentence_or_refused() {
    let text = "One two three. Four five six. Seven eight nine ten.";
    // Whole: 1 + 5 + 10 words = 16 tokens, over a bound of 14.
    // "One two three." = 9; "... Four five six." = 12; the whole 16.
    let c = Compaction::new(Says(Ok(text.into())))
        .max_tokens(14)
        .unwrap();
    // Budget 100 - 14 = 86 for S (10) and 7 messages of 10 (70); U1.. all
    // fit in chat(5)? chat(5) has 9 conversation messages = 90 > 76: evicts.
    let msgs = chat(5);
    let out = trim(&msgs, &opts(100, c)).unwrap();
    let r = out.summary.unwrap();
    assert_eq!(r.status, SummaryStatus::Made { cut_from: Some(16) });
    assert_eq!(
        r.summary.as_ref().unwrap().text(),
        "One two three. Four five six."
    );
    assert_eq!(r.tokens(), 12);

    let reject = Compaction::new(Says(Ok(text.into())))
        .max_tokens(14)
        .unwrap()
        .oversize(Oversize::Reject);
    let out = trim(&msgs, &opts(100, reject)).unwrap();
    assert_eq!(
        out.summary.unwrap().status,
        SummaryStatus::Failed(SummaryFailure::Oversized {
            tokens: 16,
            max_tokens: 14
        })
    );

    // No sentence end at all: 1 + 5 + 8 = 14 tokens over a bound of 10.
    let run_on = Compaction::new(Says(Ok(
        "alpha beta gamma delta epsilon zeta eta theta".into()
    )))
    .max_tokens(10)
    .unwrap();
    let out = trim(&msgs, &opts(100, run_on)).unwrap();
    assert_eq!(
        out.summary.unwrap().status,
        SummaryStatus::Failed(SummaryFailure::Oversized {
            tokens: 14,
            max_tokens: 10
        })
    );
}

fn previous_summary() -> RunningSummary {
    let four = chat(4);
    let c = Compaction::new(Says(Ok("Old facts.".into())))
        .max_tokens(30)
        .unwrap();
    let first = trim(&four, &opts(100, c)).unwrap();
    first.summary.unwrap().summary.unwrap()
}

#[test]
fn a_failing_or_empty_summariser_keeps_the_previous_summary_and_says_so() {
    let prev = previous_summary();
    assert_eq!(prev.text(), "Old facts.");
    let msgs = chat(6);
    for (answer, why) in [
        (
            Err(SummarizeError::Failed("model down".into())),
            SummaryFailure::Summarizer(SummarizeError::Failed("model down".into())),
        ),
        (Ok("   \n".to_string()), SummaryFailure::Empty),
    ] {
        let c = Compaction::new(Says(answer))
            .max_tokens(30)
            .unwrap()
            .previous(Some(prev.clone()));
        let out = trim(&msgs, &opts(100, c)).unwrap();
        let r = out.summary.clone().unwrap();
        assert_eq!(r.status, SummaryStatus::Failed(why));
        // The previous summary stays in the window: "Old facts." = 1 + 5 + 2 = 8.
        assert_eq!(r.summary.as_ref().unwrap().text(), "Old facts.");
        assert_eq!(out.tokens.summary, 8);
        let sent = out.cloned_messages();
        assert_eq!(sent[1].text(), format!("{SUMMARY_HEADER}\nOld facts."));
        // The report names what is in no summary yet: #3-#6 (as above).
        let line = r.to_string();
        assert!(line.contains("not updated"), "{line}");
        assert!(line.contains("#3-#6"), "{line}");
    }
}

#[test]
fn calls_without_results_are_never_summarised() {
    // S, U1, C1 (a call never answered: an orphan), A1, U2, A2, U3, A3,
    // U4, then a pending call C4 whose result has not arrived.
    let mut msgs = vec![
        Message::system(said("system", 10)),
        Message::user(said("u1", 10)),
        Message::assistant_calls([("orphan", "lookup", "{}")]),
        Message::assistant(said("a1", 10)),
        Message::user(said("u2", 10)),
        Message::assistant(said("a2", 10)),
        Message::user(said("u3", 10)),
        Message::assistant(said("a3", 10)),
        Message::user(said("u4", 10)),
    ];
    msgs.push(Message::assistant_calls([("pending", "search", "{}")]));
    let sum = leak(Counting::default());
    let out = trim(
        &msgs,
        &opts(80, Compaction::new(sum).max_tokens(20).unwrap()),
    )
    .unwrap();
    // 60 for the trim, S 10: 50. U4 A3 U3 A2 U2 = 50; A1 (#3) does not fit.
    assert_eq!(out.positions, vec![0, 4, 5, 6, 7, 8]);
    let seen = &sum.seen()[0];
    // The orphan call (#2) and the pending call (#9) are not in the input.
    assert_eq!(seen.positions, vec![1, 3]);
}

#[test]
fn an_anthropic_summary_is_a_user_turn_and_the_system_prompt_stays_top_level() {
    let text = format!(
        r#"{{"model":"m","system":"{}","messages":[{}]}}"#,
        said("system", 10),
        (1..=4)
            .flat_map(|i| {
                let mut v = vec![format!(
                    r#"{{"role":"user","content":"{}"}}"#,
                    said(&format!("u{i}"), 10)
                )];
                if i < 4 {
                    v.push(format!(
                        r#"{{"role":"assistant","content":"{}"}}"#,
                        said(&format!("a{i}"), 10)
                    ));
                }
                v
            })
            .collect::<Vec<_>>()
            .join(",")
    );
    let doc = Transcript::parse(&text).unwrap();
    assert_eq!(doc.format(), Format::Anthropic);
    let o = Trim::anthropic(100).counter(Words).summarize(
        Compaction::new(Says(Ok("Earlier talk.".into())))
            .max_tokens(30)
            .unwrap(),
    );
    let out = trim(doc.messages(), &o).unwrap();
    let v: serde_json::Value = serde_json::from_str(&doc.window_json(&out)).unwrap();
    // The system prompt is the top-level field, untouched.
    assert_eq!(v["system"], said("system", 10));
    // The conversation starts with the summary, a user turn (Anthropic's
    // start rule), followed by the kept user message U2 (Anthropic
    // combines consecutive user turns).
    let m = v["messages"].as_array().unwrap();
    assert_eq!(m[0]["role"], "user");
    assert_eq!(m[0]["content"][0]["type"], "text");
    assert_eq!(
        m[0]["content"][0]["text"],
        format!("{SUMMARY_HEADER}\nEarlier talk.")
    );
    assert_eq!(m[1]["role"], "user");
    assert_eq!(m[1]["content"], said("u2", 10));
    // window_of agrees with window_json.
    assert_eq!(doc.window_of(&out).to_value(), v);
}

/// Budget 100, summary bound 20, low-water mark 50 (window tokens).
fn session(sum: &'static Counting) -> CacheSession {
    CacheSession::new(Trim::openai(100).counter(Words), CacheProfile::openai())
        .low_water(LowWater::Tokens(50))
        .summarize(Compaction::new(sum).max_tokens(20).unwrap())
}

#[test]
fn a_session_changes_its_summary_only_when_it_cuts() {
    // S=#0, U1=#1, A1=#2, ..., Uk=#(2k-1), Ak=#2k. Exchanges of 20.
    let all = chat(7);
    let sum = leak(Counting::default());
    let mut s = session(sum);
    // 100 - S 10 - 20 reserved = 70 for the conversation; the mark (50)
    // is 40 of conversation tokens.
    let mut sent_before: Vec<Message> = Vec::new();
    for k in 1..=7usize {
        let request = &all[..2 * k];
        let turn = s.next(request).unwrap();
        let sent = turn.cloned_messages();
        let r = turn.summary.clone().unwrap();
        match k {
            // Conversation 20k - 10 <= 70: appended, nothing evicted.
            1..=4 => {
                assert!(turn.cut.is_none());
                assert_eq!(r.status, SummaryStatus::Unchanged);
                assert!(r.summary.is_none());
                assert_eq!(turn.window_tokens, 10 + 20 * k as i64 - 10);
            }
            // 90 > 70: E1 must go (70), E2 may (50 >= 40), E3 stays (30 < 40).
            // The summary of #1-#4, "Summary 4 messages." (9 tokens), follows S.
            5 => {
                assert!(turn.cut.is_some());
                assert_eq!(r.evicted, vec![1, 2, 3, 4]);
                assert_eq!(
                    sent[1].text(),
                    format!("{SUMMARY_HEADER}\nSummary 4 messages.")
                );
                assert_eq!(turn.positions, vec![0, 5, 6, 7, 8, 9]);
                // S 10 + summary 9 + U3 A3 U4 A4 U5 50 = 69.
                assert_eq!(turn.window_tokens, 69);
            }
            // 70 <= 70: appended; the summary and the prefix are unchanged.
            6 => {
                assert!(turn.cut.is_none());
                assert_eq!(r.status, SummaryStatus::Unchanged);
                assert_eq!(&sent[..sent_before.len()], &sent_before[..]);
                assert_eq!(turn.kept_prefix, sent_before.len());
                assert_eq!(turn.window_tokens, 89);
            }
            // 90 > 70 again: E3 and E4 (#5-#8) folded with the previous summary.
            7 => {
                assert!(turn.cut.is_some());
                assert_eq!(r.evicted, vec![5, 6, 7, 8]);
                let seen = sum.seen();
                assert_eq!(seen.len(), 2, "one fold per cut");
                assert_eq!(seen[1].previous.as_deref(), Some("Summary 4 messages."));
                assert_eq!(seen[1].positions, vec![5, 6, 7, 8]);
                let rs = r.summary.unwrap();
                assert_eq!((rs.covers, rs.folds, rs.turn), (8, 2, Some(7)));
                assert_eq!(turn.window_tokens, 69);
            }
            _ => unreachable!(),
        }
        assert!(turn.window_tokens <= 100);
        sent_before = sent;
    }
}

#[test]
fn a_session_resumed_from_its_state_keeps_the_summary_and_the_prefix() {
    let all = chat(6);
    let sum = leak(Counting::default());
    let mut s = session(sum);
    for k in 1..=5 {
        s.next(&all[..2 * k]).unwrap();
    }
    // The state: the window as sent and the running summary (as JSON).
    let window = s.window().unwrap().to_vec();
    let state = serde_json::to_string(s.summary().unwrap()).unwrap();
    let back: RunningSummary = serde_json::from_str(&state).unwrap();
    assert_eq!(&back, s.summary().unwrap());
    let mut resumed = CacheSession::new(Trim::openai(100).counter(Words), CacheProfile::openai())
        .low_water(LowWater::Tokens(50))
        .summarize(
            Compaction::new(sum)
                .max_tokens(20)
                .unwrap()
                .previous(Some(back)),
        )
        .resume(window.clone());
    let turn = resumed.next(&all[..12]).unwrap();
    // Turn 6 appends (see above): the whole previous window, summary
    // included, is the prefix.
    assert!(turn.cut.is_none());
    assert_eq!(turn.kept_prefix, window.len());
    assert_eq!(&turn.cloned_messages()[..window.len()], &window[..]);
}

/// A waker-free executor for a future that never waits.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

struct AsyncCount;

impl AsyncSummarizer for AsyncCount {
    fn summarize<'a>(&'a self, input: &'a SummaryInput<'a>) -> SummaryFuture<'a> {
        let n = input.positions().len();
        Box::pin(async move { Ok(format!("Async {n} messages.")) })
    }
}

#[test]
fn the_async_session_folds_at_the_same_cut() {
    let all = chat(5);
    let mut s = CacheSession::new(Trim::openai(100).counter(Words), CacheProfile::openai())
        .low_water(LowWater::Tokens(50))
        .summarize(Compaction::for_async().max_tokens(20).unwrap());
    for k in 1..=5 {
        let turn = block_on(s.next_async(&all[..2 * k], &AsyncCount)).unwrap();
        if k == 5 {
            let r = turn.summary.unwrap();
            assert_eq!(r.evicted, vec![1, 2, 3, 4]);
            assert_eq!(r.summary.unwrap().text().to_string(), "Async 4 messages.");
        }
    }
}

fn failing(cmd: &str, timeout_ms: u64) -> SummaryFailure {
    let c = Compaction::new(CommandSummarizer::new(cmd).timeout(Duration::from_millis(timeout_ms)))
        .max_tokens(30)
        .unwrap()
        .previous(Some(previous_summary()));
    let msgs = chat(6);
    let out = trim(&msgs, &opts(100, c)).unwrap();
    let r = out.summary.clone().unwrap();
    // Whatever went wrong, the window keeps the previous summary.
    assert_eq!(r.summary.as_ref().unwrap().text(), "Old facts.");
    assert_eq!(
        out.cloned_messages()[1].text(),
        format!("{SUMMARY_HEADER}\nOld facts.")
    );
    match r.status {
        SummaryStatus::Failed(f) => f,
        other => panic!("{cmd}: expected a failure, got {other:?}"),
    }
}

#[test]
fn the_command_summariser_reads_stdin_and_writes_the_summary() {
    let c = Compaction::new(CommandSummarizer::new(
        "grep -q '\"previous_summary\":null' && echo ' From sh. '",
    ))
    .max_tokens(30)
    .unwrap();
    let four = chat(4);
    let out = trim(&four, &opts(100, c)).unwrap();
    assert_eq!(text_of(&out), "From sh.");
}

#[test]
fn a_command_that_exits_non_zero_is_a_clear_error() {
    match failing("echo broken >&2; exit 1", 10_000) {
        SummaryFailure::Summarizer(SummarizeError::Exit { status, stderr, .. }) => {
            assert!(status.contains('1'), "{status}");
            assert_eq!(stderr, "broken");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_command_that_does_not_answer_in_time_is_killed() {
    let f = failing("sleep 5", 200);
    assert!(
        matches!(f, SummaryFailure::Summarizer(SummarizeError::TimedOut { timeout, .. }) if timeout == Duration::from_millis(200)),
        "{f:?}"
    );
}

#[test]
fn a_command_that_writes_over_ten_megabytes_is_refused() {
    // 11,000,000 bytes > the 10 MiB (10,485,760) default cap.
    let f = failing("head -c 11000000 /dev/zero | tr '\\0' a", 20_000);
    assert!(
        matches!(
            f,
            SummaryFailure::Summarizer(SummarizeError::TooLarge {
                limit: 10_485_760,
                ..
            })
        ),
        "{f:?}"
    );
}

#[test]
fn a_command_that_writes_invalid_utf8_is_refused() {
    // "ok " then the byte 0xFF: invalid at byte 3.
    let f = failing("printf 'ok \\377'", 10_000);
    assert!(
        matches!(
            f,
            SummaryFailure::Summarizer(SummarizeError::InvalidUtf8 { at: 3, .. })
        ),
        "{f:?}"
    );
}

#[test]
fn the_digest_is_deterministic_bounded_and_folds() {
    let msgs = vec![
        Message::system("Be brief."),
        Message::user("Where is order 42?"),
        Message::assistant_calls([("c1", "track", "{}")]),
        Message::tool("c1", "In transit."),
        Message::assistant_calls([("c2", "track", "{}")]),
        Message::tool("c2", "Still in transit."),
        Message::assistant("It is in transit."),
        Message::user(said("next", 30)),
    ];
    let c = Compaction::new(DigestSummarizer::new())
        .max_tokens(40)
        .unwrap();
    let o = opts(80, c);
    let a = trim(&msgs, &o).unwrap();
    let b = trim(&msgs, &o).unwrap();
    let text = a
        .summary
        .as_ref()
        .unwrap()
        .summary
        .as_ref()
        .unwrap()
        .text()
        .to_string();
    assert_eq!(
        text,
        "- Asked: Where is order 42? Tools: track x2. Concluded: It is in transit."
    );
    assert_eq!(text_of(&b), text);
}

#[test]
fn ageing_in_a_session_waits_for_clear_at_least() {
    // S 10; E1: U1 A1 (20); E2: U2 10, a call C (3: one token, plus one for
    // the call and one for its `{}` arguments), its result R (40), A2 10
    // (63); E3..E7 20 each; U8 10: 193 tokens of conversation.
    let mut v = vec![Message::system(said("system", 10))];
    v.push(Message::user(said("u1", 10)));
    v.push(Message::assistant(said("a1", 10)));
    v.push(Message::user(said("u2", 10)));
    v.push(Message::assistant_calls([("c", "grep", "{}")]));
    v.push(Message::tool("c", said("r", 40)));
    v.push(Message::assistant(said("a2", 10)));
    for i in 3..=7 {
        v.push(Message::user(said(&format!("u{i}"), 10)));
        v.push(Message::assistant(said(&format!("a{i}"), 10)));
    }
    v.push(Message::user(said("u8", 10)));
    // Budget 190: 180 for the conversation; mark 130: 120 of conversation.
    // The cut removes E1 (193 > 180: 173), keeps E2 (173 - 63 = 110 < 120).
    // Ageing then tries R's placeholder "[tool result of 40 tokens
    // omitted]" (7 tokens): 173 - 33 = 140 >= 120, so it is taken.
    let base = Trim::openai(190).counter(Words);
    let run = |aging: AgeToolResults| {
        let mut s = CacheSession::new(base.clone().age_tool_results(aging), CacheProfile::openai())
            .low_water(LowWater::Tokens(130));
        let cut = s.next(&v).unwrap().cut.unwrap();
        (cut.shortened, cut.shortened_saved)
    };
    assert_eq!(run(AgeToolResults::new(1)), (1, 33));
    // It frees 33 tokens, under 1,000: the result stays whole.
    assert_eq!(run(AgeToolResults::new(1).clear_at_least(1_000)), (0, 0));
    assert_eq!(run(AgeToolResults::new(1).clear_at_least(33)), (1, 33));
}

#[test]
fn simulate_with_a_compaction_replays_the_summary_strategies() {
    use cupel_chat::{SimStrategy, simulate_with};
    // chat(7) and A7: requests end before A1..A7 (S..Uk, k = 1..7).
    let mut t = chat(7);
    t.push(Message::assistant(said("a7", 10)));
    let sum = leak(Counting::default());
    let opts = Trim::openai(100)
        .counter(Words)
        .summarize(Compaction::new(sum).max_tokens(20).unwrap());
    let session = CacheSession::new(Trim::openai(100).counter(Words), CacheProfile::openai())
        .low_water(LowWater::Tokens(50));
    let sim = simulate_with(&t, &opts, session).unwrap();
    let names: Vec<&str> = sim.runs.iter().map(|r| r.strategy.as_str()).collect();
    assert_eq!(
        names,
        [
            "newest-messages",
            "chat-trim",
            "cache-aware",
            "aware+summary",
            "summarize-every",
            "langchain-state"
        ]
    );
    let windows = |s: SimStrategy| -> Vec<i64> {
        sim.run(s)
            .unwrap()
            .turns
            .iter()
            .map(|t| t.window_tokens)
            .collect()
    };
    // The session with summaries, as in `a_session_changes_its_summary_only_when_it_cuts`:
    // request k is S 10 + 20k - 10 = 20k: 20, 40, 60, 80 appended; 69 after
    // the cut at request 5 (S 10 + summary 9 + 50); 89 appended; 69 after
    // the cut at request 7.
    assert_eq!(
        windows(SimStrategy::CacheAwareSummary),
        [20, 40, 60, 80, 69, 89, 69]
    );
    // Summarise every request: the history is 20k tokens; at request 5 it
    // is 100, not over the trigger (the budget), so all of it goes. At 6
    // (120) the newest 20 messages are all 11; the room after S and the
    // 20 reserved is 70: U3..U6 (7 messages, 70) with "Summary 4
    // messages." (9): 89. At 7 (140): U4..U7 (70), the summary refolded
    // with #5 and #6 ("Summary 2 messages.", 9): 89 again, a new summary.
    assert_eq!(
        windows(SimStrategy::SummarizeEvery),
        [20, 40, 60, 80, 100, 89, 89]
    );
}

/// The summary in the two other formats (spec 24): Gemini's `contents`
/// take only alternating user and model turns, so the summary is one more
/// text part of `systemInstruction`; a Responses summary joins the
/// request's `instructions` string after the system text. Budget 100 with summary bound 30 leaves 70 for the
/// conversation: the system prompt (11 words + 1) is pinned, and of the
/// seven 11-token turns u1 a1 u2 a2 u3 a3 u4 the newest five (55) fit in
/// 70 - 11 = 59 but a window starts on a user turn, so u2..u4 stay (55)
/// and u1, a1 are folded.
#[test]
fn gemini_and_responses_summaries_keep_the_provider_shape() {
    let turns: Vec<(String, String)> = (1..=4)
        .flat_map(|i| {
            let mut v = vec![("user".to_string(), said(&format!("u{i}"), 10))];
            if i < 4 {
                v.push(("model".to_string(), said(&format!("a{i}"), 10)));
            }
            v
        })
        .collect();
    let contents: Vec<serde_json::Value> = turns
        .iter()
        .map(|(r, t)| serde_json::json!({"role": r, "parts": [{"text": t}]}))
        .collect();
    let gemini = serde_json::json!({
        "systemInstruction": {"parts": [{"text": said("system", 10)}]},
        "contents": contents,
    })
    .to_string();
    let doc = Transcript::parse(&gemini).unwrap();
    assert_eq!(doc.format(), Format::Gemini);
    let c = || {
        Compaction::new(Says(Ok("Earlier talk.".into())))
            .max_tokens(30)
            .unwrap()
    };
    let o = Trim::new(Format::Gemini, 100).counter(Words).summarize(c());
    let out = trim(doc.messages(), &o).unwrap();
    let v: serde_json::Value = serde_json::from_str(&doc.window_json(&out)).unwrap();
    let parts = v["systemInstruction"]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["text"], said("system", 10));
    assert_eq!(parts[1]["text"], format!("{SUMMARY_HEADER}\nEarlier talk."));
    let kept = v["contents"].as_array().unwrap();
    assert_eq!(kept[0]["role"], "user");
    assert_eq!(kept[0]["parts"][0]["text"], said("u2", 10));
    let roles: Vec<&str> = kept.iter().filter_map(|m| m["role"].as_str()).collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
    assert_eq!(doc.window_of(&out).to_value(), v);

    let items: Vec<serde_json::Value> = turns
        .iter()
        .map(|(r, t)| {
            let role = if r == "model" { "assistant" } else { "user" };
            serde_json::json!({"role": role, "content": t})
        })
        .collect();
    let responses =
        serde_json::json!({"instructions": said("system", 10), "input": items}).to_string();
    let doc = Transcript::parse_as(&responses, Format::Responses).unwrap();
    let o = Trim::new(Format::Responses, 100)
        .counter(Words)
        .summarize(c());
    let out = trim(doc.messages(), &o).unwrap();
    let v: serde_json::Value = serde_json::from_str(&doc.window_json(&out)).unwrap();
    // A request body's system messages are its `instructions` string: the
    // summary joins it after the system text, a blank line between.
    assert_eq!(
        v["instructions"],
        format!("{}\n\n{SUMMARY_HEADER}\nEarlier talk.", said("system", 10))
    );
    let input = v["input"].as_array().unwrap();
    assert_eq!(input[0]["content"], said("u2", 10));
    assert_eq!(doc.window_of(&out).to_value(), v);
}

/// A session with compaction under the automatic mark, budget `max`,
/// summary bound 20, the OpenAI profile (write price 1: the default mark is
/// half the conversation's room).
fn auto_session(max: i64, sum: &'static Counting) -> CacheSession {
    CacheSession::new(Trim::openai(max).counter(Words), CacheProfile::openai())
        .summarize(Compaction::new(sum).max_tokens(20).unwrap())
}

#[test]
fn with_a_summary_the_automatic_mark_keeps_the_newest_twenty_messages() {
    // Budget 1,000: room for the conversation 1,000 - S 10 - bound 20 = 970;
    // the cost-model mark floor(970 / (1 + 1)) = 485. The newest 20
    // messages hold 20 * 10 = 200 tokens < 485, so the mark is 200 of
    // conversation, 10 + 200 = 210 of window.
    let all = chat(50);
    let sum = leak(Counting::default());
    let mut s = auto_session(1_000, sum);
    for k in 1..=49usize {
        // Conversation (2k - 1) * 10 <= 970 up to k = 49: appended.
        let turn = s.next(&all[..2 * k]).unwrap();
        assert!(turn.cut.is_none(), "turn {k}");
    }
    // k = 50: 99 messages, 990 > 970. Exchanges of 20 go while the window
    // is over the room or keeps >= 200 without them: 990, 970, ..., 230
    // -> 210 (39 exchanges, #1-#78); 210 - 20 = 190 < 200: E40 stays.
    let turn = s.next(&all[..100]).unwrap();
    assert!(turn.cut.is_some());
    assert_eq!(turn.low_water, 210);
    let r = turn.summary.clone().unwrap();
    assert_eq!(r.evicted, (1..=78).collect::<Vec<_>>());
    // Kept: U40 A40 ... U49 A49 U50, 21 messages (>= 20) of 210 tokens.
    assert_eq!(turn.positions[0], 0);
    assert_eq!(turn.positions[1..], (79..=99).collect::<Vec<_>>()[..]);
    // S 10 + "Summary 78 messages." (1 + 5 + 3 = 9) + 210 = 229.
    assert_eq!(turn.window_tokens, 229);
}

#[test]
fn with_a_summary_a_smaller_cost_model_mark_still_wins() {
    // Budget 200: room 200 - 10 - 20 = 170; the cost-model mark
    // floor(170 / 2) = 85 < the newest 20 messages' 200 tokens, so the mark
    // is 85 of conversation, 95 of window, as without the rule.
    let all = chat(10);
    let sum = leak(Counting::default());
    let mut s = auto_session(200, sum);
    for k in 1..=9usize {
        // (2k - 1) * 10 <= 170 up to k = 9.
        assert!(s.next(&all[..2 * k]).unwrap().cut.is_none());
    }
    // k = 10: 190 > 170. 190 -> 170 (must), 150, 130, 110, 90 (each leaves
    // >= 85); 90 - 20 = 70 < 85: E6 stays. 5 exchanges (#1-#10) go.
    let turn = s.next(&all[..20]).unwrap();
    assert_eq!(turn.low_water, 95);
    assert_eq!(
        turn.summary.clone().unwrap().evicted,
        (1..=10).collect::<Vec<_>>()
    );
    assert_eq!(
        turn.positions,
        [0].into_iter().chain(11..=19).collect::<Vec<_>>()
    );
    // S 10 + "Summary 10 messages." 9 + 90 = 109.
    assert_eq!(turn.window_tokens, 109);
}
