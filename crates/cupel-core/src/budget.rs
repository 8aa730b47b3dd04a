//! [`ContextBudget`] (what the caller allows) and [`SliceBudget`] (what a slicer gets).

use std::collections::BTreeMap;

use crate::{ContextKind, CupelError};

/// The token budget for one selection: validated at construction, immutable after.
///
/// | field | meaning |
/// | --- | --- |
/// | `max_tokens` | hard ceiling: the model's context window |
/// | `target_tokens` | soft goal the slicer fills towards; overflow is checked against it |
/// | `output_reserve` | tokens kept free for the model's answer |
/// | `reserved_slots` | per-kind token reservations, subtracted from the slicer's room |
/// | `estimation_safety_margin_percent` | extra head-room when token counts are estimates |
///
/// With the `serde` feature a budget reads and writes these snake_case names
/// (the specification's camelCase spellings are accepted on input) and is
/// validated like [`build`](ContextBudgetBuilder::build). A kind that appears
/// twice in `reserved_slots` (kinds compare ignoring ASCII case, so `Tool`
/// and `tool` count) is an error rather than one value replacing the other.
///
/// ```
/// use cupel_core::{ContextBudget, ContextKind};
/// let budget = ContextBudget::builder(8_000, 6_000)
///     .output_reserve(1_000)
///     .reserved_slot(ContextKind::TOOL_OUTPUT, 200)
///     .safety_margin_percent(10.0)
///     .build()?;
/// // Effective budget with 500 pinned tokens:
/// //   max    = 8000 - 1000 - 500 - 200 = 6300 -> floor(6300 * 0.9) = 5670
/// //   target = 6000 - 500 - 200 = 5300 (<= 6300) -> floor(5300 * 0.9) = 4770
/// let eff = budget.effective(500);
/// assert_eq!((eff.max_tokens, eff.target_tokens), (5670, 4770));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContextBudget {
    max_tokens: i64,
    target_tokens: i64,
    output_reserve: i64,
    reserved_slots: BTreeMap<ContextKind, i64>,
    estimation_safety_margin_percent: f64,
}

impl ContextBudget {
    /// A budget with no reserve, no slots and no margin.
    ///
    /// # Errors
    /// The budget rules of [`ContextBudgetBuilder::build`].
    pub fn new(max_tokens: i64, target_tokens: i64) -> Result<Self, CupelError> {
        Self::builder(max_tokens, target_tokens).build()
    }

    /// Starts a [`ContextBudgetBuilder`].
    pub fn builder(max_tokens: i64, target_tokens: i64) -> ContextBudgetBuilder {
        ContextBudgetBuilder {
            max_tokens,
            target_tokens,
            output_reserve: 0,
            reserved_slots: BTreeMap::new(),
            margin: 0.0,
        }
    }

    /// A builder pre-filled with this budget's fields.
    pub fn to_builder(&self) -> ContextBudgetBuilder {
        ContextBudgetBuilder {
            max_tokens: self.max_tokens,
            target_tokens: self.target_tokens,
            output_reserve: self.output_reserve,
            reserved_slots: self.reserved_slots.clone(),
            margin: self.estimation_safety_margin_percent,
        }
    }

    /// The hard ceiling (the model's context window).
    pub fn max_tokens(&self) -> i64 {
        self.max_tokens
    }

    /// The soft goal the slicer aims for.
    ///
    /// Overflow handling compares the merged selection against
    /// [`overflow_limit`](Self::overflow_limit), which is this target unless
    /// `max_tokens - output_reserve` is lower.
    pub fn target_tokens(&self) -> i64 {
        self.target_tokens
    }

