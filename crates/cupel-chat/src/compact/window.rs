//! Compaction in the stateless trim: hold the bound back, trim, fold what
//! the trim evicted into the running summary, and place it.

use std::collections::BTreeSet;

use super::{AsyncSummarizer, Compaction, Evicted, Folding, SummaryReport};
use crate::error::ChatError;
use crate::message::Message;
use crate::trim::{Decision, Failed, Trim, Trimmed, run};

/// Whether a trim decision evicts the message (left out for lack of room
/// or by a provider rule, as opposed to orphan tool traffic, which is
/// never summarised).
pub(crate) fn evicts(d: &Decision) -> bool {
    match d {
        Decision::DoesNotFit { .. }
        | Decision::OlderThanCut { .. }
        | Decision::StartRule { .. }
        | Decision::EndRule => true,
        Decision::Partial { dropped, .. } => evicts(dropped),
        _ => false,
    }
}

/// Groups `positions` (ascending) into units by `unit_of`, and keeps only
/// units whose tool calls are all answered inside the evicted set: a call
/// whose result is not evicted with it is never summarised (the unit
/// stays out of the summary and the fold says nothing of it).
pub(crate) fn units<'a>(
    messages: &'a [Message],
    positions: &[usize],
    unit_of: impl Fn(usize) -> Option<usize>,
) -> Vec<Evicted<'a>> {
    let mut out: Vec<Evicted<'a>> = Vec::new();
    let mut last_unit = None;
    for &p in positions {
        let u = unit_of(p);
        match out.last_mut() {
            Some(e) if u.is_some() && u == last_unit => {
                e.positions.push(p);
                e.messages.push(&messages[p]);
            }
            _ => out.push(Evicted {
                positions: vec![p],
                messages: vec![&messages[p]],
            }),
        }
        last_unit = u;
    }
    let answered: BTreeSet<&str> = out
        .iter()
        .flat_map(|e| e.messages.iter().flat_map(|m| m.answered_ids()))
        .collect();
    out.retain(|e| {
        e.messages
            .iter()
            .flat_map(|m| m.calls())
            .all(|c| answered.contains(c.id.as_str()))
            && e.messages.iter().all(|m| m.legacy_call().is_none())
    });
    out
}

/// The fold of a finished trim.
fn folding<'a>(
    messages: &'a [Message],
    opts: &Trim,
    c: &'a Compaction,
    out: &Trimmed<'a>,
) -> Result<Folding<'a>, ChatError> {
    let after = c.previous.as_ref().and_then(|p| p.through);
    let evicted_pos: Vec<usize> = out
        .rows
        .iter()
        .filter(|r| evicts(&r.decision) && after.is_none_or(|t| r.position > t))
        .map(|r| r.position)
        .collect();
    let unit_of = |p: usize| out.pieces.iter().find(|x| x.msg == p).and_then(|x| x.unit);
    let evicted = units(messages, &evicted_pos, unit_of);
    let evicted_tokens = evicted
        .iter()
        .flat_map(|e| e.positions.iter())
        .map(|&p| out.rows[p].tokens)
        .fold(0i64, i64::saturating_add);
    let at = out
        .rows
        .iter()
        .filter(|r| r.decision.is_kept())
        .take_while(|r| r.decision.is_pinned())
        .count();
    let pinned: Vec<Message> = out.messages[..at].iter().map(|m| (*m).clone()).collect();
    Ok(Folding {
        format: opts.format(),
        counter: opts.make_counter()?,
        pinned,
        compaction: c,
        previous: c.previous.clone(),
        evicted,
        evicted_tokens,
        turn: None,
        at,
    })
}

/// The trim without its compaction, at the budget less the reserve.
fn inner<'a>(
    messages: &'a [Message],
    opts: &Trim,
    c: &Compaction,
) -> Result<Trimmed<'a>, Failed<'a>> {
    let max = opts.max_tokens();
    if max > 0 && c.max_tokens >= max {
        return Err(ChatError::SummaryReserve {
            reserve: c.max_tokens,
            max_tokens: max,
        }
        .into());
    }
    let mut plain = opts.clone().with_max_tokens(max - c.max_tokens);
    plain.compaction = None;
    let mut out = run::run(messages, &plain).map_err(|mut f| {
        // Said against the caller's budget: what the reserve took is named.
        if let ChatError::PinnedOverBudget {
            total, max_tokens, ..
        } = &mut f.error
        {
            if *total <= max {
                f.error = ChatError::SummaryReserve {
                    reserve: c.max_tokens,
                    max_tokens: max,
                };
            } else {
                *max_tokens = max;
            }
        }
        f
    })?;
    out.tokens.max_tokens = max;
    Ok(out)
}

/// Puts the fold's report into the trim.
fn attach(out: &mut Trimmed<'_>, report: SummaryReport) {
    let tokens = report.tokens();
    out.tokens.summary = tokens;
    out.tokens.window = out.tokens.window.saturating_add(tokens);
    out.summary = Some(report);
}

/// [`trim`](crate::trim) with compaction (blocking).
pub(crate) fn trim_compacted<'a>(
    messages: &'a [Message],
    opts: &Trim,
    c: &Compaction,
) -> Result<Trimmed<'a>, Failed<'a>> {
    let mut out = inner(messages, opts, c)?;
    let report = folding(messages, opts, c, &out)?.run();
    attach(&mut out, report);
    Ok(out)
}

/// [`trim`](crate::trim) with compaction by an async summariser: the
/// window of [`Trim::summarize`]'s options (the bound and the previous
/// summary of its [`Compaction`]), folded by `summarizer`.
///
/// ```
/// use cupel_chat::{AsyncSummarizer, Compaction, Message, SummaryFuture, SummaryInput, Trim,
///     trim_summarized_async};
/// struct Fixed;
/// impl AsyncSummarizer for Fixed {
///     fn summarize<'a>(&'a self, input: &'a SummaryInput<'a>) -> SummaryFuture<'a> {
///         let n = input.positions().len();
///         Box::pin(async move { Ok(format!("{n} messages about parcels.")) })
///     }
/// }
/// let msgs = vec![
///     Message::user("word ".repeat(200)),
///     Message::assistant("ok"),
///     Message::user("next"),
/// ];
/// let opts = Trim::openai(120).summarize(Compaction::for_async().max_tokens(40)?);
/// let out = futures_lite_block_on(trim_summarized_async(&msgs, &opts, &Fixed))?;
/// assert_eq!(out.summary.unwrap().summary.unwrap().text(), "2 messages about parcels.");
/// # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     use std::task::{Context, Poll, Waker};
/// #     let mut f = std::pin::pin!(f);
/// #     let mut cx = Context::from_waker(Waker::noop());
/// #     loop { if let Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`trim`](crate::trim); [`ChatError::SummaryReserve`] when the
/// bound is not below the budget.
pub async fn trim_summarized_async<'a>(
    messages: &'a [Message],
    opts: &Trim,
    summarizer: &dyn AsyncSummarizer,
) -> Result<Trimmed<'a>, ChatError> {
    let Some(c) = opts.compaction.as_ref() else {
        return run::run(messages, opts).map_err(|f| f.error);
    };
    let mut out = inner(messages, opts, c).map_err(|f| f.error)?;
    let report = folding(messages, opts, c, &out)?
        .run_async(summarizer)
        .await;
    attach(&mut out, report);
    Ok(out)
}

/// The summary of a trim, when it has one: (index in the window, message).
pub(crate) fn placed<'t>(out: &'t Trimmed<'_>) -> Option<(usize, &'t Message)> {
    let r = out.summary.as_ref()?;
    Some((r.at, r.message.as_ref()?))
}
