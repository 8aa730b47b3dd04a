//! Skeleton: the `cupel-otel` crate is being built (see its issue). Nothing here works yet.
