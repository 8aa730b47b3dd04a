//! Adaptive token budgets: the seed's worked example and numbers, every
//! clarification of spec chapter 16 (A-n), and proptests of the convergence
//! claims against an independent, from-scratch model of the rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use cupel_core::{CupelError, TokenSign};
use cupel_run::{Decimal, SuggestionRule, USAGE_WINDOW, UsageError, UsageRecorder};
use proptest::prelude::*;

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn rec(cycles: &[&[(&str, i64)]]) -> UsageRecorder {
    let mut r = UsageRecorder::new();
    for c in cycles {
        r.record_cycle(c.iter().copied()).unwrap();
    }
    r
}

/// One agent using `tokens` in each cycle.
fn solo(cycles: &[i64]) -> UsageRecorder {
    let mut r = UsageRecorder::new();
    for &t in cycles {
        r.record_cycle([("agent", t)]).unwrap();
    }
    r
}

// ----- the seed's numbers ------------------------------------------------------------------

#[test]
fn worked_example_gives_6_33_17() {
    let m = d("0.1");
    let mut r = UsageRecorder::new();

    // Cycle 1: A uses 5. u = ū = a = ā = 5; ceil(5 × 1.1) = ceil(5.5) = 6.
    r.record_cycle([("A", 5)]).unwrap();
    let s = r.suggest(1_000, m);
    let c = s.candidates.clone().unwrap();
    assert_eq!((c.total, c.max_agent), (5, 5));
    assert_eq!((c.mean_total, c.max_agent_mean), (d("5"), d("5")));
    assert_eq!((s.budget, s.rule), (6, SuggestionRule::Usage));

    // Cycle 2: B uses 30, A is idle (a zero in its history).
    // u = 30, ū = (5 + 30) / 2 = 17.5, a = 30 (B), ā_A = 2.5, ā_B = 30 -> ā = 30.
    // ceil(30 × 1.1) = 33.
    r.record_cycle([("B", 30)]).unwrap();
    let s = r.suggest(6, m);
    let c = s.candidates.clone().unwrap();
    assert_eq!((c.total, c.max_agent), (30, 30));
    assert_eq!(c.mean_total, d("17.5"));
    assert_eq!(c.max_agent_mean, d("30"));
    assert_eq!(c.max_agent_name.as_deref(), Some("B"));
    assert_eq!(s.budget, 33);

    // Cycle 3: A uses 5 again, B is idle; B was first seen in cycle 2, so
    // ā_B = (30 + 0) / 2 = 15; ā_A = (5 + 0 + 5) / 3 = 3.33.
    // u = 5, ū = (5 + 30 + 5) / 3 = 40 / 3 = 13.33…, a = 5, ā = 15.
    // ceil(15 × 1.1) = ceil(16.5) = 17.
    r.record_cycle([("A", 5)]).unwrap();
    let s = r.suggest(33, m);
    let c = s.candidates.clone().unwrap();
    assert_eq!((c.total, c.max_agent), (5, 5));
    assert_eq!(c.max_agent_name.as_deref(), Some("A"));
    assert_eq!(c.max_agent_mean, d("15"));
    assert_eq!(c.max_agent_mean_name.as_deref(), Some("B"));
    // A-10: the seed's "13.3" is 40 / 3 shown to one decimal.
    assert_eq!(c.mean_total.round_dp(1), d("13.3"));
    assert_eq!(c.mean_total, d("40") / d("3"));
    assert_eq!(c.peak(), d("15"));
    assert_eq!(s.budget, 17);
}

#[test]
fn constant_usage_50_with_margin_0_2_gives_60_at_every_step() {
    // ceil(50 × 1.2) = 60 from the first cycle on: every candidate is 50.
    let mut r = UsageRecorder::new();
    let mut b = 50;
    for _ in 0..25 {
        r.record_cycle([("agent", 50)]).unwrap();
        b = r.suggest_token_budget(b, d("0.2"));
        assert_eq!(b, 60);
    }
}

