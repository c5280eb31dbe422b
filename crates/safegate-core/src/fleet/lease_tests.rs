use super::*;
use crate::fleet::detector::{FailureDetector, Timeout};
use proptest::prelude::*;

const BOUND: f64 = 100.0;

fn keeper(policy: LossPolicy, lease: f64, m: u32) -> GrantKeeper {
    GrantKeeper::new(KeeperConfig::new(policy, BOUND, lease, m).unwrap())
}

fn input(now: f64, grant: Option<Grant>, reachable: bool, proposal: f64) -> KeeperInput {
    KeeperInput { now, grant, reachable, proposal }
}

/// A fleet of `weights.len()` gates and one coordinator that goes silent over
/// `[loss_start, loss_start + loss_len)` and comes back having lost its state, with a new
/// allocation `after`. Each gate polls every `lease/3` at its own phase, takes a grant
/// `bound·w` leased for `lease` when the coordinator is up, and reads reachability from a
/// timeout detector on the coordinator's heartbeats (every 0.1 s while up). Every local
/// controller proposes `proposal·bound` (1: each process's full local limit, the whole
/// bound). Returns the largest Σ admitted over the run and the keepers.
struct Run {
    max_sum: f64,
    keepers: Vec<GrantKeeper>,
}

#[allow(clippy::too_many_arguments)]
fn simulate(
    policy: LossPolicy,
    learning: bool,
    before: &[f64],
    after: &[f64],
    phases: &[f64],
    lease: f64,
    loss_start: f64,
    loss_len: f64,
    proposal: f64,
) -> Run {
    let m = before.len();
    let mut cfg = KeeperConfig::new(policy, BOUND, lease, m as u32).unwrap();
    cfg.learning = learning;
    let mut keepers: Vec<GrantKeeper> = (0..m).map(|_| GrantKeeper::new(cfg)).collect();
    let mut detectors: Vec<Timeout> = (0..m).map(|_| Timeout::new(0.35).unwrap()).collect();
    let poll = lease / 3.0;
    let dt = 0.05;
    let horizon = loss_start + loss_len + 3.0 * lease + 1.0;
    let mut grants: Vec<Option<Grant>> = vec![None; m];
    let mut next_poll: Vec<f64> = vec![0.0; m];
    let mut max_sum = 0.0f64;
    let steps = (horizon / dt).ceil() as usize;
    for step in 0..=steps {
        let t = step as f64 * dt;
        let up = !(t >= loss_start && t < loss_start + loss_len);
        let alloc = if t < loss_start { before } else { after };
        let mut sum = 0.0;
        for i in 0..m {
            if up && step % 2 == 0 {
                detectors[i].heartbeat(t);
            }
            while t >= next_poll[i] {
                if up {
                    let epoch = u64::from(t >= loss_start);
                    grants[i] = Some(Grant { limit: BOUND * alloc[i], expires: t + lease, members: m as u32, epoch });
                }
                next_poll[i] = if next_poll[i] == 0.0 { phases[i] * poll + 1e-9 } else { next_poll[i] + poll };
            }
            let reachable = !detectors[i].suspect(t);
            let d = keepers[i].decide(&input(t, grants[i], reachable, proposal * BOUND));
            sum += d.limit;
        }
        max_sum = max_sum.max(sum);
    }
    Run { max_sum, keepers }
}

fn normalised(raw: &[f64]) -> Vec<f64> {
    let s: f64 = raw.iter().sum();
    raw.iter().map(|w| w / s).collect()
}

