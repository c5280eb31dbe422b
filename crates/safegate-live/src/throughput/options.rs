//! What a throughput measurement runs: the levels, the windows, the speeds.

use std::time::Duration;

use safegate_core::error::check;
use safegate_core::RangeError;
use safegate_sim::Pool;

/// Concurrency levels as multiples of `C`: 1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64 at
/// the seed's `C = 4`.
pub const DEFAULT_MULTIPLES: [f64; 13] = [0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0];

/// The quick measurement's: 1, 2, 4, 8, 12, 16, 24, 32, 48, 64 at `C = 4`.
pub const QUICK_MULTIPLES: [f64; 10] = [0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0];

/// The widest 95 % interval half-width of the tail exponent that still decides anything.
pub const MAX_HALF_WIDTH: f64 = 0.5;

/// The relative gap between the free-exponent and the `p = 2` tails at 4× the largest `n`
/// that counts as material.
pub const MATERIAL_GAP: f64 = 0.10;

/// What to measure and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The emulated pool: `rate` (`s`) and `comfortable` (`C`) set the contended rate.
    pub pool: Pool,
    /// Concurrency levels as multiples of `C` (rounded, at least 1, duplicates dropped).
    pub multiples: Vec<f64>,
    /// Explicit levels instead of the multiples (empty: use the multiples).
    pub levels: Vec<u32>,
    /// The measuring window of each level (wall time).
    pub window: Duration,
    /// Wall time each level runs before its window opens.
    pub warmup: Duration,
    /// The shortest mean wall time a request spends in service: sets the model clock's
    /// speed, so the HTTP round trip between requests stays a small share of it.
    pub min_service_wall: Duration,
    /// The most requests per wall second the clients may send.
    pub max_request_rate: f64,
    /// The fastest model clock allowed (model seconds per wall second).
    pub max_speed: f64,
    /// Seed of the emulator's work draws (level `i` uses `seed + i`).
    pub seed: u64,
}

impl Default for Options {
    /// The seed's pool, 13 levels of 1.2 s each: about 18 s.
    fn default() -> Self {
        Self {
            pool: Pool::default(),
            multiples: DEFAULT_MULTIPLES.to_vec(),
            levels: Vec::new(),
            window: Duration::from_millis(1200),
            warmup: Duration::from_millis(100),
            min_service_wall: Duration::from_micros(2500),
            max_request_rate: 2000.0,
            max_speed: 1000.0,
            seed: 1,
        }
    }
}

impl Options {
    /// For tests: 10 levels of 0.25 s each, about 3 s.
    pub fn quick() -> Self {
        Self {
            multiples: QUICK_MULTIPLES.to_vec(),
            window: Duration::from_millis(250),
            warmup: Duration::from_millis(50),
            ..Self::default()
        }
    }

    /// The concurrency levels measured, increasing.
    pub fn levels(&self) -> Vec<u32> {
        let mut v: Vec<u32> = if self.levels.is_empty() {
            self.multiples.iter().map(|m| (m * self.pool.comfortable).round().clamp(1.0, 1e6) as u32).collect()
        } else {
            self.levels.clone()
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Check every field; named as `throughput.FIELD`.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("throughput.pool.rate", self.pool.rate, f64::MIN_POSITIVE, 1e6, "(0, 1e6] req/s")?;
        check::within("throughput.pool.comfortable", self.pool.comfortable, 0.25, 1e4, "[0.25, 1e4]")?;
        let levels = self.levels();
        check::within("throughput.levels", levels.len() as f64, 1.0, 64.0, "1 to 64 levels")?;
        let top = levels.last().copied().unwrap_or(0);
        check::within("throughput.levels", f64::from(top), 1.0, 4096.0, "each in [1, 4096]")?;
        check::within("throughput.window", self.window.as_secs_f64(), 0.01, 10.0, "[0.01, 10] s")?;
        check::within("throughput.warmup", self.warmup.as_secs_f64(), 0.0, 5.0, "[0, 5] s")?;
        check::within("throughput.min_service_wall", self.min_service_wall.as_secs_f64(), 1e-4, 1.0, "[0.1 ms, 1 s]")?;
        check::within("throughput.max_request_rate", self.max_request_rate, 10.0, 1e5, "[10, 1e5] req/s")?;
        check::within("throughput.max_speed", self.max_speed, 1.0, 1e4, "[1, 1e4]")?;
        Ok(())
    }
}
