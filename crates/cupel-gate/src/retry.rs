//! The seed's retry loop as a component: gate → `on_over` → compact the
//! existing context → gate again, under a [`LoopGuard`].
//!
//! The gate itself never changes the context on Over; making room is the
//! caller's job (in the original, a model call that summarises the context,
//! then a step that replaces the context with the summary). [`ContextGate::admit_with_retry`]
//! runs that loop with a caller-supplied [`ContextCompactor`] and ends it in
//! one of three ways: the batch is admitted, the guard's attempts are used
//! up, or a compaction did not shrink the context (so another one would not
//! either).

use std::fmt;
use std::sync::Arc;

use cupel_core::CupelError;

use super::{Admitted, ContextGate, GateError, GateOutcome, GateState, InboxMessage, Over};

/// Makes the existing context smaller when the gate answers Over: the
/// seed's `call_summarize_context` + `set_context_from_summary`.
///
/// One required method. An implementation may summarise with a model, drop
/// the oldest blocks, or compact each block; it must not panic, and it
/// should return fewer tokens than it was given (the loop stops when it does
/// not).
pub trait ContextCompactor: Send + Sync {
    /// The new context for `context`, which did not leave room for a batch
    /// of `pending` retrieval nodes.
    ///
    /// # Errors
    /// Any error of the compactor's own (a failed model call, ...); the loop
    /// stops and returns it.
    fn compact_context(
        &self,
        context: &[String],
        pending: &GateState,
    ) -> Result<Vec<String>, CupelError>;
}

impl<T: ContextCompactor + ?Sized> ContextCompactor for &T {
    fn compact_context(
        &self,
        context: &[String],
        pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        (**self).compact_context(context, pending)
    }
}
impl<T: ContextCompactor + ?Sized> ContextCompactor for Box<T> {
    fn compact_context(
        &self,
        context: &[String],
        pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        (**self).compact_context(context, pending)
    }
}
impl<T: ContextCompactor + ?Sized> ContextCompactor for Arc<T> {
    fn compact_context(
        &self,
        context: &[String],
        pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        (**self).compact_context(context, pending)
    }
}

/// A [`ContextCompactor`] from a function over the context blocks (a model
/// call that summarises, for one).
///
/// ```
/// use cupel_core::CupelError;
/// use cupel_gate::{ContextCompactor, GateState, SummarizeWith};
/// // Keeps the last block only (a real one would ask a model for a summary).
/// let keep_last = SummarizeWith(|ctx: &[String]| {
///     Ok::<_, CupelError>(ctx.last().cloned().into_iter().collect())
/// });
/// let ctx = vec!["a b".to_string(), "c".to_string()];
/// let pending = GateState::new(ctx.clone(), Vec::new());
/// assert_eq!(keep_last.compact_context(&ctx, &pending)?, ["c"]);
/// # Ok::<(), CupelError>(())
/// ```
pub struct SummarizeWith<F>(pub F);

impl<F> fmt::Debug for SummarizeWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SummarizeWith(..)")
    }
}

impl<F> ContextCompactor for SummarizeWith<F>
where
    F: Fn(&[String]) -> Result<Vec<String>, CupelError> + Send + Sync,
{
    fn compact_context(
        &self,
        context: &[String],
        _pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        (self.0)(context)
    }
}

/// The prefix that marks the running summary block of a context compacted
/// by [`RunningSummary`].
pub const RUNNING_SUMMARY_PREFIX: &str = "[summary] ";

