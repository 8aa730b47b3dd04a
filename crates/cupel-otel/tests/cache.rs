//! Cache-aware chat turns recorded on a real span, read back from the SDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_chat::{CacheProfile, CacheSession, LowWater, Message, MessageCounter, Trim};
use opentelemetry::Value;
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// Every message counts 10 tokens, no request overhead.
struct Ten;
impl MessageCounter for Ten {
    fn count_message(&self, _: &Message) -> i64 {
        10
    }
    fn describe(&self) -> String {
        "ten".into()
    }
}

fn attr(span: &SpanData, key: &str) -> Value {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
        .unwrap_or_else(|| panic!("no attribute {key}"))
}

#[test]
fn a_cut_turn_is_on_the_model_call_span() {
    // System + 6 exchanges of 10-token messages; budget 100, low-water 50.
    let mut all = vec![Message::system("Be brief.")];
    for i in 1..=6 {
        all.push(Message::user(format!("question {i}")));
        all.push(Message::assistant(format!("answer {i}")));
    }
    let mut session = CacheSession::new(
        Trim::openai(100).counter(Ten),
        CacheProfile::anthropic().min_prefix_tokens(15),
    )
    .low_water(LowWater::Tokens(50));
    // Requests end before each assistant message: 2, 4, ..., 12 messages.
    for end in [2, 4, 6, 8, 10] {
        session.next(&all[..end]).unwrap();
    }
    // Turn 6: 12 messages, 10 + 110 = 120 > 100. The conversation (110)
    // must lose exchange 1 (-> 90, fits), and may lose 2 and 3 (-> 70, 50,
    // both >= the 40 left for it under the mark); exchange 4 would leave 30.
    let turn = session.next(&all[..12]).unwrap();

    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let mut span = provider.tracer("app").start("chat.completion");
    cupel_otel::record_attributes(&mut span, turn.attributes());
    span.end();
    let data = exporter.get_finished_spans().unwrap().remove(0);

    assert_eq!(attr(&data, "cupel.cache.turn"), Value::I64(6));
    // Window: the system prompt and U4 A4 U5 A5 U6 = 6 messages, 60 tokens.
    assert_eq!(attr(&data, "cupel.cache.window_tokens"), Value::I64(60));
    assert_eq!(attr(&data, "cupel.cache.max_tokens"), Value::I64(100));
    assert_eq!(attr(&data, "cupel.cache.low_water_tokens"), Value::I64(50));
    // Only the system prompt is unchanged; 6 messages (exchanges 1-3) cut.
    assert_eq!(
        attr(&data, "cupel.cache.kept_prefix_messages"),
        Value::I64(1)
    );
    assert_eq!(attr(&data, "cupel.cache.removed_messages"), Value::I64(6));
    // The 10-token system prompt is under the 15-token minimum, so nothing
    // was cached for it: the whole 60-token window is written at its end.
    assert_eq!(attr(&data, "cupel.cache.read_tokens"), Value::I64(0));
    assert_eq!(attr(&data, "cupel.cache.written_tokens"), Value::I64(60));
    assert_eq!(attr(&data, "cupel.cache.uncached_tokens"), Value::I64(0));
    let Value::String(text) = attr(&data, "cupel.cache.explanation") else {
        panic!("explanation is not a string");
    };
    assert!(
        text.as_str().starts_with(
            // Exchanges 1-3 hold 3 * 20 = 60 tokens; exchange 4 (U4 A4, 20)
            // stays: 60 - 20 = 40 < 50.
            "turn 6: window reached 120 of 100; removed exchanges 1–3 (60 tokens) to 60 tokens \
             (low-water mark 50); exchange 4 (20 tokens) stays: without it the window would \
             fall under the mark; 60 of 100 tokens"
        ),
        "{}",
        text.as_str()
    );
}
