//! `GET /api/fleet/stream`: one `safegate fleet` run (gate processes coordinated by a price
//! over a private redis-server, the emulated downstream, optionally a coordinator outage)
//! streamed as server-sent events: the fleet's aggregate and every gate's mode each
//! second. See `docs/serve.md §The fleet view`.
//!
//! The run plays on a thread of its own with a current-thread runtime, like the live view.
//! It shares the live view's slot (one run at a time: both start a redis-server and load
//! the machine) and stops early when the viewer goes away.

use std::collections::HashMap;
use std::ops::ControlFlow;

use axum::response::Response;
use safegate_live::fleet::{default_gamma, parse_outage, play, GateCommand, Plan, Tick};
use safegate_live::fleet_gate::{parse_policy, policy_name};

use crate::api::{self, ApiError};
use crate::sse;

/// Most gate processes of one run from the page.
pub(crate) const MAX_FLEET_NODES: u32 = 16;
/// Longest run from the page \[wall seconds\].
pub(crate) const MAX_FLEET_SECONDS: f64 = 60.0;
/// Shortest refresh interval from the page \[ms\].
pub(crate) const MIN_FLEET_REFRESH_MS: u64 = 50;

/// The query's keys, all optional.
const KEYS: [&str; 8] = ["nodes", "mode", "capacity", "demand", "secs", "outage", "lease_ms", "refresh_ms"];

/// The run the query asks for: `nodes` (6), `mode` (`hybrid`, `freeze` or `fallback`),
/// `capacity` (60 req/s, the fleet's bound: 80 % of what the shared pool clears), `demand` (all gates, twice the capacity),
/// `secs` (30), `outage` (`START:LEN` seconds, `8:12`; empty for none), `lease_ms` (1000)
/// and `refresh_ms` (250).
fn parse(query: &HashMap<String, String>) -> Result<Plan, ApiError> {
    api::known_keys(query, &KEYS)?;
    let get = |key: &str| query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    let number = |key: &str, default: f64| -> Result<f64, ApiError> {
        get(key).map_or(Ok(default), |v| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| ApiError::bad(format!("{key}: {v:?} is not a number")))
        })
    };
    let whole = |key: &str, default: u64| -> Result<u64, ApiError> {
        get(key).map_or(Ok(default), |v| {
            v.parse::<u64>().map_err(|_| ApiError::bad(format!("{key}: {v:?} is not a whole number")))
        })
    };
    let nodes = whole("nodes", 6)?;
    if !(1..=u64::from(MAX_FLEET_NODES)).contains(&nodes) {
        return Err(ApiError::bad(format!("nodes = {nodes}: allowed 1 to {MAX_FLEET_NODES} gate processes")));
    }
    let secs = number("secs", 30.0)?;
    if !(2.0..=MAX_FLEET_SECONDS).contains(&secs) {
        return Err(ApiError::bad(format!("secs = {secs}: allowed [2, {MAX_FLEET_SECONDS}] seconds")));
    }
    let refresh_ms = whole("refresh_ms", 250)?;
    if refresh_ms < MIN_FLEET_REFRESH_MS {
        return Err(ApiError::bad(format!("refresh_ms = {refresh_ms}: at least {MIN_FLEET_REFRESH_MS} ms")));
    }
    let capacity = number("capacity", 60.0)?;
    let mode = get("mode").map_or(Ok(safegate_core::fleet::lease::LossPolicy::Hybrid), |m| {
        parse_policy(m).map_err(|e| ApiError::bad(format!("mode: {e}")))
    })?;
    let outage = match query.get("outage") {
        None => Some((8.0, 12.0)),
        Some(v) if v.trim().is_empty() || v.trim() == "none" => None,
        Some(v) => Some(parse_outage(v).map_err(ApiError::bad)?),
    };
    let plan = Plan {
        nodes: nodes as u32,
        redis: None,
        capacity,
        demand: number("demand", 2.0 * capacity)?,
        secs,
        mode,
        lease_ms: whole("lease_ms", 1000)?,
        refresh_ms,
        gamma: default_gamma(capacity),
        outage,
    };
    plan.check().map_err(ApiError::bad)?;
    Ok(plan)
}

