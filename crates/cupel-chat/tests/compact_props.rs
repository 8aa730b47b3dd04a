//! Compaction properties over random conversations: no orphan in a window,
//! no pending call summarised, the summary within its bound, the budget
//! held with the summary counted, the prefix stable between cuts, and
//! every fold made from one previous summary plus raw units.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::sync::Mutex;

use cupel_chat::{
    CacheProfile, CacheSession, Compaction, LowWater, Message, MessageCounter, SUMMARY_HEADER,
    SummarizeError, Summarizer, SummaryInput, Trim,
};
use proptest::prelude::*;

/// One token per message plus one per word (tool calls: one plus their
/// arguments' words).
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

/// A summariser that checks what it is given and answers with a text of
/// `words` words (sentences of five), possibly over the bound.
struct Checking {
    words: usize,
    problems: Mutex<Vec<String>>,
}

impl Summarizer for &'static Checking {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        let mut calls = BTreeSet::new();
        let mut answered = BTreeSet::new();
        for m in input.evicted.iter().flat_map(|u| u.messages.iter()) {
            if m.text().contains(SUMMARY_HEADER) {
                self.problems
                    .lock()
                    .unwrap()
                    .push("a summary among the evicted units".into());
            }
            calls.extend(m.calls().map(|c| c.id.clone()));
            answered.extend(m.answered_ids().map(str::to_string));
        }
        if calls != answered {
            self.problems
                .lock()
                .unwrap()
                .push(format!("calls {calls:?} vs results {answered:?}"));
        }
        let text: Vec<String> = (0..self.words)
            .map(|i| {
                if i % 5 == 4 {
                    "w.".to_string()
                } else {
                    "w".to_string()
                }
            })
            .collect();
        Ok(text.join(" "))
    }
}

#[derive(Debug, Clone)]
enum Step {
    User(usize),
    Reply(usize),
    /// Parallel calls, each answered with a result of that many words.
    Calls(Vec<usize>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (2usize..25).prop_map(Step::User),
        (1usize..20).prop_map(Step::Reply),
        prop::collection::vec(1usize..60, 1..3).prop_map(Step::Calls),
    ]
}

/// The transcript and the request points: before each assistant message,
/// and (a pending call) right after a call whose results have not come.
fn build(steps: &[Step]) -> (Vec<Message>, Vec<usize>) {
    let mut v = vec![Message::system("You help.")];
    let mut ends = Vec::new();
    let mut id = 0;
    for s in steps {
        match s {
            Step::User(n) => v.push(Message::user("u ".repeat(*n))),
            Step::Reply(n) => {
                ends.push(v.len());
                v.push(Message::assistant("a ".repeat(*n)));
            }
            Step::Calls(results) => {
                ends.push(v.len());
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        id += 1;
                        format!("c{id}")
                    })
                    .collect();
                v.push(Message::assistant_calls(
                    ids.iter().map(|i| (i.as_str(), "tool", "{}")),
                ));
                // A request while the calls are pending.
                ends.push(v.len());
                for (i, n) in ids.iter().zip(results) {
                    v.push(Message::tool(i.clone(), "r ".repeat(*n)));
                }
            }
        }
    }
    ends.push(v.len());
    (v, ends)
}

fn no_orphans(window: &[Message]) -> Result<(), String> {
    let mut open: BTreeSet<String> = BTreeSet::new();
    let mut made: BTreeSet<String> = BTreeSet::new();
    for m in window {
        for id in m.answered_ids() {
            if !made.contains(id) {
                return Err(format!("result for {id} without its call"));
            }
            open.remove(id);
        }
        for c in m.calls() {
            made.insert(c.id.clone());
            open.insert(c.id.clone());
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("calls without results: {open:?}"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sessions_with_summaries_keep_every_guarantee(
        steps in prop::collection::vec(step(), 1..40),
        max in 120i64..400,
        bound in 12i64..40,
        words in 1usize..30,
    ) {
        let (messages, ends) = build(&steps);
        let checking: &'static Checking = Box::leak(Box::new(Checking {
            words,
            problems: Mutex::new(Vec::new()),
        }));
        let c = Compaction::new(checking).max_tokens(bound).unwrap();
        let mut s = CacheSession::new(Trim::openai(max).counter(Words), CacheProfile::anthropic())
            .low_water(LowWater::Fraction(0.5))
            .summarize(c);
        let mut before: Option<Vec<Message>> = None;
        let mut summary_text: Option<String> = None;
        let mut through: Option<usize> = None;
        for &end in &ends {
            let Ok(turn) = s.next(&messages[..end]) else { continue };
            let sent = turn.cloned_messages();
            prop_assert!(turn.window_tokens <= max, "window {} over {max}", turn.window_tokens);
            let r = turn.summary.clone().unwrap();
            prop_assert!(r.tokens() <= bound, "summary {} over {bound}", r.tokens());
            no_orphans(&sent).map_err(TestCaseError::fail)?;
            let now = r.summary.as_ref().map(|x| x.text().to_string());
            if r.is_made() {
                // Folding: only units after what the previous summary covers.
                prop_assert!(r.evicted.iter().all(|&p| through.is_none_or(|t| p > t)));
                through = r.summary.as_ref().and_then(|x| x.through);
            }
            if turn.cut.is_none() {
                // Between cuts the summary does not change, and the
                // previous window is the prefix of this one.
                prop_assert_eq!(&now, &summary_text);
                if turn.broke.is_none()
                    && let Some(b) = &before
                {
                    prop_assert_eq!(&sent[..b.len()], &b[..]);
                }
            }
            summary_text = now;
            before = Some(sent);
        }
        let problems = checking.problems.lock().unwrap().clone();
        prop_assert!(problems.is_empty(), "{problems:?}");
    }
}
