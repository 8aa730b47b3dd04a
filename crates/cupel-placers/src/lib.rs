//! Skeleton: the `cupel-placers` crate is being built (see its issue). Nothing here works yet.
