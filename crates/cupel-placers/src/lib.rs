//! The two Cupel placers: they decide the order of the final context window.
//!
//! A placer receives the merged selection — pinned items first (score 1.0),
//! then the sliced items in score order — and returns a permutation of it:
//!
//! * [`ChronologicalPlacer`] — oldest first by timestamp; items without a
//!   timestamp go last, in their merged order. Reads like a conversation.
//! * [`UShapedPlacer`] — the best-scored items at both edges and the weakest in
//!   the middle, where models attend least.
//!
//! Both are stateless, `Send + Sync`, and deterministic: ties always fall back
//! to the merged index.
//!
//! ```
//! use cupel_core::{ContextItem, Placer, ScoredItem};
//! use cupel_placers::UShapedPlacer;
//!
//! let items: Vec<ContextItem> = ["A", "B", "C", "D"]
//!     .iter()
//!     .map(|c| ContextItem::new(*c, 1))
//!     .collect::<Result<_, _>>()?;
//! let scored: Vec<ScoredItem<'_>> = items
//!     .iter()
//!     .zip([0.9, 0.8, 0.7, 0.6])
//!     .map(|(i, s)| ScoredItem::new(i, s))
//!     .collect();
//! // Ranks 0 and 2 fill from the left, ranks 1 and 3 from the right.
//! let order: Vec<&str> = UShapedPlacer
//!     .place(&scored)
//!     .into_iter()
//!     .map(|i| items[i].content())
//!     .collect();
//! assert_eq!(order, ["A", "C", "D", "B"]);
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! This crate depends only on `cupel-core`.

#![cfg_attr(docsrs, feature(doc_cfg))]
mod chronological;
mod u_shaped;

pub use chronological::ChronologicalPlacer;
pub use u_shaped::UShapedPlacer;
