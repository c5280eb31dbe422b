//! Unit tests of the state's helpers, the gate word (on std's atomics: loom's run only
//! inside a model, `tests/loom.rs`) and the step's report.

use std::sync::atomic::Ordering;

use super::slots::{offered, taken, Gate, Offer, MAX_TAKEN, RETIRED};
use super::state::{next_sample_mask, weyl, ONE};
use super::step::{class_limit, class_shares, extend};
use crate::reason::Reason;

#[test]
fn shares_shed_lowest_first() {
    let mut out = [0.0; 3];
    class_shares(0.5, &[100, 100, 100], &mut out);
    assert_eq!(out[2], 0.0);
    assert!((out[1] - 0.5).abs() < 1e-12);
    assert_eq!(out[0], 1.0);
    class_shares(1.0, &[10, 20, 30], &mut out);
    assert_eq!(out, [1.0; 3]);
    class_shares(0.0, &[10, 20, 30], &mut out);
    assert_eq!(out, [0.0; 3]);
    // A silent low class below the boundary class is closed too.
    class_shares(0.4, &[50, 50, 0], &mut out);
    assert_eq!(out[2], 0.0);
    assert_eq!(out[1], 0.0);
    assert!((out[0] - 0.8).abs() < 1e-12);
    // No traffic: the uniform share.
    class_shares(0.3, &[0, 0, 0], &mut out);
    assert_eq!(out, [0.3; 3]);
    class_shares(0.3, &[1, 0, 0], &mut out);
    assert_eq!(out, [0.3; 3]);
    class_shares(f64::NAN, &[10, 10, 10], &mut out);
    assert_eq!(out, [0.0; 3]);
}

#[test]
fn class_limits_hold_back_a_reserve() {
    assert_eq!(class_limit(20, 0, 3, 0.5), 20);
    assert_eq!(class_limit(20, 1, 3, 0.5), 15);
    assert_eq!(class_limit(20, 2, 3, 0.5), 10);
    assert_eq!(class_limit(1, 2, 3, 0.9), 1);
    assert_eq!(class_limit(20, 0, 1, 0.5), 20);
}

#[test]
fn sampling_thins_under_load_and_times_every_request_when_light() {
    let period = 50_000_000; // 50 ms: aim at a timed request every 3.125 ms
    let max = 255;
    // 10 M req/s: k requests take k·100 ns; the mask doubles up to the most allowed.
    let mut mask = 0;
    for _ in 0..20 {
        mask = next_sample_mask(mask, (mask + 1) * 100, period, max);
    }
    assert_eq!(mask, max);
    // 100 req/s: every request is 10 ms apart; the mask comes back down to 0.
    for _ in 0..20 {
        mask = next_sample_mask(mask, 10_000_000, period, max);
    }
    assert_eq!(mask, 0);
    // 5,000 req/s: settles where a timed request comes every 1.6–6.3 ms.
    let mut mask = 0;
    for _ in 0..40 {
        mask = next_sample_mask(mask, (mask + 1) * 200_000, period, max);
    }
    let dt = (mask + 1) * 200_000;
    assert!((1_562_500..=6_250_000).contains(&dt), "mask {mask}: {dt} ns apart");
    assert_eq!(next_sample_mask(mask, dt, period, max), mask, "stable");
    // Never above the cap.
    assert_eq!(next_sample_mask(0, 1, period, 0), 0);
}

/// The default layer's first decision opens `peak` (decisions every tenth of the period):
/// the sampling aims at that interval, so arrivals 416 µs apart (a knee of 4 at 5 ms offered
/// 3× its peak) are all timed; a nominal that decides once a period (vegas) thins them to
/// one in four or more, as before. Aimed at the period during the opening too, an overload
/// that admits one arrival in six left most of the opening's decisions without a timed
/// completion.
#[test]
fn the_openings_decision_interval_aims_the_sampling() {
    let settle = |layer: crate::AdmissionLayer| {
        let owner = &*layer.shared;
        owner.decide(0).expect("the first decision is due at once");
        let mut now = 0;
        for _ in 0..40 {
            let mask = owner.published.0.sample_mask.load(Ordering::Relaxed);
            now += (mask + 1) * 416_000;
            owner.adapt_sampling(now, mask);
        }
        (owner.published.0.interval_ns.load(Ordering::Relaxed), owner.published.0.sample_mask.load(Ordering::Relaxed))
    };
    let period = 50_000_000;
    assert_eq!(settle(crate::AdmissionLayer::builder().build().unwrap()), (period / 10, 0));
    let vegas = crate::AdmissionLayer::builder().controller("vegas").build().unwrap();
    let (interval, mask) = settle(vegas);
    assert!(interval == period && mask >= 3, "vegas: {interval} ns, mask {mask}");
}

