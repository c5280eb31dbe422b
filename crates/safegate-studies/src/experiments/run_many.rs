//! Several experiments run in parallel, each timed.

use std::time::Instant;

use rayon::prelude::*;

use super::{Experiment, Report, Setup};

/// Run `chosen` in parallel on `setup`: each report with its seconds, in the order given;
/// `done` is called once as each experiment finishes.
pub fn run_many(setup: &Setup, chosen: &[&Experiment], done: &(dyn Fn() + Sync)) -> Vec<(Report, f64)> {
    chosen
        .par_iter()
        .map(|e| {
            let t = Instant::now();
            let r = (e.run)(setup);
            done();
            (r, t.elapsed().as_secs_f64())
        })
        .collect()
}
