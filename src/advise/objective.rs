//! What advice ranks by: one stated figure (`--objective`), and the four figures every
//! setting is shown against the defaults on.

use super::SettingResult;

/// A figure a setting is judged on. The ranking uses one (`--objective`); the table and the
/// recommendation lines show every one's change against the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// `stats.resident` at its highest: what a user sees of the process (the default).
    #[default]
    PeakResident,
    /// `stats.resident`'s mean over the trace's time.
    MeanResident,
    /// `stats.active` at its highest.
    PeakActive,
    /// `stats.active`'s mean over records.
    MeanActive,
}

impl Objective {
    /// Every figure, in the order tables show them.
    pub const ALL: [Objective; 4] = [
        Objective::PeakResident,
        Objective::MeanResident,
        Objective::PeakActive,
        Objective::MeanActive,
    ];

    /// The figure of one result.
    pub fn of(self, r: &SettingResult) -> f64 {
        match self {
            Objective::PeakResident => r.peak_resident_bytes as f64,
            Objective::MeanResident => r.mean_resident_bytes,
            Objective::PeakActive => r.peak_active_bytes as f64,
            Objective::MeanActive => r.mean_active_bytes,
        }
    }

    /// In words, for notes: `peak resident`.
    pub fn words(self) -> &'static str {
        match self {
            Objective::PeakResident => "peak resident",
            Objective::MeanResident => "mean resident",
            Objective::PeakActive => "peak active",
            Objective::MeanActive => "mean active",
        }
    }

    /// The table's column of the figure: `peak_resident_bytes`.
    pub fn column(self) -> &'static str {
        match self {
            Objective::PeakResident => "peak_resident_bytes",
            Objective::MeanResident => "mean_resident_bytes",
            Objective::PeakActive => "peak_active_bytes",
            Objective::MeanActive => "mean_active_bytes",
        }
    }

    /// The table's column of its change against the defaults, in percent: `peak_resident_change_pct`.
    pub(crate) fn change_column(self) -> &'static str {
        match self {
            Objective::PeakResident => "peak_resident_change_pct",
            Objective::MeanResident => "mean_resident_change_pct",
            Objective::PeakActive => "peak_active_change_pct",
            Objective::MeanActive => "mean_active_change_pct",
        }
    }

    /// The table's column of the place by this figure: `rank_peak_resident`.
    pub(crate) fn rank_column(self) -> &'static str {
        match self {
            Objective::PeakResident => "rank_peak_resident",
            Objective::MeanResident => "rank_mean_resident",
            Objective::PeakActive => "rank_peak_active",
            Objective::MeanActive => "rank_mean_active",
        }
    }

    /// `r`'s change against `base` on this figure, as a fraction (-0.011: 1.1% lower); 0
    /// where the defaults' figure is 0.
    pub fn change(self, r: &SettingResult, base: &SettingResult) -> f64 {
        let b = self.of(base);
        match b == 0.0 {
            true => 0.0,
            false => self.of(r) / b - 1.0,
        }
    }

    /// Each result's place by this figure: 1 is the lowest, and equal figures share a place
    /// (1, 1, 3: competition ranking), so a tie is never presented as an order.
    pub fn ranks(self, results: &[SettingResult]) -> Vec<usize> {
        let values: Vec<f64> = results.iter().map(|r| self.of(r)).collect();
        ranks_by(&values)
    }
}

/// Competition ranking of `values`, lowest first: a value's place is one more than the
/// number of values strictly below it.
pub(super) fn ranks_by(values: &[f64]) -> Vec<usize> {
    values
        .iter()
        .map(|v| 1 + values.iter().filter(|w| w.total_cmp(v).is_lt()).count())
        .collect()
}

impl crate::choice::Choice for Objective {
    fn all() -> &'static [Self] {
        &Objective::ALL
    }

    fn name(self) -> &'static str {
        match self {
            Objective::PeakResident => "peak-resident",
            Objective::MeanResident => "mean-resident",
            Objective::PeakActive => "peak-active",
            Objective::MeanActive => "mean-active",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Objective::PeakResident => {
                "stats.resident at its highest: the memory the process holds (the default)"
            }
            Objective::MeanResident => "stats.resident's mean over the trace's time",
            Objective::PeakActive => "stats.active at its highest: pages in use by allocations",
            Objective::MeanActive => "stats.active's mean over records",
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::choice::Choice::name(*self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_figures_share_a_place() {
        // Hand-derived: 1.0 is lowest; the two 3.0s tie for third, the next place is fifth.
        assert_eq!(ranks_by(&[3.0, 1.0, 3.0, 2.0, 5.0]), [3, 1, 3, 2, 5]);
        assert_eq!(ranks_by(&[2.0, 2.0]), [1, 1]);
    }
}