#[test]
fn usage_100_with_margin_0_1_gives_110_where_f64_gives_111() {
    // 100 × 1.1 = 110 exactly; in f64, 1.1 is 1.100000000000000088…, so the
    // product is 110.00000000000001 and its ceiling 111.
    #[allow(clippy::float_cmp)]
    {
        assert_eq!((100.0_f64 * (1.0 + 0.1)).ceil(), 111.0);
    }
    assert_eq!(solo(&[100]).suggest_token_budget(1, d("0.1")), 110);
}

#[test]
fn halfway_cases_round_up() {
    // 5 × 1.1 = 5.5 -> 6; 15 × 1.1 = 16.5 -> 17 (ceil, not half-even).
    assert_eq!(solo(&[5]).suggest_token_budget(1, d("0.1")), 6);
    assert_eq!(solo(&[15]).suggest_token_budget(1, d("0.1")), 17);
}

#[test]
fn a_repeating_mean_is_never_rounded_before_the_ceiling() {
    // A uses 1 in cycles 1-7, B 20 in cycle 8, A 1 in cycles 9 and 10.
    // u = 1, a = 1, ū = (7 + 20 + 1 + 1) / 10 = 2.9, ā_A = 9 / 10,
    // ā_B = (20 + 0 + 0) / 3 = 20 / 3 (B first seen in cycle 8): the peak.
    // 20 / 3 × 1.5 = 10 exactly. Rounded to 28 digits first, 6.666…667 × 1.5
    // would be 10.000…0005 and its ceiling 11.
    let mut cycles: Vec<&[(&str, i64)]> = vec![&[("A", 1)]; 7];
    cycles.extend([&[("B", 20)][..], &[("A", 1)], &[("A", 1)]]);
    let s = rec(&cycles).suggest(1, d("0.5"));
    let c = s.candidates.unwrap();
    assert_eq!(c.mean_total, d("2.9"));
    assert_eq!(c.max_agent_mean_name.as_deref(), Some("B"));
    assert_eq!(c.max_agent_mean.round_dp(3), d("6.667"));
    assert_eq!(s.budget, 10);
}

// ----- A-1 .. A-12 ----------------------------------------------------------------------------

#[test]
fn a1_repeated_reports_of_one_agent_in_a_cycle_add_up() {
    let r = rec(&[&[("A", 3), ("B", 2), ("A", 4)]]);
    let c = r.candidates().unwrap();
    // A: 3 + 4 = 7; total 3 + 2 + 4 = 9.
    assert_eq!((c.total, c.max_agent), (9, 7));
    assert_eq!(c.max_agent_name.as_deref(), Some("A"));
}

#[test]
fn a2_bad_reports_are_rejected_and_leave_the_recorder_unchanged() {
    let mut r = solo(&[10]);
    let before = r.clone();

    let e = r.record_cycle([("ok", 5), ("bad", -3)]).unwrap_err();
    assert_eq!(
        e,
        UsageError::NegativeTokens {
            cycle: 2,
            agent: "bad".into(),
            tokens: -3
        }
    );
    assert_eq!(
        e.to_string(),
        "cycle 2: agent 'bad' reported -3 tokens; usage must be >= 0"
    );
    assert_eq!(r, before);

    let e = r.record_cycle([(" ", 5)]).unwrap_err();
    assert_eq!(e, UsageError::EmptyAgentName { cycle: 2 });
    assert_eq!(r, before);

    // i64::MAX + 1 = 2^63 = 9223372036854775808.
    let e = r.record_cycle([("A", i64::MAX), ("B", 1)]).unwrap_err();
    assert_eq!(
        e,
        UsageError::TotalOverflow {
            cycle: 2,
            total: 9_223_372_036_854_775_808
        }
    );
    assert_eq!(r, before);
    assert_eq!(
        CupelError::from(e),
        CupelError::TokenOverflow {
            sign: TokenSign::Positive,
            total: 9_223_372_036_854_775_808
        }
    );
    assert!(matches!(
        CupelError::from(UsageError::EmptyAgentName { cycle: 1 }),
        CupelError::InvalidArgument(_)
    ));
}