prop_compose! {
    fn fleet()(m in 1usize..=16)
        (before in proptest::collection::vec(0.01f64..1.0, m),
         after in proptest::collection::vec(0.01f64..1.0, m),
         phases in proptest::collection::vec(0.0f64..1.0, m),
         lease in 0.5f64..6.0,
         loss_start in 0.0f64..10.0,
         loss_len in 0.0f64..30.0,
         proposal in 0.2f64..3.0) -> (Vec<f64>, Vec<f64>, Vec<f64>, f64, f64, f64, f64) {
        (normalised(&before), normalised(&after), phases, lease, loss_start, loss_len, proposal)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Σ admitted ≤ bound for Freeze and Hybrid, through a loss of any length and the
    /// return of a coordinator that lost its state (unequal grants, staggered leases,
    /// M ≤ 16); the learning period is what keeps the return under the bound.
    #[test]
    fn freeze_and_hybrid_keep_the_fleet_under_the_bound((before, after, phases, lease, s, len, p) in fleet()) {
        for policy in [LossPolicy::Freeze, LossPolicy::Hybrid] {
            let r = simulate(policy, true, &before, &after, &phases, lease, s, len, p);
            prop_assert!(r.max_sum <= BOUND * (1.0 + 1e-9), "{policy:?}: Σ = {}", r.max_sum);
        }
    }

    /// Fallback: every gate falls back to its local limit, the fleet admits M× its share.
    #[test]
    fn fallback_breaks_the_bound((before, after, phases, lease, s, _len, _p) in fleet()) {
        let r = simulate(LossPolicy::Fallback, true, &before, &after, &phases, lease, s, 1.0, 1.0);
        let m = before.len() as f64;
        prop_assert!((r.max_sum - m * BOUND).abs() < 1e-6, "Σ = {} for M = {m}", r.max_sum);
    }
}

/// Without the learning period, a coordinator that comes back with a new allocation hands
/// the first gate that polls its new, larger share while the other still holds its old
/// lease: over the bound. With it, under.
#[test]
fn the_learning_period_keeps_the_return_under_the_bound() {
    let (before, after, phases) = ([0.8, 0.2], [0.2, 0.8], [0.1, 0.9]);
    let without = simulate(LossPolicy::Freeze, false, &before, &after, &phases, 3.0, 5.0, 0.5, 1.0);
    assert!((without.max_sum - 160.0).abs() < 1e-9, "Σ = {}", without.max_sum); // old 80 + new 80
    for policy in [LossPolicy::Freeze, LossPolicy::Hybrid] {
        let with = simulate(policy, true, &before, &after, &phases, 3.0, 5.0, 0.5, 1.0);
        assert!(with.max_sum <= BOUND + 1e-9, "{policy:?}: Σ = {}", with.max_sum);
        assert!(with.keepers.iter().any(|k| k.count(Mode::Learning) > 0));
    }
}

/// The share is capped by the grant: leases expire at different times, and a gate on a
/// small grant must not rise to bound/N̂ while a gate on a large one still holds it.
#[test]
fn staggered_expiry_needs_the_grant_cap() {
    let mut a = keeper(LossPolicy::Hybrid, 10.0, 2);
    let mut b = keeper(LossPolicy::Hybrid, 10.0, 2);
    let ga = Some(Grant { limit: 90.0, expires: 12.0, members: 2, epoch: 0 });
    let gb = Some(Grant { limit: 10.0, expires: 5.0, members: 2, epoch: 0 });
    a.decide(&input(1.0, ga, true, 1e9));
    b.decide(&input(1.0, gb, true, 1e9));
    let (da, db) = (a.decide(&input(6.0, ga, false, 1e9)), b.decide(&input(6.0, gb, false, 1e9)));
    assert_eq!((da.mode, db.mode), (Mode::Frozen, Mode::Share));
    assert_eq!(da.limit + db.limit, 100.0); // 90 + min(10, 50), not 90 + 50
    let (da, db) = (a.decide(&input(13.0, ga, false, 1e9)), b.decide(&input(13.0, gb, false, 1e9)));
    assert_eq!((da.limit, db.limit), (50.0, 10.0));
}

/// The coordinator is alive but cut off from gate A. Once A's lease expires it counts A
/// at min(grant, bound/M) = 50 and hands the rest to B: Hybrid stays at the bound, Freeze
/// (still holding 80) goes over it.
#[test]
fn a_partition_from_one_gate_breaks_freeze_not_hybrid() {
    for (policy, want) in [(LossPolicy::Hybrid, 100.0), (LossPolicy::Freeze, 130.0)] {
        let mut a = keeper(policy, 10.0, 2);
        let mut b = keeper(policy, 10.0, 2);
        let ga = Some(Grant { limit: 80.0, expires: 10.0, members: 2, epoch: 0 });
        a.decide(&input(0.0, ga, true, 1e9));
        b.decide(&input(0.0, Some(Grant { limit: 20.0, expires: 10.0, members: 2, epoch: 0 }), true, 1e9));
        // After A's lease: B renewed with the reclaimed capacity, A is cut off.
        let gb = Some(Grant { limit: 100.0 - 80.0f64.min(BOUND / 2.0), expires: 21.0, members: 2, epoch: 0 });
        let sum = a.decide(&input(11.0, ga, false, 1e9)).limit + b.decide(&input(11.0, gb, true, 1e9)).limit;
        assert_eq!(sum, want, "{policy:?}");
    }
}

#[test]
fn modes_and_counters() {
    let g = Some(Grant { limit: 40.0, expires: 10.0, members: 4, epoch: 0 });
    let mut f = keeper(LossPolicy::Freeze, 10.0, 4);
    assert_eq!(f.decide(&input(0.0, None, false, 100.0)).mode, Mode::Bootstrap);
    assert_eq!(f.decide(&input(0.0, None, false, 100.0)).limit, 25.0);
    let d = f.decide(&input(1.0, g, true, 100.0));
    assert_eq!((d.mode, d.limit), (Mode::Learning, 25.0), "bootstrap → fresh: learning at what it held");
    assert_eq!(f.decide(&input(2.0, g, true, 30.0)).limit, 25.0);
    assert_eq!(f.decide(&input(2.0, g, false, 100.0)).mode, Mode::Frozen);
    let d = f.decide(&input(20.0, g, false, 100.0));
    assert_eq!((d.mode, d.limit), (Mode::HeldExpired, 25.0));
    // A fresh price after the learning period: the grant, under the proposal.
    let g2 = Some(Grant { limit: 40.0, expires: 40.0, members: 4, epoch: 0 });
    assert_eq!(f.decide(&input(21.0, g2, true, 100.0)).mode, Mode::Learning);
    let d = f.decide(&input(32.0, g2, true, 100.0));
    assert_eq!((d.mode, d.limit), (Mode::Granted, 40.0));
    assert_eq!(f.decide(&input(33.0, g2, true, 30.0)).limit, 30.0);
    assert_eq!(f.count(Mode::Bootstrap), 2);
    assert_eq!(f.without_price(), 4);
    assert_eq!(f.counts().iter().sum::<u64>(), 9);

    let mut fb = keeper(LossPolicy::Fallback, 10.0, 4);
    fb.decide(&input(0.0, g, true, 100.0));
    let d = fb.decide(&input(1.0, g, false, 100.0));
    assert_eq!((d.mode, d.limit), (Mode::Fallback, 100.0));
    assert_eq!(fb.decide(&input(1.0, g, false, f64::INFINITY)).limit, f64::INFINITY);
    assert_eq!(Mode::ALL.map(Mode::name).len(), 7);
}

#[test]
fn members_shrink_only_when_known_dead() {
    let g = Some(Grant { limit: 50.0, expires: 1.0, members: 4, epoch: 0 });
    let mut h = keeper(LossPolicy::Hybrid, 1.0, 1);
    h.decide(&input(0.0, g, true, 1e9));
    assert_eq!(h.members(), 4);
    h.see_alive(5);
    assert_eq!(h.decide(&input(2.0, g, false, 1e9)).limit, 20.0);
    h.see_alive(3);
    assert_eq!(h.members(), 5);
    h.confirm_dead(3);
    assert_eq!(h.members(), 2);
    // The share would be 50 now, but without a fresh price the cap never rises.
    assert_eq!(h.decide(&input(3.0, g, false, 1e9)).limit, 20.0);
    h.confirm_dead(10);
    assert_eq!(h.members(), 1);
}

#[test]
fn bad_inputs_are_conservative() {
    let g = Some(Grant { limit: 50.0, expires: 10.0, members: 0, epoch: 0 });
    let mut h = keeper(LossPolicy::Hybrid, 5.0, 2);
    let d = h.decide(&input(1.0, g, true, f64::NAN));
    assert_eq!((d.limit, d.members), (0.0, 1));
    assert_eq!(h.decide(&input(1.0, g, true, -5.0)).limit, 0.0);
    // A NaN clock: the lease reads as expired, no fresh price.
    let d = h.decide(&input(f64::NAN, g, true, 1e9));
    assert!(!d.mode.fresh() && d.limit <= 50.0);
    let bad = Some(Grant { limit: f64::NAN, expires: f64::NAN, members: 3, epoch: 0 });
    let d = h.decide(&input(2.0, bad, true, 1e9));
    assert!(!d.mode.fresh() && d.limit == 0.0);
    assert!(KeeperConfig::new(LossPolicy::Hybrid, f64::NAN, 1.0, 1).is_err());
    assert!(KeeperConfig::new(LossPolicy::Hybrid, 1.0, 0.0, 1).is_err());
    assert!(KeeperConfig::new(LossPolicy::Hybrid, 1.0, 1.0, 0).is_err());
}
