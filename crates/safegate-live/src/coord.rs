//! The fleet's coordination price over Redis: one server-side script that every gate calls
//! to publish its demand and heartbeat and to receive its grant with a lease (docs/fleet.md).
//!
//! **The price** is Kelly, Maulloo and Tan's dual algorithm ("Rate control for
//! communication networks: shadow prices, proportional fairness and stability", J. Oper.
//! Res. Soc. 49, 1998): a shadow price moves with the aggregate admitted rate against the
//! dependency's capacity `c`,
//!
//! ```text
//! p ← max(0, p + γ·Δt·(Σⱼ yⱼ − c)),     yⱼ = min(dⱼ, wⱼ / p)
//! ```
//!
//! with `dⱼ` gate j's demand, `wⱼ` its weight (willingness to pay; equal weights give the
//! proportionally fair, here equal, split of `c` among saturated gates) and `Δt` the time
//! since the last update, read from Redis `TIME` (one clock for the whole fleet). A gate's
//! grant is its `yᵢ` at the new price, valid until a lease expiry.
//!
//! **The ceiling.** The update is projected onto `[0, Σⱼ wⱼ / c]` over the live members.
//! At that price every gate asks at most `wⱼ / p`, so `Σ yⱼ ≤ c`: the clearing price is
//! never above it, and the projection leaves the equilibrium and its local stability
//! alone. Without it, a demand far beyond `c` threw the price from 0 past any clearing
//! value in one update: two gates at 5·10⁵ req/s each against `c` = 60 got a price of
//! about 1 500 and grants of 0.06 req/s, and at `γ·Δt·c` ≈ 0.1 a step the price would have
//! taken about an hour to come back down (measured: 0–8 admitted a second for 4 s).
//!
//! **Membership** is the set of gates whose last call is younger than one lease; a gate
//! that stops calling leaves the sum after its lease.
//!
//! **Learning** (after YouTube's Doorman): a coordinator that starts without state (a
//! Redis restarted without persistence, or a new one) does not know what the gates still
//! hold under leases granted before. For one lease length after its epoch starts it hands
//! no gate more than the gate says it holds (`has`), so the sum of what every gate believes
//! it holds never exceeds what it was.

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::Script;
use serde::Serialize;

use crate::redis_conn::{check_namespace, connect_manager, redact, timed_out};
use crate::LiveError;

/// Publish demand and heartbeat, update the price, return the grant.
///
/// KEYS: gates hash, state hash. ARGV: gate id, demand \[req/s\], weight, has \[req/s\],
/// capacity \[req/s\], γ, lease \[ms\], max Δt \[ms\].
/// Returns `{grant, expiry_us, price, members, learning, epoch}` as strings (floats
/// survive).
const PRICE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease_us = tonumber(ARGV[7]) * 1000
local max_dt = tonumber(ARGV[8]) / 1000
local cap = tonumber(ARGV[5])
local gamma = tonumber(ARGV[6])
local epoch = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '')
if not epoch then
  epoch = now
  redis.call('HSET', KEYS[2], 'epoch', string.format('%.0f', epoch))
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. string.format('%.0f', now))
local p = tonumber(redis.call('HGET', KEYS[2], 'price') or '0') or 0
local last = tonumber(redis.call('HGET', KEYS[2], 'updated') or '') or now
local dt = math.min(math.max(0, (now - last) / 1000000), max_dt)
-- Aggregate admitted rate at the current price, over live members; the dead leave.
local all = redis.call('HGETALL', KEYS[1])
local function rate(d, w, price)
  if price <= 0 then return d end
  return math.min(d, w / price)
end
local y, members, wsum = 0, 0, 0
for i = 1, #all, 2 do
  local d, w, seen = string.match(all[i + 1], '(%S+) (%S+) (%S+)')
  d, w, seen = tonumber(d), tonumber(w), tonumber(seen)
  if d and w and seen and now - seen <= lease_us then
    y = y + rate(d, w, p)
    members = members + 1
    wsum = wsum + w
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
-- Projected onto [0, sum(w) / cap]: at that price every gate asks at most w/p and the sum
-- is at most cap, so the clearing price is never above it.
p = math.min(math.max(0, p + gamma * dt * (y - cap)), wsum / cap)
redis.call('HSET', KEYS[2], 'price', tostring(p), 'updated', string.format('%.0f', now))
local grant = rate(tonumber(ARGV[2]), tonumber(ARGV[3]), p)
local learning = 0
if now - epoch < lease_us then
  learning = 1
  grant = math.min(grant, tonumber(ARGV[4]))
end
return {tostring(grant), string.format('%.0f', now + lease_us), tostring(p), tostring(members), tostring(learning), string.format('%.0f', epoch)}
"#;

/// What the coordinator handed a gate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Grant {
    /// The admitted rate granted \[req/s\].
    pub rate: f64,
    /// When the lease ends, in Redis `TIME` microseconds.
    pub expiry_us: u64,
    /// The price after this update.
    pub price: f64,
    /// Live members of the fleet (gates that called within one lease).
    pub members: u32,
    /// Whether the coordinator is in its learning period (the grant was capped at `has`).
    pub learning: bool,
    /// The coordinator's epoch: when its state began (Redis `TIME`, µs). A new value means
    /// the state was lost (a restart without persistence, a failover).
    pub epoch: u64,
}

