//! Fidelity: the live system, time-scaled, against the stochastic simulator on the seed's
//! scenarios (docs/live.md §Fidelity). Each live run starts its own redis-server on a
//! free loopback port.

mod support;

use safegate_core::controllers::PolicySpec;
use safegate_live::run::LivePolicy;
use support::{attempts, live, live_with, per_second, physical_limit, safe_limit, scenario, sim_band, SERIAL};

const SPEED: f64 = 10.0;

/// Mean |live − sim mean| over the per-second backlog, and the share of seconds the live
/// trace spends inside the simulator's 5–95 % band (widened by `slack` requests).
fn compare(live_q: &[f64], mean: &[f64], lo: &[f64], hi: &[f64], from: usize, slack: f64) -> (f64, f64) {
    let idx: Vec<usize> = (from..live_q.len()).filter(|&k| live_q[k].is_finite()).collect();
    let mad = idx.iter().map(|&k| (live_q[k] - mean[k]).abs()).sum::<f64>() / idx.len() as f64;
    let inside = idx.iter().filter(|&&k| live_q[k] >= lo[k] - slack && live_q[k] <= hi[k] + slack).count();
    (mad, inside as f64 / idx.len() as f64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dip_at_55_tracks_the_simulator_and_recovers() {
    let _serial = SERIAL.lock().await;
    let (s, cfg) = scenario(
        r#"
        [traffic]
        rate = 55
        [gate]
        sensitivity = 0.0
        [health]
        kind = "dip"
        start = 20
        [run]
        duration = 60
        drain_level = 6
        "#,
    );
    let (mean, lo, hi) = sim_band(&s, &cfg, 40);
    attempts("λ=55 dip", |_| async {
        let r = live(&s, &cfg, SPEED).await;
        assert_eq!(r.lost, 0, "{:?}", r.accounting);
        let q = per_second(&r.series.t, &r.series.queue, cfg.duration);
        let (mad, inside) = compare(&q, &mean, &lo, &hi, 0, 5.0);
        let peak_live = q.iter().cloned().fold(0.0, f64::max);
        let peak_sim = mean.iter().cloned().fold(0.0, f64::max);
        eprintln!("λ=55 dip: mean |live − sim| = {mad:.1} req, {:.0} % of seconds in the sim's 5–95 % band (±5); peak {peak_live:.0} vs {peak_sim:.0}; recovery {:?}", inside * 100.0, r.summary.recovery_after_dip);
        within!(mad <= 0.05 * cfg.pool.capacity, "mean |live − sim| = {mad:.1}");
        within!(inside >= 0.8, "only {:.0} % of seconds inside the band", inside * 100.0);
        within!((peak_live - peak_sim).abs() <= 0.25 * peak_sim, "peak {peak_live} vs {peak_sim}");
        let Some(rec) = r.summary.recovery_after_dip else { return Err("the backlog did not drain after the dip".into()) };
        within!(rec < 25.0, "recovery {rec} s (the seed: 9 s in the fluid model)");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_band_at_80_tracks_the_simulator_gate_off_and_on() {
    let _serial = SERIAL.lock().await;
    for sensitivity in [0.0, 1.0] {
        let (s, cfg) = scenario(&format!(
            r#"
            [traffic]
            rate = 80
            [gate]
            sensitivity = {sensitivity:?}
            [run]
            duration = 120
            warmup = 60
            "#
        ));
        let (mean, lo, hi) = sim_band(&s, &cfg, 20);
        attempts(&format!("λ=80 sens {sensitivity}"), |_| async {
            let r = live(&s, &cfg, SPEED).await;
            assert_eq!(r.lost, 0, "{:?}", r.accounting);
            let q = per_second(&r.series.t, &r.series.queue, cfg.duration);
            let (mad, inside) = compare(&q, &mean, &lo, &hi, 20, 10.0);
            let settled = |v: &[f64]| v[60..].iter().sum::<f64>() / v[60..].len() as f64;
            eprintln!(
                "λ=80 sens {sensitivity}: mean |live − sim| = {mad:.1} req, {:.0} % inside the band (±10); settled mean {:.1} vs {:.1}; cleared {}",
                inside * 100.0,
                settled(&q),
                settled(&mean),
                r.summary.cleared
            );
            within!(mad <= 0.08 * cfg.pool.capacity, "mean |live − sim| = {mad:.1}");
            within!(inside >= 0.75, "only {:.0} % of seconds inside the band", inside * 100.0);
            if sensitivity == 0.0 {
                // Gate off: pinned at the cap.
                within!(r.summary.queue_max == cfg.pool.capacity, "queue max {} below the cap", r.summary.queue_max);
                within!(r.summary.dropped > 0.0, "nothing dropped with the gate off");
                within!(settled(&q) >= 0.8 * cfg.pool.capacity, "settled mean {}", settled(&q));
            } else {
                within!(
                    r.summary.dropped == 0.0 || r.summary.dropped < 0.01 * r.summary.offered,
                    "dropped {} of {}",
                    r.summary.dropped,
                    r.summary.offered
                );
            }
            Ok(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filter_with_the_concurrency_cap_keeps_the_band_below_theta_at_80() {
    let _serial = SERIAL.lock().await;
    let (_, cfg) = scenario(
        r#"
        [traffic]
        rate = 80
        [run]
        duration = 120
        "#,
    );
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../boundaries/seed-80-pool.toml");
    let boundary = safegate_sim::scenario::load_boundary(&file).unwrap();
    let bound = boundary.barrier.threshold * cfg.pool.capacity;
    // The nominal caps the pool at C and steers the backlog to 0.6·cap; the filter holds
    // the boundary over it (`safegate live --policy cycle+pool --boundary …`).
    let spec: PolicySpec = "cycle+pool".parse().unwrap();
    attempts("λ=80 filter + cap", |_| async {
        let policy = LivePolicy::from_spec(&spec, &cfg, Some(&boundary)).unwrap();
        let r = live_with(&cfg, policy, SPEED).await;
        assert_eq!(r.lost, 0, "{:?}", r.accounting);
        // Goodput against the most any policy can clear inside the safe set (the ideal pool
        // confined to q ≤ θ·cap), and against the unconfined ideal pool (which pins at the cap,
        // outside the set; `safegate compare`'s physical limit).
        let limit = safe_limit(&cfg, bound);
        let share = r.summary.cleared / limit;
        let unconfined = physical_limit(&cfg);
        // Recovery after each dip: within each cycle's window from the ramp down (7 s into it)
        // to the next ramp down, the backlog falls from its peak to well under it.
        let q = per_second(&r.series.t, &r.series.queue, cfg.duration);
        let cycles: Vec<(f64, f64)> = (0..)
            .map(|k| 19 * k + 7)
            .take_while(|&a| a + 19 <= q.len())
            .map(|a| {
                let w = &q[a..a + 19];
                let (at, max) = w.iter().cloned().enumerate().fold((0, 0.0), |b, (i, x)| if x > b.1 { (i, x) } else { b });
                (max, w[at..].iter().cloned().fold(f64::INFINITY, f64::min))
            })
            .collect();
        eprintln!(
            "λ=80 filtered with the cap: max {} (θ·cap {bound}), cleared {} of the safe set's limit {limit:.0} ({:.1} %; of the unconfined ideal pool's {unconfined:.0}: {:.1} %), cycles (peak, low after) {cycles:?}",
            r.summary.queue_max,
            r.summary.cleared,
            share * 100.0,
            100.0 * r.summary.cleared / unconfined
        );
        assert!(r.summary.queue_max <= bound, "queue max {} above θ·cap {bound}", r.summary.queue_max);
        within!(share >= 0.9, "goodput {:.1} % of the safe set's physical limit", share * 100.0);
        within!(
            r.summary.cleared >= 0.85 * unconfined,
            "goodput {:.1} % of the unconfined ideal pool",
            100.0 * r.summary.cleared / unconfined
        );
        within!(cycles.len() >= 5, "{} cycles", cycles.len());
        for (peak, low) in &cycles {
            within!(*low <= 0.75 * peak, "no recovery after a dip: peak {peak}, low after it {low}");
        }
        let f = r.filter.expect("the filter ran");
        // Seen once at 0 over a whole run (goodput 95 %, max 130) on a loaded machine, and
        // > 0 on every other run: measured again rather than asserted on one run.
        within!(f.cap_changes > 0, "the filter never moved the concurrency cap ({} decisions)", f.decisions);
        Ok(())
    })
    .await;
}
