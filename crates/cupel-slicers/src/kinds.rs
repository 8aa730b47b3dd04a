//! Case-insensitive kind → position lookup, fast for the usual handful of kinds.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

use cupel_core::ContextKind;

/// Up to this many kinds a linear scan (length check + ASCII-folded compare)
/// beats hashing, whose case-folding `Hash` feeds the hasher byte by byte.
const LINEAR_MAX: usize = 16;

/// Maps kinds to the position they were inserted at. `K` is `&ContextKind`
/// (kinds borrowed from the items) or `ContextKind` (kinds owned by a
/// configuration). Lookup only: the map's iteration order is never used.
#[derive(Debug, Clone)]
pub(crate) struct KindLookup<K> {
    kinds: Vec<K>,
    map: Option<HashMap<K, usize>>,
}

impl<K> Default for KindLookup<K> {
    fn default() -> Self {
        Self {
            kinds: Vec::new(),
            map: None,
        }
    }
}

impl<K: Borrow<ContextKind> + Hash + Eq + Clone> KindLookup<K> {
    /// The position of `kind` (case-insensitive), if inserted.
    pub(crate) fn get(&self, kind: &ContextKind) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(kind).copied(),
            None => self.kinds.iter().position(|k| k.borrow() == kind),
        }
    }

    /// Inserts `kind` (which must not be present yet) and returns its position.
    pub(crate) fn insert(&mut self, kind: K) -> usize {
        let pos = self.kinds.len();
        if let Some(map) = &mut self.map {
            map.insert(kind.clone(), pos);
        }
        self.kinds.push(kind);
        if self.map.is_none() && self.kinds.len() > LINEAR_MAX {
            self.map = Some(
                self.kinds
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.clone(), i))
                    .collect(),
            );
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_and_hashed_lookups_agree() {
        let kinds: Vec<ContextKind> = (0..40)
            .map(|i| ContextKind::new(format!("Kind{i}")).unwrap())
            .collect();
        let mut lookup: KindLookup<&ContextKind> = KindLookup::default();
        for (i, k) in kinds.iter().enumerate() {
            assert_eq!(lookup.get(k), None);
            assert_eq!(lookup.insert(k), i);
            // Case-insensitive hits, before and after the switch to hashing.
            let upper = ContextKind::new(k.as_str().to_uppercase()).unwrap();
            for (j, k2) in kinds.iter().enumerate().take(i + 1) {
                assert_eq!(lookup.get(k2), Some(j));
            }
            assert_eq!(lookup.get(&upper), Some(i));
        }
    }
}