#[test]
fn a2_huge_usage_and_margins_cap_the_budget_at_i64_max() {
    let r = solo(&[i64::MAX]);
    assert_eq!(r.suggest_token_budget(1, d("0.1")), i64::MAX);
    assert_eq!(r.suggest_token_budget(1, Decimal::ZERO), i64::MAX);
    assert_eq!(solo(&[2]).suggest_token_budget(1, Decimal::MAX), i64::MAX);
    // Ten cycles of i64::MAX: the sums (10 × i64::MAX) are exact in i128.
    let r = solo(&[i64::MAX; 10]);
    assert_eq!(r.candidates().unwrap().mean_total, Decimal::from(i64::MAX));
    assert_eq!(r.suggest_token_budget(1, Decimal::ZERO), i64::MAX);
}

#[test]
fn a3_an_agent_is_seen_from_its_first_report_even_with_zero_tokens() {
    // A reports 0 in cycle 1, so its history starts there: ā_A = (0 + 30) / 2 = 15.
    // B first reports in cycle 2: ā_B = 30 / 1 = 30.
    let r = rec(&[&[("A", 0), ("C", 2)], &[("A", 30)]]);
    let c = r.candidates().unwrap();
    assert_eq!(c.max_agent_mean, d("15"));
    assert_eq!(c.max_agent_mean_name.as_deref(), Some("A"));
    let r = rec(&[&[("C", 2)], &[("B", 30)]]);
    assert_eq!(r.candidates().unwrap().max_agent_mean, d("30"));
    assert_eq!(r.agents().collect::<Vec<_>>(), ["B", "C"]);
}

#[test]
fn a3_agents_are_case_sensitive_and_ties_go_to_the_smallest_name() {
    let r = rec(&[&[("b", 7), ("a", 7), ("B", 7)]]);
    let c = r.candidates().unwrap();
    // "B" < "a" < "b" in byte order.
    assert_eq!(c.max_agent_name.as_deref(), Some("B"));
    assert_eq!(c.max_agent_mean_name.as_deref(), Some("B"));
    assert_eq!(r.agents().count(), 3);
}

#[test]
fn a4_ten_zero_totals_after_activity_give_1_and_nine_do_not() {
    // One cycle of 40, then zeros. ū stays 40 (zeros never enter it), so with
    // margin 0 the budget is 40 through the ninth zero and 1 from the tenth.
    let mut r = solo(&[40]);
    for k in 1..=12u64 {
        r.record_cycle([("agent", 0)]).unwrap();
        let s = r.suggest(999, Decimal::ZERO);
        if k < USAGE_WINDOW as u64 {
            assert_eq!(
                (s.budget, s.rule),
                (40, SuggestionRule::Usage),
                "zero cycle {k}"
            );
        } else {
            assert_eq!(
                (s.budget, s.rule),
                (1, SuggestionRule::Idle),
                "zero cycle {k}"
            );
        }
        assert_eq!(r.idle_cycles(), k);
    }
}

#[test]
fn a5_the_non_zero_mean_remembers_activity_from_before_an_idle_spell() {
    // 40, then 12 zeros (idle -> 1), then 7: ū = (40 + 7) / 2 = 23.5 -> 24 at m = 0.
    let mut cycles = vec![40];
    cycles.extend([0; 12]);
    let mut r = solo(&cycles);
    assert_eq!(r.suggest_token_budget(500, Decimal::ZERO), 1);
    r.record_cycle([("agent", 7)]).unwrap();
    let s = r.suggest(1, Decimal::ZERO);
    assert_eq!(s.candidates.unwrap().mean_total, d("23.5"));
    assert_eq!((s.budget, s.rule), (24, SuggestionRule::Usage));
}

#[test]
fn a6_an_empty_cycle_is_a_zero_for_every_agent() {
    // A: 10, then an empty cycle -> ā_A = (10 + 0) / 2 = 5, u = 0, a = 0, ū = 10.
    let mut r = solo(&[10]);
    r.record_cycle(std::iter::empty::<(&str, i64)>()).unwrap();
    let c = r.candidates().unwrap();
    assert_eq!((c.total, c.max_agent, c.max_agent_name), (0, 0, None));
    assert_eq!((c.mean_total, c.max_agent_mean), (d("10"), d("5")));
    assert_eq!(r.cycles(), 2);
    assert_eq!(r.idle_cycles(), 1);
}

