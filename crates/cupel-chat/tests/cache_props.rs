//! Property tests of the cache session over random agent transcripts: the
//! next window repeats the previous one up to the first unit removed, never
//! exceeds the budget, and never falls under the low-water mark once the
//! history is above it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_chat::{
    AgeToolResults, CacheProfile, CacheSession, LowWater, Message, MessageCounter, Role, Trim,
    request_ends,
};
use proptest::prelude::*;
use serde_json::{Value, json};

struct Fixed;

impl MessageCounter for Fixed {
    fn count_message(&self, m: &Message) -> i64 {
        // An aged result's placeholder, "[tool result of N tokens
        // omitted]", counts 7; everything else its `t`.
        if m.text().starts_with("[tool result of") {
            return 7;
        }
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn count_request(&self, _tools: Option<&Value>) -> i64 {
        3
    }
    fn describe(&self) -> String {
        "fixed".into()
    }
}

/// One exchange: user tokens, tool steps (call tokens, result tokens), reply tokens.
type Exchange = (i64, Vec<(i64, Vec<i64>)>, i64);

fn exchange() -> impl Strategy<Value = Exchange> {
    (
        1i64..30,
        prop::collection::vec((1i64..20, prop::collection::vec(1i64..60, 1..3)), 0..4),
        1i64..30,
    )
}

fn build(system: i64, exchanges: &[Exchange]) -> Vec<Message> {
    let parse =
        |j: Value| cupel_chat::message_from_value(j, cupel_chat::Format::OpenAi, "m").unwrap();
    let mut v = vec![parse(
        json!({"role": "system", "content": "rules", "t": system}),
    )];
    let mut id = 0;
    for (k, (user, steps, reply)) in exchanges.iter().enumerate() {
        v.push(parse(
            json!({"role": "user", "content": format!("u{k}"), "t": user}),
        ));
        for (call, results) in steps {
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
                json!({"role": "assistant", "content": null, "t": call, "tool_calls": calls}),
            ));
            for (i, r) in ids.iter().zip(results) {
                v.push(parse(
                    json!({"role": "tool", "tool_call_id": i, "content": format!("r{i}"), "t": r}),
                ));
            }
        }
        v.push(parse(
            json!({"role": "assistant", "content": format!("a{k}"), "t": reply}),
        ));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn windows_keep_their_prefix_and_budget(
        system in 1i64..20,
        exchanges in prop::collection::vec(exchange(), 1..25),
        // The largest exchange is 29 + 3 * (19 + 2 * 59) + 29 = 469 tokens.
        max in 520i64..1_200,
        fraction in prop::option::of(0.1f64..1.0),
        aged in any::<bool>(),
    ) {
        let all = build(system, &exchanges);
        let low = fraction.map_or(LowWater::Auto, LowWater::Fraction);
        let mut opts = Trim::openai(max).counter(Fixed);
        if aged {
            opts = opts.age_tool_results(AgeToolResults::new(1));
        }
        let mut s = CacheSession::new(opts, CacheProfile::anthropic()).low_water(low);
        let mut prev: Option<Vec<usize>> = None;
        let mut prev_sent: Vec<Message> = Vec::new();
        for end in request_ends(&all) {
            let req = &all[..end];
            let w = s.next(req).unwrap();
            prop_assert!(w.window_tokens <= max, "{} > {}", w.window_tokens, max);
            prop_assert_eq!(w.positions[0], 0);
            // The system prompt; while the request holds one user message
            // followed by tool calls (a one-task agent loop so far), that
            // task is pinned too (`Trim::pin_first_user`, automatic).
            let users = req.iter().filter(|m| m.role == Role::User).count();
            let loop_so_far = users == 1 && req.iter().any(|m| m.tool_calls.is_some());
            prop_assert_eq!(w.pinned, if loop_so_far { 2 } else { 1 });
            // No holes: the conversation is a run of consecutive positions
            // ending with the request's last message.
            let conv = &w.positions[1..];
            prop_assert!(conv.windows(2).all(|p| p[1] == p[0] + 1));
            prop_assert_eq!(conv.last().copied(), Some(end - 1));
            // The conversation starts with a user message.
            prop_assert_eq!(&req[conv[0]].role, &Role::User);
            if let Some(p) = &prev {
                match w.cut {
                    None => {
                        // The whole previous window, then appended messages.
                        prop_assert_eq!(w.kept_prefix, p.len());
                        prop_assert_eq!(&w.positions[..p.len()], &p[..]);
                        // Byte for byte as sent: shortened results stay
                        // shortened, nothing new is shortened between cuts.
                        prop_assert_eq!(&w.cloned_messages()[..p.len()], &prev_sent[..]);
                        prop_assert!(w.shortened.keys().all(|k| p.contains(k)));
                    }
                    Some(_) => {
                        // Kept up to the first unit removed: the pinned
                        // prompt; the rest is a later suffix.
                        prop_assert_eq!(w.kept_prefix, 1);
                        prop_assert!(conv[0] > p[1]);
                    }
                }
            }
            // Never under the low-water mark once the history is above it,
            // unless the budget forced it: the exchange just before the
            // window (the last one removed) would not fit back in.
            // Shortening never takes a window under the mark (every
            // exchange fits the budget here, so no cut is forced below it).
            if w.cut.is_some_and(|c| c.shortened > 0) {
                prop_assert!(w.window_tokens >= w.low_water);
            }
            if w.history_tokens >= w.low_water && w.window_tokens < w.low_water {
                let before = (0..conv[0]).rev().find(|&i| req[i].role == Role::User).unwrap();
                let unit: i64 = req[before..conv[0]].iter().map(|m| Fixed.count_message(m)).sum();
                prop_assert!(w.window_tokens + unit > max,
                    "{} < {} and the last removed exchange ({unit}) fits back", w.window_tokens, w.low_water);
            }
            // One row per request message; the rows in the window are the
            // window's positions, the ones removed this turn are `removed`.
            prop_assert_eq!(w.rows.len(), end);
            let in_window: Vec<usize> =
                w.rows.iter().filter(|r| r.in_window()).map(|r| r.position).collect();
            prop_assert_eq!(&in_window, &w.positions);
            let cut_now: Vec<usize> = w.rows.iter()
                .filter(|r| matches!(r.status, cupel_chat::CacheStatus::Cut { .. }))
                .map(|r| r.position)
                .collect();
            prop_assert_eq!(&cut_now, &w.removed);
            let prefix = w.rows.iter().filter(|r| matches!(
                r.status, cupel_chat::CacheStatus::Pinned | cupel_chat::CacheStatus::PinnedTask
                    | cupel_chat::CacheStatus::Prefix)).count();
            prop_assert_eq!(prefix, w.kept_prefix.max(w.pinned));
            // Only results already in the window before the last user
            // message are shortened, and only to fewer tokens.
            if !aged {
                prop_assert!(w.shortened.is_empty());
            }
            for r in w.rows.iter().filter(|r| r.sent_tokens.is_some()) {
                prop_assert_eq!(&r.message.role, &Role::Tool);
                prop_assert!(r.sent_tokens < Some(r.tokens));
            }
            prev = Some(w.positions.clone());
            prev_sent = w.cloned_messages();
        }
    }
}

