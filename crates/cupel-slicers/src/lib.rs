//! Skeleton: the `cupel-slicers` crate is being built (see its issue). Nothing here works yet.