#[test]
fn a7_no_usage_keeps_the_current_budget_unchanged() {
    let r = UsageRecorder::new();
    let s = r.suggest(4_096, d("0.5"));
    assert_eq!(
        (s.budget, s.rule, s.candidates),
        (4_096, SuggestionRule::NoUsage, None)
    );
    // Issue 28 point 9, the seed: "If no usage has ever been recorded, the
    // budget is left unchanged": 0 stays 0 (the one-token floor is for
    // "ten consecutive zero-usage samples after activity").
    assert_eq!(r.suggest_token_budget(0, d("0.5")), 0);
    assert_eq!(r.suggest_token_budget(1, d("0.5")), 1);
    // No budget is negative: -7 reads as 0.
    assert_eq!(r.suggest_token_budget(-7, d("0.5")), 0);
    // Only zero cycles so far is still "no usage": 0 stays 0.
    assert_eq!(solo(&[0; 3]).suggest_token_budget(0, d("0.5")), 0);
    // After activity the floor applies: ten idle cycles after 100 give 1.
    let mut idle = vec![100];
    idle.extend([0; 10]);
    assert_eq!(solo(&idle).suggest_token_budget(0, d("0.5")), 1);
    // Fifteen zero cycles and no activity: still unchanged, not 1.
    let r = solo(&[0; 15]);
    let s = r.suggest(300, d("0.1"));
    assert_eq!((s.budget, s.rule), (300, SuggestionRule::NoUsage));
    assert!(!r.has_usage());
}

#[test]
fn a8_the_current_budget_plays_no_part_once_there_is_usage() {
    let r = solo(&[100]);
    for current in [1, 109, 110, 111, 1_000_000] {
        assert_eq!(r.suggest_token_budget(current, d("0.1")), 110);
    }
}

#[test]
fn a9_negative_margins_count_as_zero() {
    let r = solo(&[100]);
    let s = r.suggest(1, d("-0.5"));
    assert_eq!((s.budget, s.margin), (100, Decimal::ZERO));
    assert_eq!(r.suggest_token_budget(1, d("-0.0")), 100);
    // A margin with many digits is still exact: 100 × 1.000000000000000000000000001
    // = 100.0000000000000000000000001 -> 101.
    assert_eq!(
        r.suggest_token_budget(1, d("0.000000000000000000000000001")),
        101
    );
}

#[test]
fn a11_windows_hold_the_last_ten_values() {
    // Totals 1..=11: the last ten non-zero totals are 2..=11, sum 65 -> 6.5.
    let r = solo(&(1..=11).collect::<Vec<_>>());
    assert_eq!(r.candidates().unwrap().mean_total, d("6.5"));

    // A uses 100 once, then B uses 1 for ten cycles. After cycle 10, A's last
    // ten cycles are 100 + nine zeros -> 10; after cycle 11 only zeros -> 0.
    let mut r = rec(&[&[("A", 100)]]);
    for _ in 0..9 {
        r.record_cycle([("B", 1)]).unwrap();
    }
    let c = r.candidates().unwrap();
    assert_eq!(
        (c.max_agent_mean, c.max_agent_mean_name.as_deref()),
        (d("10"), Some("A"))
    );
    r.record_cycle([("B", 1)]).unwrap();
    let c = r.candidates().unwrap();
    assert_eq!(
        (c.max_agent_mean, c.max_agent_mean_name.as_deref()),
        (d("1"), Some("B"))
    );
}