/// A content block of an Anthropic message, with or without the caller's
/// marker: text; an image; a document of text blocks (`source.content`,
/// each maybe marked); in a user message, a tool result whose content is
/// text blocks (each maybe marked).
#[derive(Debug, Clone)]
enum Piece {
    Text(bool),
    Image(bool),
    Document(bool, Vec<bool>),
    Result(bool, Vec<bool>),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        any::<bool>().prop_map(Piece::Text),
        any::<bool>().prop_map(Piece::Image),
        (any::<bool>(), prop::collection::vec(any::<bool>(), 0..3))
            .prop_map(|(m, inner)| Piece::Document(m, inner)),
        (any::<bool>(), prop::collection::vec(any::<bool>(), 0..3))
            .prop_map(|(m, inner)| Piece::Result(m, inner)),
    ]
}

fn marked(mut block: Value, mark: bool) -> Value {
    if mark {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    block
}

fn texts(marks: &[bool]) -> Value {
    Value::Array(
        marks
            .iter()
            .enumerate()
            .map(|(i, &m)| marked(json!({"type": "text", "text": format!("t{i}")}), m))
            .collect(),
    )
}

/// A message's content: a plain string (`None`) or its blocks. An
/// assistant message gets a `tool_use` for each tool result of the user
/// message after it (`calls`); a user message's results answer them.
fn content(pieces: &Option<Vec<Piece>>, user: bool, k: usize) -> Value {
    let Some(pieces) = pieces else {
        return json!(format!("message {k}"));
    };
    let mut blocks = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let id = format!("toolu_{k}_{i}");
        blocks.push(match p {
            Piece::Text(m) => marked(json!({"type": "text", "text": format!("m{k}")}), *m),
            Piece::Image(m) => marked(
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}),
                *m,
            ),
            Piece::Document(m, inner) => marked(
                json!({"type": "document", "source": {"type": "content", "content": texts(inner)}}),
                *m,
            ),
            Piece::Result(m, inner) if user => marked(
                json!({"type": "tool_result", "tool_use_id": id, "content": texts(inner)}),
                *m,
            ),
            // In an assistant message, a call (its input holds a key named
            // cache_control: data, never a marker).
            Piece::Result(m, _) => marked(
                json!({"type": "tool_use", "id": id, "name": "f", "input": {"cache_control": 1}}),
                *m,
            ),
        });
    }
    Value::Array(blocks)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Wherever the caller's markers sit and whatever breakpoints are
    /// asked for, the request carries at most 4 markers, all of them on
    /// the last block of the system prompt or of a message.
    #[test]
    fn a_request_never_carries_more_than_four_markers(
        top in any::<bool>(),
        tools in prop::collection::vec(any::<bool>(), 0..4),
        system in prop::option::of(prop::collection::vec(any::<bool>(), 1..3)),
        messages in prop::collection::vec(
            prop::option::of(prop::collection::vec(piece(), 1..4)), 1..9),
        breakpoints in prop::collection::vec(0usize..12, 0..9),
        planned in any::<bool>(),
    ) {
        let mut body = json!({"model": "claude", "max_tokens": 100});
        if top {
            body["cache_control"] = json!({"type": "ephemeral"});
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.iter().enumerate().map(|(i, &m)| marked(
                json!({"name": format!("tool{i}"), "input_schema": {"type": "object"}}), m)).collect());
        }
        if let Some(s) = &system {
            // Long enough (about 2,000 estimated tokens) for the planner to
            // mark it: the minimum prefix is 1,024.
            let mut blocks = texts(s);
            blocks[0]["text"] = json!("Rules. ".repeat(1_000));
            body["system"] = blocks;
        }
        body["messages"] = Value::Array(messages.iter().enumerate().map(|(k, c)| {
            let user = k % 2 == 0;
            json!({"role": if user { "user" } else { "assistant" }, "content": content(c, user, k)})
        }).collect());
        let doc = cupel_chat::Transcript::parse_as(&body.to_string(), cupel_chat::Format::Anthropic).unwrap();
        let profile = CacheProfile::anthropic();
        // Either the breakpoints drawn, or the ones the trim plans for the
        // window (what `cupel chat --cache-breakpoints` writes).
        let bps = if planned {
            match cupel_chat::trim_transcript(&doc, &Trim::anthropic(1_000_000)) {
                Ok((_, out)) => out.breakpoints(doc.format(), &profile),
                Err(_) => breakpoints.clone(),
            }
        } else {
            breakpoints.clone()
        };
        let v = cupel_chat::apply_breakpoints(&doc, &bps, &profile);
        let paths = cupel_chat::cache_marker_paths(&v);
        prop_assert!(paths.len() <= cupel_chat::MAX_CACHE_MARKERS, "{paths:?}");
        prop_assert_eq!(cupel_chat::count_cache_markers(&v), paths.len());
        // Never more than the distinct breakpoints inside the window.
        let n = doc.messages().len();
        let mut asked: Vec<usize> = bps.iter().copied().filter(|&b| (1..=n).contains(&b)).collect();
        asked.sort_unstable();
        asked.dedup();
        prop_assert!(paths.len() <= asked.len(), "{paths:?} for {asked:?}");
        // Each on the last block of the system prompt or of a message.
        for p in &paths {
            let parts: Vec<&str> = p.split('/').collect();
            let (list, i) = match parts.as_slice() {
                ["", "system", i] => (&v["system"], i),
                ["", "messages", m, "content", i] => (&v["messages"][m.parse::<usize>().unwrap()]["content"], i),
                _ => return Err(TestCaseError::fail(format!("marker at {p}"))),
            };
            prop_assert_eq!(i.parse::<usize>().unwrap() + 1, list.as_array().map_or(0, Vec::len), "{}", p);
        }
        // The caller's data (a tool_use input's `cache_control` key) is
        // left alone.
        let data = |v: &Value| v.to_string().matches("\"cache_control\":1").count();
        prop_assert_eq!(data(&v), data(&body));
    }
}
