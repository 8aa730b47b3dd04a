//! The component contracts the engine checks on every run (clarification
//! D-14): a slicer's indices and a placer's permutation. A custom component
//! that breaks them gets a `PipelineConfig` error, never a panic.

use cupel_core::{CupelError, SliceOutcome};

/// The slicer's selection as flags over its input, after checking that every
/// index it returned (selected, rooms, cap exclusions) is in range and that
/// nothing is selected twice or both selected and cap-excluded. Checked on
/// every path (not only when tracing) so `run` and `dry_run` agree.
pub(crate) fn checked_selection(
    outcome: &SliceOutcome,
    n_sorted: usize,
) -> Result<Vec<bool>, CupelError> {
    let mut selected = vec![false; n_sorted];
    for &s in &outcome.selected {
        match selected.get_mut(s) {
            Some(flag) if !*flag => *flag = true,
            Some(_) => {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer selected index {s} more than once"
                )));
            }
            None => {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer selected index {s}, but only {n_sorted} items were given"
                )));
            }
        }
    }
    if let Some(m) = outcome
        .rooms
        .iter()
        .flat_map(|r| r.members.iter())
        .find(|&&m| m >= n_sorted)
    {
        return Err(CupelError::PipelineConfig(format!(
            "slicer reported a room for index {m}, but only {n_sorted} items were given"
        )));
    }
    if let Some(cap) = outcome
        .cap_exclusions
        .iter()
        .find(|c| selected.get(c.index).is_none_or(|&sel| sel))
    {
        return Err(CupelError::PipelineConfig(format!(
            "slicer reported a cap exclusion for index {} which is selected or out of range ({n_sorted} items)",
            cap.index
        )));
    }
    Ok(selected)
}

pub(crate) fn check_permutation(order: &[usize], n: usize) -> Result<(), CupelError> {
    if order.len() != n {
        return Err(CupelError::PipelineConfig(format!(
            "placer returned {} positions for {n} items",
            order.len()
        )));
    }
    let mut seen = vec![false; n];
    for &i in order {
        match seen.get_mut(i) {
            Some(flag) if !*flag => *flag = true,
            _ => {
                return Err(CupelError::PipelineConfig(format!(
                    "placer output is not a permutation of 0..{n} (index {i} repeated or out of range)"
                )));
            }
        }
    }
    Ok(())
}
