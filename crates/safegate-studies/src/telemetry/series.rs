//! The series the checks read: [`Telemetry`], one row per sample whatever the format it
//! came in, the [`Signal`] its barrier reads, and the limits on what is read.

/// Most rows (CSV rows, Prometheus scrapes) a telemetry file may have: a month at one
/// sample per second is 2.6 M. Every row is held in memory (8 bytes per column read) while
/// the checks run; at this cap the largest accepted file peaks under 700 MB resident
/// (docs/boundary-check.md §Telemetry formats, its "Limits" paragraph).
pub const MAX_ROWS: usize = 3_000_000;
/// Most bytes of a CSV telemetry file (the text is held while it is parsed).
pub const MAX_CSV_BYTES: u64 = 256 << 20;
/// Most bytes of a Prometheus scrape series (about ten lines per scrape, each read metric
/// costing 8 bytes per scrape besides its text).
pub const MAX_PROMETHEUS_BYTES: u64 = 448 << 20;
/// Largest queue depth, in-flight count or limit read: the capacity budget (1e8).
pub const MAX_LEVEL: f64 = safegate_core::error::check::MAX_CAPACITY;
/// Largest rate read \[req/s\] (a counter's increase per second included): what a boundary's
/// envelope accepts (1e7).
pub const MAX_RATE: f64 = safegate_sim::limits::MAX_RATE;

/// The signal the barrier reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Queue depth (the seed's backlog occupancy).
    Queue,
    /// Requests in flight.
    InFlight,
}

impl Signal {
    /// `queue` or `in_flight`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Queue => "queue",
            Signal::InFlight => "in_flight",
        }
    }
}

/// One telemetry series, one row per sample. Every optional column has the length of `t`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Time \[s\], strictly increasing.
    pub t: Vec<f64>,
    /// Which signal `x` is.
    pub signal: Option<Signal>,
    /// The barrier's signal: queue depth or requests in flight.
    pub x: Vec<f64>,
    /// Mean latency over the interval \[s\].
    pub latency: Option<Vec<f64>>,
    /// Completions per second.
    pub throughput: Option<Vec<f64>>,
    /// Offered requests per second.
    pub offered: Option<Vec<f64>>,
    /// Downstream health in \[0, 1\].
    pub health: Option<Vec<f64>>,
    /// Rejections per second.
    pub rejections: Option<Vec<f64>>,
    /// Retries per second.
    pub retries: Option<Vec<f64>>,
    /// The concurrency limit a controller published.
    pub limit: Option<Vec<f64>>,
    /// The queue's capacity, if the data says.
    pub capacity: Option<f64>,
    /// Columns read but not used, for the report.
    pub ignored: Vec<String>,
}

impl Telemetry {
    /// Rows.
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// The optional columns present, by name.
    pub fn columns(&self) -> Vec<&'static str> {
        let mut c = vec!["time", self.signal.unwrap_or(Signal::Queue).name()];
        for (name, present) in [
            ("latency", self.latency.is_some()),
            ("throughput", self.throughput.is_some()),
            ("offered", self.offered.is_some()),
            ("health", self.health.is_some()),
            ("rejections", self.rejections.is_some()),
            ("retries", self.retries.is_some()),
            ("limit", self.limit.is_some()),
        ] {
            if present {
                c.push(name);
            }
        }
        c
    }
}
