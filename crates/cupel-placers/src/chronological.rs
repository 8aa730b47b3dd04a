use std::cmp::Ordering;

use cupel_core::{Placer, ScoredItem};

/// Orders items by timestamp, oldest first; items without a timestamp follow,
/// in their merged order. Ties keep merged order (a stable sort). Scores are
/// ignored.
///
/// ```
/// use cupel_core::{ContextItem, Placer, ScoredItem};
/// use cupel_placers::ChronologicalPlacer;
/// let late = ContextItem::builder("late", 1).timestamp("2024-06-01T00:00:00Z".parse()?).build()?;
/// let none = ContextItem::new("undated", 1)?;
/// let early = ContextItem::builder("early", 1).timestamp("2024-01-01T00:00:00Z".parse()?).build()?;
/// let merged = [ScoredItem::new(&late, 0.9), ScoredItem::new(&none, 1.0), ScoredItem::new(&early, 0.1)];
/// assert_eq!(ChronologicalPlacer.place(&merged), vec![2, 0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChronologicalPlacer;

impl Placer for ChronologicalPlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
        // Extract the keys once (one pointer chase per item, not per comparison);
        // the index makes every key unique, so an unstable sort is stable here.
        let mut keyed: Vec<(_, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, s)| (s.item.timestamp(), i))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            match (a.0, b.0) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
            .then(a.1.cmp(&b.1))
        });
        keyed.into_iter().map(|(_, i)| i).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::ContextItem;

    fn item(c: &str, ts: Option<&str>) -> ContextItem {
        ContextItem::builder(c, 1)
            .timestamp_opt(ts.map(|t| t.parse().unwrap()))
            .build()
            .unwrap()
    }

    fn place(items: &[ContextItem]) -> Vec<&str> {
        let scored: Vec<_> = items.iter().map(|i| ScoredItem::new(i, 0.5)).collect();
        ChronologicalPlacer
            .place(&scored)
            .into_iter()
            .map(|i| items[i].content())
            .collect()
    }

    #[test]
    fn empty_and_single() {
        assert!(place(&[]).is_empty());
        assert_eq!(place(&[item("a", None)]), ["a"]);
    }

    #[test]
    fn ascending_then_nulls_in_input_order() {
        let items = [
            item("n1", None),
            item("mar", Some("2024-03-01T00:00:00Z")),
            item("n2", None),
            item("jan", Some("2024-01-01T00:00:00Z")),
            item("feb", Some("2024-02-01T00:00:00Z")),
        ];
        assert_eq!(place(&items), ["jan", "feb", "mar", "n1", "n2"]);
    }

    #[test]
    fn ties_and_all_null_keep_input_order() {
        let t = Some("2024-05-05T00:00:00Z");
        assert_eq!(
            place(&[item("x", t), item("y", t), item("z", t)]),
            ["x", "y", "z"]
        );
        assert_eq!(
            place(&[item("c", None), item("a", None), item("b", None)]),
            ["c", "a", "b"]
        );
    }

    #[test]
    fn compares_instants_not_strings() {
        // 10:00+02:00 is 08:00Z, earlier than 09:00Z.
        let a = ContextItem::builder("nine", 1)
            .timestamp("2024-01-01T09:00:00Z".parse().unwrap())
            .build()
            .unwrap();
        let b = ContextItem::builder("eight", 1)
            .timestamp(
                chrono::DateTime::parse_from_rfc3339("2024-01-01T10:00:00+02:00")
                    .unwrap()
                    .with_timezone(&chrono::Utc),
            )
            .build()
            .unwrap();
        assert_eq!(place(&[a, b]), ["eight", "nine"]);
    }
}