#[test]
fn a12_the_peak_can_rise_after_usage_settles() {
    // The seed says max(u, ū, a, ā) falls monotonically to u once usage is
    // constant. Not when older values are below u: one agent uses
    // 1, 1, 100, 1, 1, 1, 1, 1, 1, 1 and then 10 per cycle (T = 11).
    // After cycle 11: ū = (1 + 100 + 7 × 1 + 10) / 10 = 118 / 10 = 11.8
    // After cycle 12: ū = (100 + 7 × 1 + 10 + 10) / 10 = 127 / 10 = 12.7
    // The agent's mean is the same (all its cycles are non-zero). With margin
    // 0: budgets 12 then 13 — a rise — still within [10, 100] (U = 100).
    let mut r = solo(&[1, 1, 100, 1, 1, 1, 1, 1, 1, 1]);
    r.record_cycle([("agent", 10)]).unwrap();
    let s11 = r.suggest(1, Decimal::ZERO);
    r.record_cycle([("agent", 10)]).unwrap();
    let s12 = r.suggest(1, Decimal::ZERO);
    assert_eq!(s11.candidates.unwrap().peak(), d("11.8"));
    assert_eq!(s12.candidates.unwrap().peak(), d("12.7"));
    assert_eq!((s11.budget, s12.budget), (12, 13));
}

#[cfg(feature = "serde")]
#[test]
fn serde_checkpoint_resumes_where_it_left_off() {
    let mut r = rec(&[&[("A", 5)], &[("B", 30)]]);
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(
        json,
        r#"{"cycles":2,"last_total":30,"nonzero_totals":[5,30],"zero_streak":0,"agents":{"A":[5,0],"B":[30]}}"#
    );
    let mut back: UsageRecorder = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    r.record_cycle([("A", 5)]).unwrap();
    back.record_cycle([("A", 5)]).unwrap();
    assert_eq!(back.suggest_token_budget(33, d("0.1")), 17);
    assert_eq!(back, r);

    let s = serde_json::to_value(r.suggest(33, d("0.1"))).unwrap();
    assert_eq!(s["budget"], 17);
    assert_eq!(s["rule"], "usage");
    assert_eq!(s["candidates"]["max_agent_mean"], "15");
}

#[cfg(feature = "serde")]
#[test]
fn serde_rejects_states_that_break_the_invariants() {
    let bad = [
        // eleven non-zero totals
        r#"{"cycles":11,"last_total":1,"nonzero_totals":[1,1,1,1,1,1,1,1,1,1,1],"zero_streak":0,"agents":{}}"#,
        // a zero inside the non-zero window
        r#"{"cycles":1,"last_total":0,"nonzero_totals":[0],"zero_streak":1,"agents":{}}"#,
        // negative agent usage
        r#"{"cycles":1,"last_total":1,"nonzero_totals":[1],"zero_streak":0,"agents":{"A":[-1]}}"#,
        // last total without cycles
        r#"{"cycles":0,"last_total":3,"nonzero_totals":[3],"zero_streak":0,"agents":{}}"#,
        // a zero streak longer than the run
        r#"{"cycles":1,"last_total":0,"nonzero_totals":[],"zero_streak":5,"agents":{}}"#,
        // an agent on record before any cycle
        r#"{"cycles":0,"last_total":null,"nonzero_totals":[],"zero_streak":0,"agents":{"A":[0]}}"#,
        // an agent history longer than the run (2 entries after 1 cycle)
        r#"{"cycles":1,"last_total":5,"nonzero_totals":[5],"zero_streak":0,"agents":{"A":[0,5]}}"#,
        // the agents' newest entries (100) do not add up to last_total (5):
        // a state in which a > u, which no run can produce
        r#"{"cycles":1,"last_total":5,"nonzero_totals":[5],"zero_streak":0,"agents":{"A":[100]}}"#,
        // usage by an agent inside the zero streak
        r#"{"cycles":2,"last_total":0,"nonzero_totals":[5],"zero_streak":1,"agents":{"A":[5,0],"B":[3]}}"#,
        // more non-zero totals than non-zero cycles
        r#"{"cycles":2,"last_total":0,"nonzero_totals":[5,5],"zero_streak":1,"agents":{"A":[5,0]}}"#,
        // an unknown field
        r#"{"cycles":0,"last_total":null,"nonzero_totals":[],"zero_streak":0,"agents":{},"x":1}"#,
    ];
    for json in bad {
        let err = serde_json::from_str::<UsageRecorder>(json).unwrap_err();
        assert!(
            err.to_string().contains("invalid usage recorder state") || json.contains("\"x\""),
            "{json}: {err}"
        );
    }
}

