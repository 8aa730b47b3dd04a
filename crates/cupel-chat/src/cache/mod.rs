//! Cache-aware windows: provider cache profiles and a cost model, sessions
//! that keep the previous window's prefix, Anthropic breakpoints, and a
//! turn-by-turn simulation of what each strategy pays.

mod anthropic;
mod error;
mod profile;
mod prompt;
#[cfg(feature = "redis")]
mod redis_store;
mod serve;
mod session;
mod sim;
mod state;
mod store;
mod suffix;

pub use anthropic::{
    MAX_CACHE_MARKERS, apply_breakpoints, cache_marker_paths, count_cache_markers,
};
#[allow(deprecated)]
pub use error::CacheError;
pub use profile::{CacheMode, CacheProfile, CacheUsage};
pub(crate) use prompt::Frame;
pub use prompt::{Block, PromptCache, plan_breakpoints};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis_store::RedisSessionStore;
#[allow(deprecated)]
pub use serve::{
    SessionError, SessionPlan, StoredTurn, serve_loaded, serve_turn, serve_turn_retrying,
};
pub use session::{
    AttributeValue, CacheRow, CacheSession, CacheStatus, CacheTurn, Cut, CutFront, Expiry,
    LowWater, PrefixBreak, SessionLedger,
};
pub use sim::{
    SimStrategy, SimTurn, Simulation, StrategyRun, request_ends, simulate, simulate_with,
};
pub use state::{Planned, Replan, SESSION_STATE_FORMAT, SessionState};
pub use store::{FileSessionStore, MemorySessionStore, SessionStore, SessionStoreError};
