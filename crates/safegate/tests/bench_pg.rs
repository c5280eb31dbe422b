//! `safegate bench overload` in front of a real PostgreSQL (a server of the test's own,
//! `pg/mod.rs`): the service curve is measured before the runs, the oracle is the best of a
//! sweep of fixed limits in the same run, failed transactions are counted as failures, and
//! the PostgreSQL flags are checked like every other flag. Short runs: the figures
//! themselves are measured by the command in BENCHMARKS.md, not asserted here.

mod pg;

use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).env_remove("SAFEGATE_PG_URL").output().expect("runs")
}

#[test]
fn a_postgres_run_measures_the_curve_and_sweeps_the_oracle() {
    let server = pg::PgServer::start();
    let out = safegate(&[
        "bench",
        "overload",
        "--pg-url",
        server.url(),
        "--scenarios",
        "pg-1.5x",
        "--stacks",
        "tower-limit-oracle,safegate",
        "--secs",
        "2",
        "--pg-curve-secs",
        "0.3",
        "--pg-pool",
        "16",
        "--pause-ms",
        "50",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    // The password-free URL is shown; the spec is in the settings.
    assert_eq!(v["settings"]["postgres"]["spec"]["pool"], 16, "{}", v["settings"]);
    let s = &v["scenarios"][0];
    assert_eq!(s["name"], "pg-1.5x");
    // The curve: one point per client count up to the pool, each with a rate.
    let curve = s["curve"].as_array().expect("a measured curve");
    let ns: Vec<u64> = curve.iter().map(|p| p["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [1, 2, 3, 4, 6, 8, 12, 16]);
    assert!(curve.iter().all(|p| p["rate"].as_f64().is_some_and(|r| r >= 0.0)), "{curve:?}");
    assert!(curve[0]["rate"].as_f64().unwrap() > 10.0, "one client commits transactions: {curve:?}");
    // The oracle is the best of the fixed limits run, and every stack ran under the same load.
    let runs = s["runs"].as_array().expect("runs");
    let fixed: Vec<&serde_json::Value> =
        runs.iter().filter(|r| r["stack"].as_str().is_some_and(|n| n.starts_with("tower-limit-"))).collect();
    assert!(!fixed.is_empty() && fixed.len() <= 5, "{runs:?}");
    let best = fixed.iter().map(|r| r["goodput_rps"].as_f64().unwrap()).fold(0.0, f64::max);
    let oracle = s["oracle"].as_str().expect("an oracle");
    let oracle_run = runs.iter().find(|r| r["stack"] == oracle).expect("the oracle's run");
    assert_eq!(oracle_run["goodput_rps"].as_f64().unwrap(), best);
    assert!(best > 0.0, "a fixed limit commits transactions: {runs:?}");
    let safegate = runs.iter().find(|r| r["stack"] == "safegate").expect("safegate's run");
    assert!(safegate["goodput_rps"].as_f64().unwrap() > 0.0, "{safegate}");
    assert!(safegate["limit_timeline"].as_array().is_some_and(|l| !l.is_empty()), "{safegate}");
}

/// `bench overload --pg-url URL --scenarios pg-1.5x` with `extra` flags (nothing listens on
/// port 1: a run that got past its checks fails to connect).
fn against(url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["bench", "overload", "--pg-url", url, "--scenarios", "pg-1.5x"];
    args.extend_from_slice(extra);
    safegate(&args)
}

#[test]
fn postgres_flags_are_checked_and_name_themselves() {
    // A pg-* scenario with no database.
    let out = safegate(&["bench", "overload", "--scenarios", "pg-3x", "--secs", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--pg-url"), "{err}");
    let nobody = "postgres://postgres@127.0.0.1:1/none";
    for (flag, value) in [
        ("--pg-rows", "1"),
        ("--pg-hold-ms", "-1"),
        ("--pg-hold-ms", "NaN"),
        ("--pg-pool", "0"),
        ("--pg-retries", "101"),
        ("--pg-curve-secs", "0"),
        ("--pg-isolation", "snapshot"),
    ] {
        let out = against(nobody, &[&format!("{flag}={value}")]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
    // A database nobody serves: a clear error naming it (no password shown), exit 2.
    let out = against("postgres://u:secret@127.0.0.1:1/none", &["--secs", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("127.0.0.1:1") && !err.contains("secret"), "{err}");
}

/// Its own server and a pool of `pool` connections whose read-committed transactions on 8
/// hot rows hold 300 ms between their updates (the cancellation tests' backend).
async fn holding_300_ms(pool: usize, retries: u32) -> (pg::PgServer, safegate_live::pg::Pg) {
    use safegate_live::pg::{Isolation, Pg, PgSpec};
    let server = pg::PgServer::start();
    let spec = PgSpec {
        url: server.url().to_string(),
        rows: 8,
        hold_ms: 300.0,
        isolation: Isolation::ReadCommitted,
        pool,
        retries,
    };
    let pg = Pg::connect(&spec).await.expect("connects");
    (server, pg)
}

/// A request whose caller gives up while it waits for a pooled connection (a client
/// timeout drops the handler's future) runs nothing later: only the transaction that held
/// the connection commits. Fails before: the wait ran on a spawned task, so every abandoned
/// request ran its transaction anyway, and after a deadlock the pool worked for seconds
/// through requests nobody was waiting for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_abandoned_while_waiting_for_a_connection_runs_nothing() {
    use std::time::Duration;
    let (_server, pg) = holding_300_ms(1, 0).await;
    // The first request takes the only connection and holds it for 300 ms.
    let first = tokio::spawn(pg.clone().call());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The second gives up after 50 ms of waiting for it.
    assert!(tokio::time::timeout(Duration::from_millis(50), pg.clone().call()).await.is_err());
    first.await.expect("the first request's task").expect("the first transaction commits");
    // Long enough for a second transaction (another 300-ms hold) to have run, had it started.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(pg.hot_total().await.expect("reads the rows"), 2, "one transaction of two updates");
}

/// A caller that gives up once its transaction has started: the statement running then
/// finishes, but nothing more is sent for it, and the application's work between the
/// statements (the hold) stops at once: the transaction is rolled back, its connection is
/// back in the pool, and a deadlock or serialization failure is not retried for nobody.
/// Fails before: the transaction's task ran on to its commit and its retries whoever was
/// waiting, holding its connection (the two calls after it took 555 ms); with only a flag
/// read after the hold, it kept its lock and connection for the rest of the hold (571 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_abandoned_inside_its_transaction_is_rolled_back() {
    use std::time::{Duration, Instant};
    let (_server, pg) = holding_300_ms(2, 3).await;
    // The caller gives up 50 ms into the 300-ms hold between the two updates.
    assert!(tokio::time::timeout(Duration::from_millis(50), pg.clone().call()).await.is_err());
    // At once, two calls on the pool of two (on rows no other holds): both connections must
    // serve side by side, about one hold in all; had the abandoned transaction kept its
    // connection for the rest of its hold, the second would wait 250 ms for it.
    let start = Instant::now();
    let (x, y) = tokio::join!(pg.clone().call(), pg.clone().call());
    let took = start.elapsed();
    x.expect("commits");
    y.expect("commits");
    assert!(took < Duration::from_millis(500), "two calls on a pool of two took {took:?}");
    assert_eq!(pg.hot_total().await.expect("reads the rows"), 4, "two commits; the abandoned one rolled back");
}