// ----- proptests of the seed's claims ----------------------------------------------------------

/// `ceil(u × (1 + m))` for a non-negative margin `mantissa / 10^scale`, in
/// plain i128 arithmetic (small inputs only): the oracle.
fn ceil_scaled(u: i128, mantissa: i128, scale: u32) -> i128 {
    let q = 10i128.pow(scale);
    let n = u * (q + mantissa.max(0));
    (n + q - 1) / q
}

/// The rule computed from the whole history, from scratch: windows rebuilt
/// from the list of cycles, means as fractions, the peak by cross-multiplying.
fn oracle(history: &[Vec<(usize, i64)>], current: i64, mantissa: i128, scale: u32) -> i64 {
    let totals: Vec<i128> = history
        .iter()
        .map(|c| c.iter().map(|&(_, t)| i128::from(t)).sum())
        .collect();
    if totals.iter().all(|&t| t == 0) {
        return current.max(0); // A-7: unchanged (issue 28); no budget is negative
    }
    if totals.len() >= 10 && totals[totals.len() - 10..].iter().all(|&t| t == 0) {
        return 1;
    }
    // (numerator, denominator) candidates
    let mut cands: Vec<(i128, i128)> = vec![(*totals.last().unwrap(), 1)];
    let nz: Vec<i128> = totals.iter().copied().filter(|&t| t > 0).collect();
    let last_nz = &nz[nz.len().saturating_sub(10)..];
    cands.push((last_nz.iter().sum(), last_nz.len() as i128));
    let mut first_seen: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in history.iter().enumerate() {
        for &(a, _) in c {
            first_seen.entry(a).or_insert(i);
        }
    }
    let used = |agent: usize, cycle: usize| -> i128 {
        history[cycle]
            .iter()
            .filter(|&&(a, _)| a == agent)
            .map(|&(_, t)| i128::from(t))
            .sum()
    };
    let last = history.len() - 1;
    for (&agent, &first) in &first_seen {
        cands.push((used(agent, last), 1));
        let from = first.max(history.len().saturating_sub(10));
        let sum: i128 = (from..=last).map(|c| used(agent, c)).sum();
        cands.push((sum, (last + 1 - from) as i128));
    }
    let (num, den) = cands.into_iter().fold(
        (0, 1),
        |(n, d), (a, b)| if a * d > n * b { (a, b) } else { (n, d) },
    );
    let q = 10i128.pow(scale);
    let n = num * (q + mantissa.max(0));
    let dd = den * q;
    let b = (n + dd - 1) / dd;
    i64::try_from(b.max(1)).unwrap()
}

fn margin_of(mantissa: i128, scale: u32) -> Decimal {
    Decimal::from_i128_with_scale(mantissa, scale)
}

/// A cycle: up to four reports of agents 0..5 with 0..=10_000 tokens.
fn cycle() -> impl Strategy<Value = Vec<(usize, i64)>> {
    prop::collection::vec((0usize..5, 0i64..=10_000), 0..4)
}

fn margin() -> impl Strategy<Value = (i128, u32)> {
    (-200i128..=2_000, 0u32..=3)
}