#[test]
fn the_offered_count_survives_the_gate_words_wrap() {
    assert_eq!(extend(0, 0, 10), 10);
    assert_eq!(extend(100, 100, 130), 130);
    // The 32-bit count wraps between two steps.
    let before = (1u64 << 32) - 5;
    assert_eq!(extend(before, before as u32, 7), (1 << 32) + 7);
    // Several wraps over many steps.
    let (mut total, mut last) = (0u64, 0u32);
    let mut true_total = 0u64;
    for _ in 0..10 {
        true_total += 1_500_000_000;
        let seq = true_total as u32;
        total = extend(total, last, seq);
        last = seq;
    }
    assert_eq!(total, true_total);
}

#[test]
fn one_word_counts_offers_and_holds_slots() {
    let g = Gate::new();
    assert_eq!(g.offer(2, false, |_| false), (0, Offer::Admitted));
    assert_eq!(g.offer(2, false, |n| n == 1), (1, Offer::Shed));
    assert_eq!(g.offer(2, false, |_| false), (2, Offer::Admitted));
    assert_eq!(g.offer(2, false, |_| false), (3, Offer::Full));
    let w = g.word();
    assert_eq!((offered(w), taken(w)), (4, 2));
    // Dry run: counted and given a slot whatever the outcome.
    assert_eq!(g.offer(2, true, |_| false), (4, Offer::Full));
    assert_eq!(taken(g.word()), 3);
    assert!(!g.release());
    assert!(!g.release());
    assert!(g.try_acquire(2));
    assert!(!g.try_acquire(2));
    let w = g.word();
    assert_eq!((offered(w), taken(w)), (5, 2));
    // Retired with slots out: the last release frees, not the retire.
    assert!(!g.retire());
    assert!(!g.release());
    assert!(g.release());
    assert_eq!(g.word() & RETIRED, RETIRED);
    // Retired with none out: the retire frees.
    assert!(Gate::new().retire());
    // The count wraps into nothing but itself.
    let g = Gate::with_word(u64::from(u32::MAX) << 32);
    assert_eq!(g.offer(1, false, |_| false), (u32::MAX, Offer::Admitted));
    let w = g.word();
    assert_eq!((offered(w), taken(w)), (0, 1));
}

