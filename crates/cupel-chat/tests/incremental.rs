//! A session carried turn by turn in memory (which reuses what it knows
//! from its previous turn: the kept prefix's block hashes, the shortened
//! forms it made) against the same turns served from scratch, each one
//! resumed from the state the previous turn stored (issue 54's property
//! test). For random conversations, both formats, with and without ageing:
//! the same window, breakpoints, tokens, kept prefix, cut and turn number,
//! or the same failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_chat::{
    AgeToolResults, CacheProfile, CacheSession, Format, MAX_CACHE_MARKERS, MemorySessionStore,
    Message, SessionPlan, Trim, serve_turn,
};
use proptest::prelude::*;

/// One step of a generated conversation.
#[derive(Debug, Clone)]
enum Step {
    User(usize),
    Assistant(usize),
    /// A call and its result of `n` words (OpenAI shape).
    Tool(usize),
    /// A request: the transcript so far is served.
    Turn,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..80).prop_map(Step::User),
        3 => (1usize..80).prop_map(Step::Assistant),
        2 => (1usize..200).prop_map(Step::Tool),
        3 => Just(Step::Turn),
    ]
}

fn words(n: usize, tag: usize) -> String {
    let mut s = format!("m{tag}");
    for i in 0..n {
        s.push_str(if i % 3 == 0 { " alpha" } else { " beta gamma" });
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn a_live_session_and_one_resumed_every_turn_agree(
        steps in proptest::collection::vec(step(), 1..60),
        anthropic in any::<bool>(),
        max_tokens in 200i64..3_000,
        aging in any::<bool>(),
    ) {
        let format = if anthropic { Format::Anthropic } else { Format::OpenAi };
        let mut opts = Trim::new(format, max_tokens);
        if aging {
            opts = opts.age_tool_results(AgeToolResults::new(1));
        }
        let profile = if anthropic { CacheProfile::anthropic() } else { CacheProfile::openai() };
        let mut live = CacheSession::new(opts.clone(), profile.clone());
        let plan = SessionPlan::new(opts, profile);
        let store = MemorySessionStore::new();
        let mut transcript = vec![Message::system(words(12, 0))];
        for (i, s) in steps.iter().enumerate() {
            match *s {
                Step::User(n) => transcript.push(Message::user(words(n, i))),
                Step::Assistant(n) => transcript.push(Message::assistant(words(n, i))),
                Step::Tool(n) if !anthropic => {
                    let id = format!("call_{i}");
                    transcript.push(Message::assistant_calls([(id.as_str(), "look", "{}")]));
                    transcript.push(Message::tool(id, words(n, i)));
                }
                Step::Tool(n) => transcript.push(Message::assistant(words(n, i))),
                Step::Turn => {
                    let a = live.next(&transcript);
                    let b = serve_turn(&store, "c", &plan, &transcript);
                    match (a, b) {
                        (Ok(a), Ok(b)) => {
                            let b = b.turn;
                            prop_assert_eq!(&a.positions, &b.positions);
                            prop_assert_eq!(&a.breakpoints, &b.breakpoints);
                            prop_assert_eq!(a.window_tokens, b.window_tokens);
                            prop_assert_eq!(a.kept_prefix, b.kept_prefix);
                            prop_assert_eq!(a.cut, b.cut);
                            prop_assert_eq!(a.turn, b.turn);
                            prop_assert_eq!(a.cloned_messages(), b.cloned_messages());
                            prop_assert!(a.window_tokens <= max_tokens);
                            prop_assert!(a.breakpoints.len() <= MAX_CACHE_MARKERS);
                        }
                        (Err(_), Err(_)) => {}
                        (a, b) => prop_assert!(
                            false,
                            "live and resumed disagree: {:?} vs {:?}",
                            a.map(|t| t.positions),
                            b.map(|t| t.turn.positions)
                        ),
                    }
                }
            }
        }
    }
}