fn record(r: &mut UsageRecorder, c: &[(usize, i64)]) {
    r.record_cycle(c.iter().map(|&(a, t)| (format!("agent-{a}"), t)))
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// Every suggestion equals the from-scratch model of the rule.
    #[test]
    fn every_suggestion_matches_the_model(
        history in prop::collection::vec(cycle(), 0..30),
        (mantissa, scale) in margin(),
        current in -5i64..5_000,
    ) {
        let mut r = UsageRecorder::new();
        for (i, c) in history.iter().enumerate() {
            record(&mut r, c);
            let got = r.suggest_token_budget(current, margin_of(mantissa, scale));
            prop_assert_eq!(got, oracle(&history[..=i], current, mantissa, scale), "after cycle {}", i + 1);
            // At least 1 once there has been usage; before it, unchanged (A-7).
            prop_assert!(got >= 1 || (!r.has_usage() && got == current.max(0)));
        }
    }

    /// Constant usage u (each agent a constant amount, total u > 0) reaches
    /// ceil(u (1 + m)) by the tenth stable cycle and stays there; while the
    /// pre-T spike U can still be in a window,
    /// ceil(u (1 + m)) <= b <= ceil(max(U, u) (1 + m)).
    #[test]
    fn constant_usage_converges_within_ten_cycles_and_stays_within_the_bounds(
        before in prop::collection::vec(cycle(), 0..25),
        stable in prop::collection::btree_map(0usize..6, 0i64..=5_000, 1..4),
        (mantissa, scale) in margin(),
        extra in 0usize..6,
    ) {
        let u: i64 = stable.values().sum();
        prop_assume!(u > 0);
        let spike: i64 = before.iter().map(|c| c.iter().map(|&(_, t)| t).sum::<i64>()).max().unwrap_or(0);
        let m = margin_of(mantissa, scale);
        let target = ceil_scaled(i128::from(u), mantissa, scale);
        let upper = ceil_scaled(i128::from(spike.max(u)), mantissa, scale);
        let mut r = UsageRecorder::new();
        for c in &before {
            record(&mut r, c);
        }
        let stable: Vec<(usize, i64)> = stable.into_iter().collect();
        let mut b = 1_000;
        for t in 1..=(USAGE_WINDOW + extra) {
            record(&mut r, &stable);
            b = r.suggest_token_budget(b, m);
            prop_assert!(i128::from(b) >= target && i128::from(b) <= upper,
                "stable cycle {}: {} not in [{}, {}]", t, b, target, upper);
            if t >= USAGE_WINDOW {
                prop_assert_eq!(i128::from(b), target, "stable cycle {}", t);
            }
        }
    }

    /// Ten zero-usage cycles after activity give 1, whatever the margin and
    /// the current budget; fewer give the usage rule; no activity at all keeps
    /// the current budget.
    #[test]
    fn ten_zero_cycles_after_activity_give_1(
        before in prop::collection::vec(cycle(), 1..20),
        active_agent in 0usize..5,
        active_tokens in 1i64..=10_000,
        zeros in prop::collection::vec(prop::collection::vec(0usize..7, 0..3), 0..15),
        (mantissa, scale) in margin(),
        current in 1i64..100_000,
    ) {
        let m = margin_of(mantissa, scale);
        let mut r = UsageRecorder::new();
        for c in &before {
            record(&mut r, c);
        }
        record(&mut r, &[(active_agent, active_tokens)]);
        for (k, agents) in zeros.iter().enumerate() {
            // idle agents: some report 0 explicitly, some say nothing
            record(&mut r, &agents.iter().map(|&a| (a, 0)).collect::<Vec<_>>());
            let s = r.suggest(current, m);
            if k + 1 >= USAGE_WINDOW {
                prop_assert_eq!((s.budget, s.rule), (1, SuggestionRule::Idle));
            } else {
                prop_assert_eq!(s.rule, SuggestionRule::Usage);
                prop_assert!(s.budget >= 1);
            }
        }

        let mut quiet = UsageRecorder::new();
        for agents in &zeros {
            record(&mut quiet, &agents.iter().map(|&a| (a, 0)).collect::<Vec<_>>());
        }
        prop_assert_eq!(quiet.suggest_token_budget(current, m), current);
    }
}

#[cfg(feature = "serde")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// A recorder checkpointed at any cycle and resumed gives the same
    /// suggestions as one that never stopped.
    #[test]
    fn a_checkpoint_resumes_exactly(
        history in prop::collection::vec(cycle(), 0..25),
        cut in 0usize..25,
        (mantissa, scale) in margin(),
    ) {
        let m = margin_of(mantissa, scale);
        let cut = cut.min(history.len());
        let mut r = UsageRecorder::new();
        for c in &history[..cut] {
            record(&mut r, c);
        }
        let json = serde_json::to_string(&r).unwrap();
        let mut resumed: UsageRecorder = serde_json::from_str(&json).unwrap();
        for c in &history[cut..] {
            record(&mut r, c);
            record(&mut resumed, c);
            prop_assert_eq!(resumed.suggest(7, m), r.suggest(7, m));
        }
        prop_assert_eq!(resumed, r);
    }
}