/// A [`ContextCompactor`] that keeps a running summary (the hook of
/// `spec/22-variants.md`, "Summaries", for the gate's loop): it keeps the
/// newest `keep` blocks and hands the older ones, with the previous summary,
/// to `summarise`, whose text becomes the first block (marked with
/// [`RUNNING_SUMMARY_PREFIX`]).
///
/// The previous summary is the first block when it carries the prefix; it
/// is passed on its own, never as a block to summarise, so a summary is
/// always made from one previous summary and raw blocks. When no block is
/// older than the newest `keep`, the oldest block is summarised instead, so
/// that every call makes progress while blocks remain.
///
/// ```
/// use cupel_core::CupelError;
/// use cupel_gate::{ContextCompactor, GateState, RunningSummary};
/// let fold = RunningSummary::new(2, |previous: Option<&str>, old: &[String]| {
///     // A real one would ask a model; this one lists what it folded.
///     Ok::<_, CupelError>(format!("{}+{}", previous.unwrap_or("-"), old.join(",")))
/// });
/// let ctx: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
/// let pending = GateState::new(ctx.clone(), Vec::new());
/// let once = fold.compact_context(&ctx, &pending)?;
/// assert_eq!(once, ["[summary] -+a,b", "c", "d"]);
/// let twice = fold.compact_context(&once, &pending)?;
/// assert_eq!(twice, ["[summary] -+a,b+c", "d"]);
/// # Ok::<(), CupelError>(())
/// ```
pub struct RunningSummary<F> {
    keep: usize,
    summarise: F,
}

impl<F> RunningSummary<F> {
    /// Keeps the newest `keep` blocks; `summarise(previous, older_blocks)`
    /// writes the new summary.
    pub fn new(keep: usize, summarise: F) -> Self {
        Self { keep, summarise }
    }
}

impl<F> fmt::Debug for RunningSummary<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningSummary")
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

impl<F> ContextCompactor for RunningSummary<F>
where
    F: Fn(Option<&str>, &[String]) -> Result<String, CupelError> + Send + Sync,
{
    fn compact_context(
        &self,
        context: &[String],
        _pending: &GateState,
    ) -> Result<Vec<String>, CupelError> {
        let (previous, blocks) = match context.split_first() {
            Some((first, rest)) if first.starts_with(RUNNING_SUMMARY_PREFIX) => {
                (first.get(RUNNING_SUMMARY_PREFIX.len()..), rest)
            }
            _ => (None, context),
        };
        if blocks.is_empty() {
            // Nothing left to fold: the loop sees no progress and stops.
            return Ok(context.to_vec());
        }
        let evict = blocks.len().saturating_sub(self.keep).max(1);
        let (old, newest) = blocks.split_at(evict);
        let text = (self.summarise)(previous, old)?;
        let mut out = Vec::with_capacity(1 + newest.len());
        out.push(format!("{RUNNING_SUMMARY_PREFIX}{text}"));
        out.extend_from_slice(newest);
        Ok(out)
    }
}

/// The seed's `loop_guard` for the retry loop: at most this many gate calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoopGuard {
    max_attempts: usize,
}

impl LoopGuard {
    /// A guard allowing `max_attempts` gate calls (so at most
    /// `max_attempts - 1` compactions).
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when `max_attempts` is 0: the gate
    /// must be asked at least once.
    pub fn new(max_attempts: usize) -> Result<Self, CupelError> {
        if max_attempts == 0 {
            return Err(CupelError::InvalidArgument(
                "loop guard: max_attempts must be >= 1 (got 0); the gate must be asked at least once"
                    .to_string(),
            ));
        }
        Ok(Self { max_attempts })
    }

    /// The maximum number of gate calls.
    pub fn max_attempts(&self) -> usize {
        self.max_attempts
    }
}

/// Why the loop stopped without admitting the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GaveUp {
    /// Every attempt the guard allows was made.
    MaxAttempts {
        /// The guard's limit.
        max_attempts: usize,
    },
    /// A compaction returned a context of at least as many tokens as it was
    /// given: compacting again would not make room.
    NoProgress {
        /// Tokens of the context handed to the compactor.
        before: i64,
        /// Tokens of what it returned.
        after: i64,
    },
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GaveUp::MaxAttempts { max_attempts } => {
                write!(f, "the loop guard's {max_attempts} attempt(s) are used up")
            }
            GaveUp::NoProgress { before, after } => write!(
                f,
                "compaction did not shrink the context ({before} tokens before, {after} after)"
            ),
        }
    }
}

/// How the retry loop ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoopOutcome {
    /// The batch was admitted (the seed's `on_ok`).
    Admitted {
        /// The gate's admitted outcome: the new context and the report.
        admitted: Admitted,
        /// Gate calls made.
        attempts: usize,
    },
    /// The loop stopped on `on_over` (the seed's `on_deny` of the guard:
    /// carry on without the batch).
    GaveUp {
        /// The last Over, exactly as the gate handed it back: the context
        /// after the last *useful* compaction and the untouched buffer.
        over: Over,
        /// The demand messages still pending (re-enqueue them).
        inbox: Vec<InboxMessage>,
        /// Gate calls made.
        attempts: usize,
        /// Why the loop stopped.
        reason: GaveUp,
    },
}

