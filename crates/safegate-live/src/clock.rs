//! Model time on the wall clock: `t_model = speed · (now − origin)`.
//!
//! Every part of the live system (load generator, downstream emulator, controller) reads the
//! same [`ModelClock`], so a scenario written in the seed's seconds runs `speed` times
//! faster: at `--speed 10` the 400-s band takes 40 s, every rate is ten times higher and
//! every service time ten times shorter.
//!
//! Where "now" comes from is the clock's [`TimeSource`]: the OS's monotonic clock for a
//! real run ([`ModelClock::start`]), or tokio's clock ([`ModelClock::start_on`] with
//! [`TimeSource::Tokio`]), which a test can pause and advance (`#[tokio::test(start_paused
//! = true)]`, `tokio::time::advance`) so model time moves only when the runtime has nothing
//! left to do before the next timer, however busy the machine is.

use std::time::{Duration, Instant};

/// Where a [`ModelClock`] reads the current instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeSource {
    /// `std::time::Instant::now()`: the wall clock. What every real run uses.
    #[default]
    Wall,
    /// `tokio::time::Instant::now()`: the wall clock too, unless the runtime's clock is
    /// paused (tokio's `test-util`), when it moves only as the runtime advances it. Read it
    /// from inside the runtime: a thread outside it sees the wall clock. The downstream
    /// emulator runs its scheduler as a task on tokio's timers for such a clock.
    Tokio,
}

impl TimeSource {
    /// The current instant on this source.
    pub fn now(self) -> Instant {
        match self {
            TimeSource::Wall => Instant::now(),
            TimeSource::Tokio => tokio::time::Instant::now().into_std(),
        }
    }
}

/// Converts between wall time and model time.
#[derive(Debug, Clone, Copy)]
pub struct ModelClock {
    origin: Instant,
    speed: f64,
    source: TimeSource,
}

impl ModelClock {
    /// A clock on the wall clock whose model time 0 is now. `speed` must be finite and
    /// positive (checked by the caller's configuration; a non-positive value is treated as
    /// 1).
    pub fn start(speed: f64) -> Self {
        Self::start_on(TimeSource::Wall, speed)
    }

    /// A clock on `source` whose model time 0 is now.
    pub fn start_on(source: TimeSource, speed: f64) -> Self {
        Self { source, ..Self::starting_at(source.now(), speed) }
    }

    /// A clock on the wall clock whose model time 0 is `origin`.
    pub fn starting_at(origin: Instant, speed: f64) -> Self {
        let speed = if speed.is_finite() && speed > 0.0 { speed } else { 1.0 };
        Self { origin, speed, source: TimeSource::Wall }
    }

    /// Where the clock reads the current instant.
    pub fn source(&self) -> TimeSource {
        self.source
    }

    /// The current instant on the clock's source.
    pub fn instant(&self) -> Instant {
        self.source.now()
    }

    /// Model seconds per wall second.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The wall instant of model time 0.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Model time now \[s\].
    pub fn now(&self) -> f64 {
        self.at(self.instant())
    }

    /// Model time at wall instant `t` \[s\] (negative before the origin).
    pub fn at(&self, t: Instant) -> f64 {
        match t.checked_duration_since(self.origin) {
            Some(d) => d.as_secs_f64() * self.speed,
            None => -(self.origin - t).as_secs_f64() * self.speed,
        }
    }

    /// The wall duration of `model_secs` model seconds (0 for a negative or NaN input).
    pub fn wall(&self, model_secs: f64) -> Duration {
        let s = model_secs / self.speed;
        if s.is_finite() && s > 0.0 {
            Duration::from_secs_f64(s.min(1e9))
        } else {
            Duration::ZERO
        }
    }

    /// The wall instant of model time `t_model`.
    pub fn instant_at(&self, t_model: f64) -> Instant {
        self.origin + self.wall(t_model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_time_runs_speed_times_faster() {
        let o = Instant::now();
        let c = ModelClock::starting_at(o, 10.0);
        assert_eq!(c.wall(4.0), Duration::from_millis(400));
        assert!((c.at(o + Duration::from_millis(250)) - 2.5).abs() < 1e-9);
        assert!((c.at(c.instant_at(7.5)) - 7.5).abs() < 1e-6);
        assert_eq!(c.wall(-1.0), Duration::ZERO);
        assert_eq!(c.wall(f64::NAN), Duration::ZERO);
        assert_eq!(ModelClock::starting_at(o, 0.0).speed(), 1.0);
        assert_eq!(c.source(), TimeSource::Wall);
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_moves_with_paused_time_only() {
        let c = ModelClock::start_on(TimeSource::Tokio, 10.0);
        assert_eq!(c.now(), 0.0);
        // Real time passes; paused time does not.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(c.now(), 0.0);
        tokio::time::advance(Duration::from_millis(250)).await;
        assert!((c.now() - 2.5).abs() < 1e-9, "{}", c.now());
        tokio::time::sleep(c.wall(7.5)).await;
        assert!((c.now() - 10.0).abs() < 1e-3, "{}", c.now());
    }
}