/// The price's settings, the same for every gate of a fleet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PriceConfig {
    /// The dependency's capacity `c` \[req/s\]: what the price steers the aggregate to.
    pub capacity: f64,
    /// The price's gain `γ` \[price per (req/s)·s\].
    pub gamma: f64,
    /// Lease length \[ms\]: grants expire after it, members leave after it, learning lasts it.
    pub lease_ms: u64,
    /// Longest `Δt` one update integrates \[ms\] (a coordinator silent for minutes does
    /// not jump the price by minutes' worth of error).
    pub max_step_ms: u64,
}

impl PriceConfig {
    /// Check the ranges; the error names the field.
    pub fn check(&self) -> Result<(), safegate_core::RangeError> {
        use safegate_core::error::check;
        check::within("capacity", self.capacity, f64::MIN_POSITIVE, 1e9, "(0, 1e9] req/s")?;
        check::within("gamma", self.gamma, f64::MIN_POSITIVE, 1e9, "(0, 1e9]")?;
        if !(10..=3_600_000).contains(&self.lease_ms) {
            return Err(safegate_core::RangeError::new("lease_ms", self.lease_ms, "[10, 3600000] ms"));
        }
        if !(1..=3_600_000).contains(&self.max_step_ms) {
            return Err(safegate_core::RangeError::new("max_step_ms", self.max_step_ms, "[1, 3600000] ms"));
        }
        Ok(())
    }
}

/// A connection to one server, or to a Redis Cluster (the fleet's two keys share the hash
/// tag `{NS}`, so the script runs on the primary of their slot).
#[derive(Clone)]
enum Con {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// One gate's handle on the coordinator.
#[derive(Clone)]
pub struct Coordinator {
    con: Con,
    url: String,
    ns: String,
    price: Script,
    cfg: PriceConfig,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator").field("url", &self.url).field("ns", &self.ns).field("cfg", &self.cfg).finish()
    }
}

impl Coordinator {
    /// Connect to the coordination Redis at `url` (namespace `ns`): one server, or a Redis
    /// Cluster, named by any of its nodes (a node that says `cluster_enabled:1` is taken
    /// for one) or by its comma-separated nodes.
    pub async fn connect(url: &str, ns: &str, cfg: PriceConfig) -> Result<Self, LiveError> {
        if url.contains(',') {
            let nodes: Vec<&str> = url.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
            return Self::connect_cluster(&nodes, ns, cfg).await;
        }
        check_namespace(ns)?;
        cfg.check()?;
        let (_, con) = connect_manager(url, std::time::Duration::from_millis(500), 1).await?;
        let info: String = redis::cmd("INFO").arg("cluster").query_async(&mut con.clone()).await.unwrap_or_default();
        if info.contains("cluster_enabled:1") {
            return Self::connect_cluster(&[url], ns, cfg).await;
        }
        let shown = redact(url);
        Ok(Self { con: Con::Single(con), url: shown, ns: ns.to_string(), price: Script::new(PRICE), cfg })
    }

    /// Connect to a Redis Cluster through any of its `nodes` (namespace `ns`).
    pub async fn connect_cluster(nodes: &[&str], ns: &str, cfg: PriceConfig) -> Result<Self, LiveError> {
        check_namespace(ns)?;
        cfg.check()?;
        let shown = nodes.iter().map(|n| redact(n)).collect::<Vec<_>>().join(",");
        let err = |what: &str| {
            let (url, what) = (shown.clone(), what.to_string());
            move |error| LiveError::Redis { url, what, error }
        };
        let timeout = std::time::Duration::from_millis(500);
        let client = redis::cluster::ClusterClient::builder(nodes.iter().copied())
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .build()
            .map_err(err("parsing the node URLs"))?;
        let con = tokio::time::timeout(4 * timeout, client.get_async_connection())
            .await
            .map_err(|_| timed_out(&shown, "connecting to the cluster"))?
            .map_err(err("connecting to the cluster"))?;
        Ok(Self { con: Con::Cluster(con), url: shown, ns: ns.to_string(), price: Script::new(PRICE), cfg })
    }

    /// Publish this gate's demand and heartbeat and get its grant. `has` is the rate it
    /// currently believes it holds (capped in the coordinator's learning period).
    pub async fn refresh(&self, gate: &str, demand: f64, weight: f64, has: f64) -> Result<Grant, LiveError> {
        let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        let mut call = self.price.key(format!("{{{}}}:fleet:gates", self.ns));
        call.key(format!("{{{}}}:fleet:state", self.ns))
            .arg(gate)
            .arg(clean(demand))
            .arg(clean(weight).max(1e-9))
            .arg(clean(has))
            .arg(self.cfg.capacity)
            .arg(self.cfg.gamma)
            .arg(self.cfg.lease_ms)
            .arg(self.cfg.max_step_ms);
        let v: redis::RedisResult<Vec<String>> = match &self.con {
            Con::Single(c) => call.invoke_async(&mut c.clone()).await,
            Con::Cluster(c) => call.invoke_async(&mut c.clone()).await,
        };
        let v = v.map_err(|error| LiveError::Redis { url: self.url.clone(), what: "price script".into(), error })?;
        let f = |i: usize| v.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        Ok(Grant {
            rate: f(0).max(0.0),
            expiry_us: f(1).max(0.0) as u64,
            price: f(2),
            members: f(3).max(0.0) as u32,
            learning: f(4) > 0.5,
            epoch: v.get(5).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0),
        })
    }

    /// The price's settings.
    pub fn config(&self) -> &PriceConfig {
        &self.cfg
    }
}