/// One `second` event: the aggregate and every gate.
fn second(tick: &Tick<'_>) -> serde_json::Value {
    let gates: Vec<serde_json::Value> = tick
        .gates
        .iter()
        .zip(tick.admitted)
        .map(|(g, a)| {
            serde_json::json!({
                "id": g.id, "mode": g.mode, "limit": g.limit, "admitted": a,
                "grants": g.grants, "silences": g.silences, "unpriced": g.unpriced,
            })
        })
        .collect();
    let s = tick.second;
    serde_json::json!({
        "t": s.t, "admitted": s.admitted, "succeeded": s.succeeded, "jain": s.jain,
        "coordinator_up": s.coordinator_up, "gates": gates,
    })
}

/// Starts the run on its own thread (holding the slot until it ends), its gate processes
/// started by `gate`, and streams it.
pub(crate) fn stream(
    query: &HashMap<String, String>,
    slot: sse::Slot,
    gate: GateCommand,
) -> Result<Response, ApiError> {
    let plan = parse(query)?;
    let start = serde_json::json!({
        "nodes": plan.nodes, "mode": policy_name(plan.mode), "capacity": plan.capacity,
        "demand": plan.demand, "secs": plan.secs, "lease_ms": plan.lease_ms, "refresh_ms": plan.refresh_ms,
        "outage": plan.outage.map(|(a, b)| serde_json::json!({ "start": a, "length": b })),
    });
    Ok(sse::play(start, slot, move |rt, tx, stop| {
        let mut on_second = |tick: &Tick<'_>| {
            if sse::send(tx, "second", &second(tick)) {
                ControlFlow::Continue(())
            } else {
                // The viewer went away: stop the processes and free the slot.
                ControlFlow::Break(())
            }
        };
        let report = stop.block_on(rt, play(&plan, &gate, None, &mut on_second))?;
        serde_json::to_value(report).map_err(|e| e.to_string())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_defaults_are_a_hybrid_fleet_through_an_outage() {
        let p = parse(&HashMap::new()).unwrap();
        assert_eq!((p.nodes, policy_name(p.mode), p.capacity, p.demand), (6, "hybrid", 60.0, 120.0));
        assert_eq!((p.secs, p.outage, p.redis), (30.0, Some((8.0, 12.0)), None));
        let p = parse(&query(&[("outage", ""), ("mode", "fallback"), ("nodes", "3")])).unwrap();
        assert_eq!((p.outage, policy_name(p.mode), p.nodes), (None, "fallback", 3));
    }

    #[test]
    fn a_query_out_of_bounds_names_its_key() {
        for (pairs, needle) in [
            (vec![("nodes", "17")], "nodes = 17"),
            (vec![("nodes", "0")], "nodes = 0"),
            (vec![("nodes", "two")], "nodes: \"two\""),
            (vec![("secs", "61")], "secs = 61"),
            (vec![("secs", "NaN")], "secs: \"NaN\""),
            (vec![("refresh_ms", "5")], "refresh_ms = 5"),
            (vec![("mode", "panic")], "mode: unknown policy"),
            (vec![("outage", "5")], "outage \"5\""),
            (vec![("outage", "20:20"), ("secs", "30")], "outage 20:20"),
            (vec![("capacity", "-1")], "capacity"),
            (vec![("demand", "1e9")], "demand"),
            (vec![("lease_ms", "1")], "lease_ms"),
            (vec![("speed", "2")], "speed: unknown"),
        ] {
            let e = parse(&query(&pairs)).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains(needle), "{pairs:?}: {}", e.message);
        }
    }
}