impl LoopOutcome {
    /// Gate calls made.
    pub fn attempts(&self) -> usize {
        match self {
            LoopOutcome::Admitted { attempts, .. } | LoopOutcome::GaveUp { attempts, .. } => {
                *attempts
            }
        }
    }
}

impl ContextGate {
    /// Runs the seed's retry loop: admit; on Over hand the context to
    /// `compactor` and admit again, re-enqueueing the demand messages each
    /// Over returns, until the batch is admitted or `guard` stops the loop.
    ///
    /// The loop stops early (with [`GaveUp::NoProgress`]) when a compaction
    /// returns at least as many tokens as it was given; that useless
    /// compaction is dropped, and the state is the one the last Over handed
    /// back. Nothing is compacted once the guard has decided to stop.
    ///
    /// Every gate call emits its `MANAGE_CONTEXT_BUDGET` event (with
    /// `decision` = `on_ok` / `on_over`); the loop adds one
    /// `MANAGE_CONTEXT_BUDGET_LOOP` event when it ends, whose `outcome` is
    /// `on_ok` when the batch was admitted and `on_over` when the loop gave up.
    ///
    /// # Errors
    /// As [`admit`](Self::admit) (a pipeline misconfiguration ends the loop
    /// at once: compaction cannot fix it), or the compactor's error; either
    /// way the [`GateError`] hands back the state as it was before the
    /// failing step.
    pub fn admit_with_retry(
        &self,
        mut state: GateState,
        mut inbox: Vec<InboxMessage>,
        compactor: &dyn ContextCompactor,
        guard: LoopGuard,
    ) -> Result<LoopOutcome, GateError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let over = match self.admit(state, &inbox)? {
                GateOutcome::Admitted(admitted) => {
                    emit_loop(self.config().id(), "on_ok", attempts, None);
                    return Ok(LoopOutcome::Admitted { admitted, attempts });
                }
                GateOutcome::Over(over) => over,
            };
            inbox = over.requeue().to_vec();
            let give_up = |over: Over, inbox: Vec<InboxMessage>, reason: GaveUp| {
                emit_loop(self.config().id(), "on_over", attempts, Some(&reason));
                Ok(LoopOutcome::GaveUp {
                    over,
                    inbox,
                    attempts,
                    reason,
                })
            };
            if attempts >= guard.max_attempts {
                let reason = GaveUp::MaxAttempts {
                    max_attempts: guard.max_attempts,
                };
                return give_up(over, inbox, reason);
            }
            let before = over.report().context_tokens;
            let compacted = match compactor.compact_context(&over.state().context, over.state()) {
                Ok(c) => c,
                Err(error) => {
                    let (state, _) = over.into_parts();
                    return Err(GateError {
                        error: Box::new(error.into()),
                        state,
                    });
                }
            };
            let mut after: i128 = 0;
            for block in &compacted {
                match self.count(block) {
                    Ok(n) => after += n,
                    Err(error) => {
                        let (state, _) = over.into_parts();
                        return Err(GateError {
                            error: Box::new(error.into()),
                            state,
                        });
                    }
                }
            }
            let after = super::saturate(after);
            if after >= before {
                return give_up(over, inbox, GaveUp::NoProgress { before, after });
            }
            let (untouched, _) = over.into_parts();
            state = GateState::new(compacted, untouched.nodes);
        }
    }
}

fn emit_loop(gate_id: &str, outcome: &'static str, attempts: usize, reason: Option<&GaveUp>) {
    let reason = match reason {
        None => "",
        Some(GaveUp::MaxAttempts { .. }) => "max_attempts",
        Some(GaveUp::NoProgress { .. }) => "no_progress",
    };
    tracing::event!(
        name: "MANAGE_CONTEXT_BUDGET_LOOP",
        target: "cupel::gate",
        tracing::Level::INFO,
        gate_id = %gate_id,
        outcome,
        attempts,
        reason,
    );
}
