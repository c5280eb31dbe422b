//! What the page of `safegate report` shows: each section's results, and how much each
//! section samples.

use safegate_studies::compare::CompareReport;
use safegate_studies::experiments::{Report, Setup};
use safegate_studies::falsify::Measured;
use safegate_studies::verify::VerifyReport;

/// How much each section samples.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    /// Small samples everywhere.
    pub quick: bool,
    /// Severity trials of `reproduce`.
    pub severity_trials: u64,
    /// Repeated worst runs of `reproduce`.
    pub worst_runs: u64,
    /// IMM trials of `reproduce`.
    pub imm_trials: u64,
    /// Replications per arm in `compare`.
    pub compare_seeds: u32,
    /// Seconds per `compare` run (`None`: the boundary's horizon).
    pub compare_duration: Option<f64>,
    /// Trajectories per envelope cell and arm in `verify`.
    pub verify_trials: u64,
    /// Traffic points of `verify`'s envelope grid.
    pub traffic_points: usize,
    /// Health points of `verify`'s envelope grid.
    pub health_points: usize,
    /// Seed of every draw.
    pub seed: u64,
}

impl Effort {
    /// Each command's defaults, or small samples with `quick`.
    pub fn new(quick: bool, seed: u64) -> Self {
        let full = Setup::default();
        if quick {
            Effort {
                quick,
                severity_trials: 100_000,
                worst_runs: 500,
                imm_trials: 2_000,
                compare_seeds: 1,
                compare_duration: Some(200.0),
                verify_trials: 40,
                traffic_points: 2,
                health_points: 2,
                seed,
            }
        } else {
            Effort {
                quick,
                severity_trials: full.severity_trials,
                worst_runs: full.worst_runs,
                imm_trials: full.imm_trials,
                compare_seeds: 4,
                compare_duration: None,
                verify_trials: 1000,
                traffic_points: 5,
                health_points: 3,
                seed,
            }
        }
    }
}

/// Everything the page shows.
#[derive(Debug)]
pub struct Gathered {
    /// How much each section sampled.
    pub effort: Effort,
    /// Each experiment's report and seconds.
    pub reproduce: Vec<(Report, f64)>,
    /// The compare report.
    pub compare: CompareReport,
    /// Seconds of the compare section.
    pub compare_seconds: f64,
    /// Each boundary file, its report and seconds.
    pub verify: Vec<(String, VerifyReport, f64)>,
    /// The falsification criteria measured.
    pub falsify: Measured,
    /// Seconds for the whole measurement.
    pub seconds: f64,
}
