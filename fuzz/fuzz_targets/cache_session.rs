//! (i) Cache sessions through a session store: an arbitrary conversation
//! grown turn by turn, each turn served twice — by one live `CacheSession`
//! (which plans a grown transcript from its recent end, with `next` and,
//! on every other turn, `next_appended`) and by `serve_turn` on a
//! `MemorySessionStore`, which resumes every turn from the serialised state
//! of the previous one and plans the whole transcript. Asserts no panic; that
//! the resumed session gives the live one's window, breakpoints and tokens
//! (or fails where it fails); that every window is within the budget; and
//! that no turn carries more than Anthropic's 4 cache markers.
//!
//! OpenAI inputs count with the real `o200k_base` counter behind a memo
//! keyed by the message (the generated messages repeat across inputs), so
//! the executions go to the session logic rather than to the BPE regex; the
//! counts are the real counter's.
#![no_main]

use arbitrary::Arbitrary;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cupel_chat::{
    CacheProfile, CacheSession, MAX_CACHE_MARKERS, MemorySessionStore, Message, MessageCounter,
    OpenAiCounter, SessionPlan, Trim, serve_turn,
};
use libfuzzer_sys::fuzz_target;

/// The real OpenAI counter, remembered per message.
struct Memo {
    real: OpenAiCounter,
    seen: Mutex<HashMap<String, i64>>,
}

impl MessageCounter for Memo {
    fn count_message(&self, message: &Message) -> i64 {
        let key = format!("{message:?}");
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen
            .entry(key)
            .or_insert_with(|| self.real.count_message(message))
    }
    fn count_request(&self, tools: Option<&serde_json::Value>) -> i64 {
        self.real.count_request(tools)
    }
    fn describe(&self) -> String {
        self.real.describe()
    }
}

fn memo() -> &'static std::sync::Arc<Memo> {
    static MEMO: OnceLock<std::sync::Arc<Memo>> = OnceLock::new();
    MEMO.get_or_init(|| {
        std::sync::Arc::new(Memo {
            real: OpenAiCounter::new("o200k_base").expect("o200k_base is built in"),
            seen: Mutex::new(HashMap::new()),
        })
    })
}

#[derive(Arbitrary, Debug)]
enum Step {
    /// A user message of `n` words.
    User(u8),
    /// An assistant answer of `n` words.
    Assistant(u8),
    /// An assistant call (OpenAI only) and its result of `n` words.
    Tool(u8),
    /// A request: the transcript so far is served.
    Turn,
}

#[derive(Arbitrary, Debug)]
struct Input {
    anthropic: bool,
    budget: u16,
    system: u8,
    steps: Vec<Step>,
}

fn words(n: u8, tag: usize) -> String {
    let mut s = format!("m{tag}");
    for i in 0..n {
        s.push_str(if i % 3 == 0 { " alpha" } else { " beta gamma" });
    }
    s
}

fn build(anthropic: bool, budget: i64) -> (Trim, CacheProfile) {
    if anthropic {
        (Trim::anthropic(budget), CacheProfile::anthropic())
    } else {
        (
            Trim::openai(budget).counter(memo().clone()),
            CacheProfile::openai(),
        )
    }
}

fuzz_target!(|input: Input| {
    let max_tokens = 50 + i64::from(input.budget % 4_000);
    let (opts, profile) = build(input.anthropic, max_tokens);
    let mut live = CacheSession::new(opts.clone(), profile.clone());
    let plan = SessionPlan::new(opts, profile);
    let store = MemorySessionStore::new();
    let mut transcript = vec![Message::system(words(input.system, 0))];
    let mut turns = 0usize;
    for (i, step) in input.steps.iter().take(64).enumerate() {
        match *step {
            Step::User(n) => transcript.push(Message::user(words(n, i))),
            Step::Assistant(n) => transcript.push(Message::assistant(words(n, i))),
            Step::Tool(n) if !input.anthropic => {
                let id = format!("call_{i}");
                transcript.push(Message::assistant_calls([(id.as_str(), "look", "{}")]));
                transcript.push(Message::tool(id, words(n, i)));
            }
            Step::Tool(_) => {}
            Step::Turn => {
                turns += 1;
                let a = if turns % 2 == 0 {
                    live.next_appended(&transcript)
                } else {
                    live.next(&transcript)
                };
                let b = serve_turn(&store, "c", &plan, &transcript);
                match (a, b) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.positions, b.turn.positions, "resumed window differs");
                        assert_eq!(a.breakpoints, b.turn.breakpoints, "breakpoints differ");
                        assert_eq!(a.window_tokens, b.turn.window_tokens);
                        assert_eq!(a.turn, b.turn.turn);
                        assert_eq!(a.rows, b.turn.rows, "rows differ");
                        assert_eq!(a.history_tokens, b.turn.history_tokens);
                        assert!(a.window_tokens <= max_tokens, "over the budget");
                        assert!(a.breakpoints.len() <= MAX_CACHE_MARKERS);
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!(
                        "live and resumed disagree: {:?} vs {:?}",
                        a.map(|t| t.positions),
                        b.map(|t| t.turn.positions)
                    ),
                }
            }
        }
    }
});
