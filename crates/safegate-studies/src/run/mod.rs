//! The run study: one scenario of the seed's model played in its variants (the gate, its
//! baseline, the safety filter, or the main job's four arms), each run with its verdict
//! against the safe line.
//!
//! | file | holds |
//! |---|---|
//! | `study.rs` | the embedded default scenario and boundaries, [`Study`] (which runs, on what), [`RunReport`], [`run_variants`], the `--json` document ([`json_doc`], [`json_stride`]) and [`toml_float`] |
//! | `verdict.rs` | [`Verdict`]: goodput, the physical limit and the time beyond the safe line |

mod study;
mod verdict;

pub use study::{
    json_doc, json_stride, run_variants, toml_float, Played, RunError, RunReport, Runs, Study, DEFAULT_ORIGIN,
    DEFAULT_SCENARIO, FILTER_BOUNDARY, POOL_BOUNDARY,
};
pub use verdict::{physical_limit, physical_limit_of_series, verdict, verdict_of_series, verdict_with_limit, Verdict};