/// Dry run (`take_anyway`) takes slots past any limit; the count must never carry into the
/// RETIRED bit (a release would then free the state under a live layer): at `MAX_TAKEN`
/// `offer` aborts the process, as `Arc` does on a reference-count overflow. Run in a child
/// process, which must die of SIGABRT before its word shows RETIRED.
#[test]
fn dry_run_slots_never_reach_the_retired_bit() {
    const CHILD: &str = "SAFEGATE_TOWER_OVERFLOW_CHILD";
    const NAME: &str = "shared::tests::dry_run_slots_never_reach_the_retired_bit";
    if std::env::var_os(CHILD).is_some() {
        let g = Gate::with_word(u64::from(MAX_TAKEN) - 1);
        assert_eq!(g.offer(1, true, |_| false).1, Offer::Full); // the last slot there is
        let _ = g.offer(1, true, |_| false); // aborts
        let w = g.word();
        println!("survived: word {w:#x}, retired {}", w & RETIRED != 0);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child survived: {}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("slots taken at once"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT expected: {:?}", out.status);
    }
}

/// A layer of two classes with some traffic counted: class 0 has one request admitted and
/// still in service (its slot is returned with the layer), class 1 one rejection for the
/// barrier and one would-be rejection; three requests were cancelled.
fn layer_with_traffic() -> (crate::AdmissionLayer, super::owner::Slot<super::Shared>) {
    let layer = crate::AdmissionLayer::builder().max_concurrency(4).capacity(100).classes(2, 0.5).build().unwrap();
    let owner = &*layer.shared;
    owner.classes[0].offered.0.fetch_add(1, Ordering::Relaxed);
    let (outcome, slot) = owner.offer(4, false, |_| false);
    assert_eq!(outcome, Offer::Admitted);
    owner.classes[1].offered.0.fetch_add(2, Ordering::Relaxed);
    let _ = owner.offer(4, false, |_| true);
    owner.classes[1].rejected[Reason::Barrier].fetch_add(1, Ordering::Relaxed);
    owner.classes[1].would_reject[Reason::Deadline].fetch_add(1, Ordering::Relaxed);
    owner.done.0.cancelled.fetch_add(3, Ordering::Relaxed);
    (layer, slot.unwrap())
}

/// The step reports what it read and published, per class, and only when it ran.
#[test]
fn the_step_reports_what_it_saw_and_decided() {
    let (layer, slot) = layer_with_traffic();
    let owner = &*layer.shared;
    assert!(owner.decision_due(0));
    let r = owner.decide(0).expect("the first decision is due at once");
    assert!(!owner.decision_due(1) && owner.decide(1).is_none(), "one step per period");
    assert_eq!(r.limit, owner.published.0.limit.load(Ordering::Relaxed));
    assert!((1..=4).contains(&r.limit));
    assert_eq!((r.in_flight, r.waiting, r.decisions, r.exits, r.cancelled, r.errors), (1, 0, 1, 0, 3, 0));
    assert_eq!(r.margin, owner.settings.boundary - 1.0);
    assert_eq!(r.classes.len(), 2);
    assert_eq!((r.classes[0].offered, r.classes[1].offered), (1, 2));
    assert_eq!(r.classes[0].rejected.total() + r.classes[0].would_reject.total(), 0);
    assert_eq!(r.classes[1].rejected[Reason::Barrier], 1);
    assert_eq!(r.classes[1].rejected.total(), 1);
    assert_eq!(r.classes[1].would_reject[Reason::Deadline], 1);
    for (k, c) in r.classes.iter().enumerate() {
        let published = owner.classes[k].threshold.load(Ordering::Relaxed) as f64 / ONE as f64;
        assert!((c.share - published).abs() < 1e-9, "class {k}: {} vs {published}", c.share);
    }
    drop(slot);
    assert_eq!(taken(owner.gate.0.word()), 0);
}

/// The metrics publish a step's report as it is (and take the histogram's handle).
#[cfg(feature = "metrics")]
#[test]
fn the_metrics_publish_the_step_report() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let (layer, _slot) = layer_with_traffic();
    let owner = &*layer.shared;
    let r = owner.decide(0).unwrap();
    ::metrics::with_local_recorder(&recorder, || crate::metrics::publish(&owner.latency, "api", &r));
    let text = handle.render();
    for line in [
        format!("safegate_limit{{layer=\"api\"}} {}", r.limit),
        "safegate_in_flight{layer=\"api\"} 1".into(),
        "safegate_decisions_total{layer=\"api\"} 1".into(),
        "safegate_requests_dropped_total{layer=\"api\"} 3".into(),
        "safegate_requests_offered_total{layer=\"api\",class=\"1\"} 2".into(),
        "safegate_requests_admitted_total{layer=\"api\",class=\"1\"} 1".into(),
        "safegate_requests_rejected_total{layer=\"api\",class=\"1\",reason=\"barrier\"} 1".into(),
        "safegate_requests_dry_run_rejected_total{layer=\"api\",class=\"1\",reason=\"deadline\"} 1".into(),
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(owner.latency.get().is_some(), "the histogram's handle is taken at the first report");
}

#[test]
fn weyl_admits_the_share_in_every_window() {
    for share in [0.1, 0.25, 0.5, 0.9] {
        let thr = (share * ONE as f64) as u64;
        for start in [0u64, 17, 1000] {
            let n = (start..start + 200).filter(|&n| weyl(n) < thr).count();
            assert!((n as f64 - 200.0 * share).abs() <= 3.0, "share {share}: {n} of 200");
        }
    }
}