    /// The most tokens the merged window (pinned + sliced) may hold before the
    /// overflow strategy applies: `min(target_tokens, max_tokens - output_reserve)`.
    ///
    /// The specification compares against the original `target_tokens`, and
    /// also promises that a window never exceeds `max_tokens - output_reserve`
    /// unless pinned items alone do. A target above that room is valid, so
    /// both can only hold if the check uses the lower of the two
    /// (clarification S-15a): a count-quota slicer that commits required items
    /// past the room then fails under `Throw`, is trimmed to the room under
    /// `Truncate` and is reported under `Proceed`. Reserved slots and the
    /// safety margin shape the slicer's budget only, as the specification's
    /// "original target, not the effective target" says.
    ///
    /// ```
    /// use cupel_core::ContextBudget;
    /// let b = ContextBudget::builder(100, 90).output_reserve(12).build()?;
    /// assert_eq!(b.overflow_limit(), 88); // min(90, 100 - 12)
    /// let b = ContextBudget::builder(100, 50).output_reserve(12).build()?;
    /// assert_eq!(b.overflow_limit(), 50);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn overflow_limit(&self) -> i64 {
        self.target_tokens.min(self.available_for_pinned())
    }

    /// Tokens kept free for the model's output.
    pub fn output_reserve(&self) -> i64 {
        self.output_reserve
    }

    /// Per-kind reservations, in kind order.
    pub fn reserved_slots(&self) -> &BTreeMap<ContextKind, i64> {
        &self.reserved_slots
    }

    /// Head-room percentage for estimated token counts, in `[0, 100]`.
    pub fn estimation_safety_margin_percent(&self) -> f64 {
        self.estimation_safety_margin_percent
    }

    /// Sum of the reserved slots (exact; may exceed `i64` in adversarial input).
    pub fn reserved_tokens(&self) -> i128 {
        self.reserved_slots.values().map(|&v| i128::from(v)).sum()
    }

    /// `max_tokens - output_reserve`: the room pinned items must fit into.
    pub fn available_for_pinned(&self) -> i64 {
        // Both are validated: 0 <= output_reserve <= max_tokens.
        self.max_tokens - self.output_reserve
    }

    /// The budget the slicer sees once `pinned_tokens` are committed.
    ///
    /// Follows the specification's formula exactly:
    ///
    /// ```text
    /// reserved = sum(reserved_slots)
    /// max      = max(0, max_tokens - output_reserve - pinned - reserved)
    /// target   = min(max(0, target_tokens - pinned - reserved), max)
    /// if margin > 0:
    ///     m      = 1 - margin / 100
    ///     max    = floor(max * m)
    ///     target = min(floor(target * m), max)
    /// ```
    ///
    /// All subtraction is done in `i128`, so no input can overflow. A negative
    /// `pinned_tokens` is treated as written (it enlarges the room).
    pub fn effective(&self, pinned_tokens: i64) -> SliceBudget {
        let reserved = self.reserved_tokens();
        let pinned = i128::from(pinned_tokens);
        let max =
            (i128::from(self.max_tokens) - i128::from(self.output_reserve) - pinned - reserved)
                .max(0);
        let target = (i128::from(self.target_tokens) - pinned - reserved)
            .max(0)
            .min(max);
        let mut max = clamp_i64(max);
        let mut target = clamp_i64(target);
        if self.estimation_safety_margin_percent > 0.0 {
            let m = 1.0 - self.estimation_safety_margin_percent / 100.0;
            max = floor_scaled(max, m);
            target = floor_scaled(target, m).min(max);
        }
        SliceBudget {
            max_tokens: max,
            target_tokens: target,
        }
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// `floor(v * m)` for `v >= 0` and `m` in `[0, 1]`, never above `v`.
fn floor_scaled(v: i64, m: f64) -> i64 {
    // `as` saturates; the min guards against f64 rounding up past `v` for huge values.
    ((v as f64 * m).floor() as i64).clamp(0, v)
}

/// Builder for [`ContextBudget`]; [`build`](Self::build) applies the seven rules.
#[derive(Debug, Clone)]
pub struct ContextBudgetBuilder {
    max_tokens: i64,
    target_tokens: i64,
    output_reserve: i64,
    reserved_slots: BTreeMap<ContextKind, i64>,
    margin: f64,
}

impl ContextBudgetBuilder {
    /// Sets the hard ceiling.
    pub fn max_tokens(mut self, v: i64) -> Self {
        self.max_tokens = v;
        self
    }

    /// Sets the soft target.
    pub fn target_tokens(mut self, v: i64) -> Self {
        self.target_tokens = v;
        self
    }

    /// Sets the output reserve.
    pub fn output_reserve(mut self, v: i64) -> Self {
        self.output_reserve = v;
        self
    }

    /// Reserves `tokens` for `kind` (replacing an earlier reservation for the same kind).
    pub fn reserved_slot(mut self, kind: ContextKind, tokens: i64) -> Self {
        self.reserved_slots.insert(kind, tokens);
        self
    }

    /// Replaces all reservations.
    pub fn reserved_slots(mut self, slots: BTreeMap<ContextKind, i64>) -> Self {
        self.reserved_slots = slots;
        self
    }

    /// Sets the estimation safety margin, in percent.
    pub fn safety_margin_percent(mut self, percent: f64) -> Self {
        self.margin = percent;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// One variant per rule, checked in the specification's order:
    /// [`NegativeMaxTokens`](CupelError::NegativeMaxTokens),
    /// [`NegativeTargetTokens`](CupelError::NegativeTargetTokens),
    /// [`TargetExceedsMax`](CupelError::TargetExceedsMax),
    /// [`NegativeOutputReserve`](CupelError::NegativeOutputReserve),
    /// [`OutputReserveExceedsMax`](CupelError::OutputReserveExceedsMax),
    /// [`SafetyMarginOutOfRange`](CupelError::SafetyMarginOutOfRange) (NaN included),
    /// [`NegativeReservedSlot`](CupelError::NegativeReservedSlot).
    pub fn build(self) -> Result<ContextBudget, CupelError> {
        let Self {
            max_tokens,
            target_tokens,
            output_reserve,
            reserved_slots,
            margin,
        } = self;
        if max_tokens < 0 {
            return Err(CupelError::NegativeMaxTokens { max_tokens });
        }
        if target_tokens < 0 {
            return Err(CupelError::NegativeTargetTokens { target_tokens });
        }
        if target_tokens > max_tokens {
            return Err(CupelError::TargetExceedsMax {
                target_tokens,
                max_tokens,
            });
        }
        if output_reserve < 0 {
            return Err(CupelError::NegativeOutputReserve { output_reserve });
        }
        if output_reserve > max_tokens {
            return Err(CupelError::OutputReserveExceedsMax {
                output_reserve,
                max_tokens,
            });
        }
        if !(0.0..=100.0).contains(&margin) {
            return Err(CupelError::SafetyMarginOutOfRange { value: margin });
        }
        if let Some((kind, &value)) = reserved_slots.iter().find(|(_, v)| **v < 0) {
            return Err(CupelError::NegativeReservedSlot {
                kind: kind.to_string(),
                value,
            });
        }
        Ok(ContextBudget {
            max_tokens,
            target_tokens,
            output_reserve,
            reserved_slots,
            estimation_safety_margin_percent: margin,
        })
    }
}

/// The effective budget handed to a [`Slicer`](crate::Slicer): only a ceiling and a target.
///
/// The pipeline derives it with [`ContextBudget::effective`]; decorator slicers
/// build their own for the slicers they wrap. No invariant is enforced: slicers
/// treat `target_tokens <= 0` as "select nothing (except zero-token items where
/// the slicer says so)".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SliceBudget {
    /// Hard ceiling for the items this slicer may select.
    pub max_tokens: i64,
    /// The goal the slicer fills towards.
    pub target_tokens: i64,
}

impl SliceBudget {
    /// A slice budget with the given ceiling and target.
    pub fn new(max_tokens: i64, target_tokens: i64) -> Self {
        Self {
            max_tokens,
            target_tokens,
        }
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::*;
    use serde::de::{Error as _, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::fmt;

    #[derive(Serialize)]
    struct BudgetRef<'a> {
        max_tokens: i64,
        target_tokens: i64,
        output_reserve: i64,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        reserved_slots: &'a BTreeMap<ContextKind, i64>,
        estimation_safety_margin_percent: f64,
    }

    impl Serialize for ContextBudget {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            BudgetRef {
                max_tokens: self.max_tokens,
                target_tokens: self.target_tokens,
                output_reserve: self.output_reserve,
                reserved_slots: &self.reserved_slots,
                estimation_safety_margin_percent: self.estimation_safety_margin_percent,
            }
            .serialize(s)
        }
    }

    #[derive(Deserialize)]
    struct BudgetOwned {
        #[serde(alias = "maxTokens")]
        max_tokens: i64,
        #[serde(alias = "targetTokens")]
        target_tokens: i64,
        #[serde(default, alias = "outputReserve")]
        output_reserve: i64,
        #[serde(default, alias = "reservedSlots", deserialize_with = "slots")]
        reserved_slots: BTreeMap<ContextKind, i64>,
        #[serde(default, alias = "estimationSafetyMarginPercent")]
        estimation_safety_margin_percent: f64,
    }

    /// Reads `reserved_slots`, rejecting a kind given twice: kinds compare
    /// ignoring ASCII case, so `Tool` and `tool` are one key, and letting the
    /// later value win would silently drop a reservation.
    fn slots<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<ContextKind, i64>, D::Error> {
        struct Slots;
        impl<'de> Visitor<'de> for Slots {
            type Value = BTreeMap<ContextKind, i64>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from kind to reserved tokens")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((kind, tokens)) = map.next_entry::<ContextKind, i64>()? {
                    if let Some(earlier) = out.keys().find(|k| **k == kind) {
                        return Err(A::Error::custom(format!(
                            "reserved_slots: kind '{kind}' is given twice (also as '{earlier}'; \
                             kinds compare ignoring ASCII case)"
                        )));
                    }
                    out.insert(kind, tokens);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Slots)
    }

    impl<'de> Deserialize<'de> for ContextBudget {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let o = BudgetOwned::deserialize(d)?;
            ContextBudget::builder(o.max_tokens, o.target_tokens)
                .output_reserve(o.output_reserve)
                .reserved_slots(o.reserved_slots)
                .safety_margin_percent(o.estimation_safety_margin_percent)
                .build()
                .map_err(serde::de::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    #[test]
    fn each_rule_has_its_own_error() {
        assert_eq!(
            ContextBudget::new(-1, 0),
            Err(CupelError::NegativeMaxTokens { max_tokens: -1 })
        );
        assert_eq!(
            ContextBudget::new(10, -2),
            Err(CupelError::NegativeTargetTokens { target_tokens: -2 })
        );
        assert_eq!(
            ContextBudget::new(10, 11),
            Err(CupelError::TargetExceedsMax {
                target_tokens: 11,
                max_tokens: 10
            })
        );
        assert_eq!(
            ContextBudget::builder(10, 5).output_reserve(-3).build(),
            Err(CupelError::NegativeOutputReserve { output_reserve: -3 })
        );
        assert_eq!(
            ContextBudget::builder(10, 5).output_reserve(11).build(),
            Err(CupelError::OutputReserveExceedsMax {
                output_reserve: 11,
                max_tokens: 10
            })
        );
        for bad in [-0.1, 100.5, f64::INFINITY] {
            assert_eq!(
                ContextBudget::builder(10, 5)
                    .safety_margin_percent(bad)
                    .build(),
                Err(CupelError::SafetyMarginOutOfRange { value: bad })
            );
        }
        assert!(matches!(
            ContextBudget::builder(10, 5).safety_margin_percent(f64::NAN).build(),
            Err(CupelError::SafetyMarginOutOfRange { value }) if value.is_nan()
        ));
        assert_eq!(
            ContextBudget::builder(10, 5)
                .reserved_slot(kind("Tool"), -4)
                .build(),
            Err(CupelError::NegativeReservedSlot {
                kind: "Tool".into(),
                value: -4
            })
        );
    }

    #[test]
    fn boundary_values_are_accepted() {
        let b = ContextBudget::builder(0, 0)
            .output_reserve(0)
            .build()
            .unwrap();
        assert_eq!(b.max_tokens(), 0);
        ContextBudget::builder(10, 10)
            .output_reserve(10)
            .build()
            .unwrap();
        ContextBudget::builder(10, 10)
            .safety_margin_percent(0.0)
            .build()
            .unwrap();
        ContextBudget::builder(10, 10)
            .safety_margin_percent(100.0)
            .build()
            .unwrap();
        ContextBudget::builder(10, 10)
            .reserved_slot(kind("a"), 0)
            .build()
            .unwrap();
    }

    #[test]
    fn effective_budget_plain() {
        // max 1000, target 800, no reserve/slots/margin, pinned 300:
        //   max = 1000 - 0 - 300 - 0 = 700; target = min(800 - 300, 700) = 500
        let b = ContextBudget::new(1000, 800).unwrap();
        assert_eq!(b.effective(300), SliceBudget::new(700, 500));
        // pinned 0: max 1000, target 800
        assert_eq!(b.effective(0), SliceBudget::new(1000, 800));
    }

    #[test]
    fn effective_budget_reserve_slots_and_margin() {
        // max 10000, target 9000, reserve 2000, slots 300 + 200 = 500, pinned 1000, margin 15%
        //   max    = 10000 - 2000 - 1000 - 500 = 6500
        //   target = min(9000 - 1000 - 500, 6500) = min(7500, 6500) = 6500
        //   m = 0.85; max = floor(6500 * 0.85) = floor(5525.0) = 5525
        //   target = min(floor(6500 * 0.85), 5525) = 5525
        let b = ContextBudget::builder(10_000, 9_000)
            .output_reserve(2_000)
            .reserved_slot(kind("ToolOutput"), 300)
            .reserved_slot(kind("Memory"), 200)
            .safety_margin_percent(15.0)
            .build()
            .unwrap();
        assert_eq!(b.reserved_tokens(), 500);
        assert_eq!(b.effective(1_000), SliceBudget::new(5_525, 5_525));
    }

    #[test]
    fn effective_budget_target_clamped_to_max() {
        // max 100, target 100, reserve 60, pinned 10:
        //   max = 100 - 60 - 10 = 30; target = min(100 - 10, 30) = 30
        let b = ContextBudget::builder(100, 100)
            .output_reserve(60)
            .build()
            .unwrap();
        assert_eq!(b.effective(10), SliceBudget::new(30, 30));
    }

    #[test]
    fn effective_budget_margin_floors() {
        // max 999, target 500, margin 33.3%: m = 0.667
        //   max = floor(999 * 0.667) = floor(666.333) = 666
        //   target = floor(500 * 0.667) = floor(333.5) = 333
        let b = ContextBudget::builder(999, 500)
            .safety_margin_percent(33.3)
            .build()
            .unwrap();
        assert_eq!(b.effective(0), SliceBudget::new(666, 333));
        // margin 100% leaves nothing
        let b = ContextBudget::builder(999, 500)
            .safety_margin_percent(100.0)
            .build()
            .unwrap();
        assert_eq!(b.effective(0), SliceBudget::new(0, 0));
    }

    #[test]
    fn effective_budget_slots_exceeding_room_give_zero() {
        // max 100, target 90, slots 150: max = max(0, 100 - 150) = 0, target = 0
        let b = ContextBudget::builder(100, 90)
            .reserved_slot(kind("x"), 150)
            .build()
            .unwrap();
        assert_eq!(b.effective(0), SliceBudget::new(0, 0));
        // pinned >= target: target 0 while max stays positive
        let b = ContextBudget::new(100, 50).unwrap();
        assert_eq!(b.effective(60), SliceBudget::new(40, 0));
    }

    #[test]
    fn effective_budget_never_overflows() {
        let b = ContextBudget::builder(i64::MAX, i64::MAX)
            .reserved_slot(kind("a"), i64::MAX)
            .reserved_slot(kind("b"), i64::MAX)
            .build()
            .unwrap();
        assert_eq!(b.reserved_tokens(), 2 * i128::from(i64::MAX));
        assert_eq!(b.effective(i64::MAX), SliceBudget::new(0, 0));
        // MAX - 0 - MIN - 2*MAX = 2^63 - (2^63 - 1) = 1, computed without wrapping.
        assert_eq!(b.effective(i64::MIN), SliceBudget::new(1, 1));
        let b = ContextBudget::builder(i64::MAX, i64::MAX)
            .safety_margin_percent(0.5)
            .build()
            .unwrap();
        let e = b.effective(i64::MIN);
        assert!(e.max_tokens >= 0 && e.target_tokens <= e.max_tokens);
        let e = b.effective(0);
        assert!(e.max_tokens > 0 && e.target_tokens == e.max_tokens);
    }

    #[test]
    fn reserved_slot_kinds_fold_case() {
        let b = ContextBudget::builder(100, 90)
            .reserved_slot(kind("Tool"), 10)
            .reserved_slot(kind("TOOL"), 20)
            .build()
            .unwrap();
        assert_eq!(b.reserved_slots().len(), 1);
        assert_eq!(b.reserved_tokens(), 20);
    }
}