#[test]
fn a16_an_agent_idle_for_ten_cycles_is_set_aside_and_resumes_with_its_zeros() {
    // Cycle 1: A 5, B 7. Cycles 2..=11: only B (7 each). After cycle 11 A's
    // window is ten zeros (cycles 2..=11): set aside, name kept.
    let mut r = UsageRecorder::new();
    r.record_cycle([("A", 5), ("B", 7)]).unwrap();
    for _ in 2..=10 {
        r.record_cycle([("B", 7)]).unwrap();
    }
    // After cycle 10 A's window is [5, 0 × 9]: still read (ā_A = 0.5).
    assert_eq!(r.active_agents().collect::<Vec<_>>(), ["A", "B"]);
    r.record_cycle([("B", 7)]).unwrap();
    assert_eq!(r.active_agents().collect::<Vec<_>>(), ["B"]);
    assert_eq!(r.agents().collect::<Vec<_>>(), ["A", "B"]);
    // Nothing changed for the formula: u = 7, ū = 7, a = 7, ā = 7.
    let c = r.candidates().unwrap();
    assert_eq!((c.total, c.max_agent), (7, 7));
    assert_eq!(c.max_agent_mean, d("7"));
    // Cycle 12: A returns with 90. Its last ten cycles are 3..=12: nine
    // zeros and 90, so ā_A = 90 / 10 = 9 > ā_B = 70 / 10 = 7.
    r.record_cycle([("A", 90), ("B", 7)]).unwrap();
    let c = r.candidates().unwrap();
    assert_eq!(c.max_agent_mean, d("9"));
    assert_eq!(c.max_agent_mean_name.as_deref(), Some("A"));
    // u = 97, a = 90 (A).
    assert_eq!((c.total, c.max_agent), (97, 90));
}

#[test]
fn a16_one_new_agent_per_cycle_keeps_the_active_set_small() {
    // Issue 31 (5): one new agent per cycle made every cycle cost O(agents
    // ever seen). Each agent reports once, so after cycle t the agents whose
    // window has usage are those of cycles t-9..=t: ten at most.
    let mut r = UsageRecorder::new();
    for t in 0..50_000u32 {
        r.record_cycle([(format!("agent-{t}"), 3)]).unwrap();
        assert!(r.active_agents().count() <= 10);
    }
    assert_eq!(r.active_agents().next(), Some("agent-49990"));
    assert_eq!(r.agents().count(), 50_000);
    // agent-0 returns: window nine zeros + 30 -> ā = 3.
    r.record_cycle([("agent-0", 30)]).unwrap();
    let c = r.candidates().unwrap();
    assert_eq!(c.max_agent_mean, d("3"));
}

#[cfg(feature = "serde")]
#[test]
fn a16_dormant_agents_survive_a_checkpoint() {
    // A is dormant after cycle 11 (as in the test above); the checkpoint
    // keeps its name, and the resumed recorder gives A's return the same
    // ā = 90 / 10 = 9 as the original.
    let mut r = UsageRecorder::new();
    r.record_cycle([("A", 5), ("B", 7)]).unwrap();
    for _ in 2..=11 {
        r.record_cycle([("B", 7)]).unwrap();
    }
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(r#""dormant":["A"]"#), "{json}");
    let mut back: UsageRecorder = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    back.record_cycle([("A", 90)]).unwrap();
    r.record_cycle([("A", 90)]).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.candidates().unwrap().max_agent_mean, d("9"));
    // A name both active and dormant is refused.
    let bad = json.replace(r#""dormant":["A"]"#, r#""dormant":["B"]"#);
    let err = serde_json::from_str::<UsageRecorder>(&bad).unwrap_err();
    assert!(
        err.to_string()
            .contains("agent 'B' is both active and dormant"),
        "{err}"
    );
}
