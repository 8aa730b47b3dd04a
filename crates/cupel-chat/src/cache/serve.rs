//! [`serve_turn`]: one turn of a conversation whose cache-session state
//! lives in a [`SessionStore`] — load, check, plan, commit.

use crate::cache::profile::CacheProfile;
use crate::cache::session::{CacheSession, CacheTurn, LowWater};
use crate::cache::state::{Planned, Replan, SessionState};
use crate::cache::store::{SessionStore, SessionStoreError};
use crate::error::ChatError;
use crate::message::Message;
use crate::trim::{Granularity, Trim};

/// How every turn of a stored session is planned: the trim options, the
/// cache profile, and what the state records (the model).
#[derive(Debug, Clone)]
pub struct SessionPlan {
    opts: Trim,
    profile: CacheProfile,
    model: Option<String>,
    low_water: LowWater,
    granularity: Option<Granularity>,
}

impl SessionPlan {
    /// Turns trimmed with `opts` and accounted with `profile`.
    pub fn new(opts: Trim, profile: CacheProfile) -> Self {
        SessionPlan {
            opts,
            profile,
            model: None,
            low_water: LowWater::Auto,
            granularity: None,
        }
    }

    /// The model the requests go to: recorded in the state, and a state
    /// planned for another model is re-planned.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The session's low-water mark ([`CacheSession::low_water`]).
    #[must_use]
    pub fn low_water(mut self, mark: LowWater) -> Self {
        self.low_water = mark;
        self
    }

    /// The session's granularity ([`CacheSession::granularity`]).
    #[must_use]
    pub fn granularity(mut self, g: Granularity) -> Self {
        self.granularity = Some(g);
        self
    }

    fn session(&self) -> CacheSession {
        let s =
            CacheSession::new(self.opts.clone(), self.profile.clone()).low_water(self.low_water);
        match self.granularity {
            Some(g) => s.granularity(g),
            None => s,
        }
    }
}

/// The old name of [`ChatError`] for stored sessions: `SessionError::Store`
/// still names [`ChatError::Store`]; `SessionError::Cache(e)` is gone (the
/// error is `e` itself).
#[deprecated(since = "0.2.0", note = "use `ChatError`, the crate's one error type")]
pub type SessionError = ChatError;

/// A committed turn.
#[derive(Debug, Clone)]
pub struct StoredTurn<'a> {
    /// The turn (window, breakpoints, usage, rows).
    pub turn: CacheTurn<'a>,
    /// The state's version after this turn's commit.
    pub version: u64,
    /// Why the stored state was not resumed (`None`: it was, or there was none).
    pub replanned: Option<Replan>,
}

/// One turn of conversation `key` on `messages` (the whole transcript so
/// far): loads the state, resumes it when it was planned for this
/// provider, model, counter and conversation (otherwise plans afresh and
/// says why in [`StoredTurn::replanned`]), makes the window and commits the
/// new state with compare-and-set on the version it loaded.
///
/// The window is to be sent only once this returns `Ok`: a conflict means
/// another replica committed this conversation meanwhile.
///
/// ```
/// use cupel_chat::{CacheProfile, MemorySessionStore, Message, SessionPlan, Trim, serve_turn};
/// let store = MemorySessionStore::new();
/// let plan = SessionPlan::new(Trim::openai(1_000), CacheProfile::openai());
/// let mut t = vec![Message::system("Be brief."), Message::user("Hi")];
/// assert_eq!(serve_turn(&store, "conv-1", &plan, &t)?.version, 1);
/// t.push(Message::assistant("Hello."));
/// t.push(Message::user("And now?"));
/// let second = serve_turn(&store, "conv-1", &plan, &t)?;
/// assert_eq!((second.version, second.turn.turn, second.turn.kept_prefix), (2, 2, 2));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::Store`] ([`SessionStoreError::Conflict`] when another
/// writer committed first; unreadable state; store unavailable);
/// otherwise as [`CacheSession::next`].
pub fn serve_turn<'a, S: SessionStore + ?Sized>(
    store: &S,
    key: &str,
    plan: &SessionPlan,
    messages: &'a [Message],
) -> Result<StoredTurn<'a>, ChatError> {
    let stored = store.load(key)?;
    serve_loaded(store, key, plan, stored, messages)
}

/// [`serve_turn`] from a state the caller loaded already (`None`: there
/// was none), committed against that state's version. A service that may
/// see one request twice (a retry, at-least-once delivery) loads the state,
/// skips a request whose turn the state already holds, and serves the rest
/// with this: a duplicate racing the original then loses the
/// compare-and-set instead of committing the turn a second time.
///
/// # Errors
/// As [`serve_turn`].
pub fn serve_loaded<'a, S: SessionStore + ?Sized>(
    store: &S,
    key: &str,
    plan: &SessionPlan,
    stored: Option<SessionState>,
    messages: &'a [Message],
) -> Result<StoredTurn<'a>, ChatError> {
    let planned = Planned::of(&plan.opts, plan.model.as_deref())?;
    let mut session = plan.session();
    let mut replanned = None;
    let expected = stored.as_ref().map(|s| s.version);
    if let Some(state) = &stored {
        session = session.turn_number(state.turn.saturating_add(1));
        match state.replan(&planned, messages) {
            Some(why) => replanned = Some(why),
            None => {
                session = session.resume(state.window_messages(key)?);
                if let Some(l) = &state.ledger {
                    session = session.resume_ledger(l.clone());
                }
            }
        }
    }
    let turn = session.next(messages)?;
    let mut state = SessionState::of_window(
        &planned,
        turn.turn,
        messages,
        plan.opts.format(),
        turn.cloned_messages(),
    );
    state.ledger = session.ledger();
    let version = store.commit(key, expected, &state)?;
    Ok(StoredTurn {
        turn,
        version,
        replanned,
    })
}

/// [`serve_turn`], re-planned after a [`SessionStoreError::Conflict`] up to
/// `attempts` times in all (at least once).
///
/// # Errors
/// As [`serve_turn`]; the last conflict when every attempt lost.
pub fn serve_turn_retrying<'a, S: SessionStore + ?Sized>(
    store: &S,
    key: &str,
    plan: &SessionPlan,
    messages: &'a [Message],
    attempts: usize,
) -> Result<StoredTurn<'a>, ChatError> {
    let mut left = attempts.max(1);
    loop {
        match serve_turn(store, key, plan, messages) {
            Err(ChatError::Store(SessionStoreError::Conflict { .. })) if left > 1 => left -= 1,
            other => return other,
        }
    }
}
