//! Playing one run: check it, start the services, run the controller, stop everything,
//! and report.

use std::time::Instant;

use safegate_core::Policy;
use safegate_sim::Config;

use super::control::Controller;
use super::services::Services;
use super::summary::{load_summary, totals};
use super::{check_offer_rate, LiveOptions, LivePolicy, LiveReport, Progress};
use crate::LiveError;

/// Everything a run needs besides the policy.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The resolved scenario.
    pub cfg: Config,
    /// How it is played.
    pub opts: LiveOptions,
    /// The safe set's line `θ·capacity` \[jobs\] (usually
    /// [`Scenario::safe_threshold`](safegate_sim::Scenario::safe_threshold) × capacity):
    /// `/metrics` publishes the barrier margin `line − q` and the share of decisions taken
    /// with `q > line`, as the tower layer does.
    pub line: f64,
}

/// Play `run` under `policy`; `progress` hears about it four times a second.
pub async fn run(
    run: &LiveRun,
    policy: LivePolicy,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveReport, LiveError> {
    let cfg = &run.cfg;
    let opts = &run.opts;
    cfg.check()?;
    opts.check()?;
    check_offer_rate(cfg, opts.speed)?;
    let started = Instant::now();
    let services = Services::start(cfg, opts, run.line).await?;
    let mut control = Controller::new(cfg, opts.speed, run.line, services.clock, opts.scrape_every);
    let policy = std::sync::Arc::new(std::sync::Mutex::new(policy));
    control.run(&policy, &services, progress).await;
    let (name, filter) = {
        let p = policy.lock().unwrap_or_else(|p| p.into_inner());
        (p.name(), p.filter_stats())
    };
    let redis = crate::redis_conn::redact(&services.url);
    let stopped = services.stop(opts.timeout).await;
    let acc = stopped.accounting.unwrap_or(control.acc);
    if !opts.executors && acc.completed + acc.failed + acc.in_service == 0 {
        return Err(LiveError::NobodyServed { admitted: acc.admitted + acc.admitted_retries });
    }
    control.tracker.integrate(control.last_q * (cfg.duration - control.last_t).max(0.0));
    let totals = totals(&acc, stopped.pool.as_deref(), opts.speed);
    let planned_decisions = control.planned_decisions();
    let summary = control.tracker.finish(totals, control.last_q, cfg.duration, cfg.dt);
    Ok(LiveReport {
        policy: name,
        speed: opts.speed,
        wall_seconds: started.elapsed().as_secs_f64(),
        redis,
        summary,
        series: control.series,
        live: control.live,
        accounting: acc,
        lost: acc.lost(),
        load: load_summary(&stopped.load),
        filter,
        downstream: stopped.downstream,
        decisions: control.decisions,
        planned_decisions,
        controller_errors: control.errors,
        scrapes: control.scrapes,
    })
}
