//! `safegate serve`'s fleet view end to end: `GET /api/fleet/stream` starts a bounded
//! `safegate fleet` run (gate processes, a private redis-server stopped for an outage, the
//! seed's pool as the shared downstream) and streams every second's aggregate and every
//! gate's mode. Needs redis-server on PATH (`scripts/test` installs it).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The runs measure wall-clock rates on 2 cores: one at a time (the server allows one
/// anyway).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// `GET path` over HTTP/1.0 (so a stream's body is close-delimited, not chunked): the
/// status and a reader positioned at the body.
fn get(url: &str, path: &str) -> (u16, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr(url)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n", addr(url)).unwrap();
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let code = status.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
            break;
        }
    }
    (code, r)
}

fn body(mut r: BufReader<TcpStream>) -> String {
    let mut b = String::new();
    r.read_to_string(&mut b).unwrap();
    b
}

/// Reads server-sent events (`event: name` then `data: json`) and sends each one on.
fn events(r: BufReader<TcpStream>, tx: mpsc::Sender<(String, Value)>) {
    let mut name = String::new();
    for line in r.lines() {
        let Ok(line) = line else { return };
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(d) = line.strip_prefix("data: ") {
            if tx.send((name.clone(), serde_json::from_str(d).unwrap())).is_err() {
                return;
            }
        }
    }
}

/// One whole run: its `start`, its `second`s, its `done` (or a failure naming an `error`).
fn play(url: &str, query: &str) -> (Value, Vec<Value>, Value) {
    let (code, r) = get(url, &format!("/api/fleet/stream?{query}"));
    assert_eq!(code, 200, "{query}: {}", body(r));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || events(r, tx));
    let mut start = Value::Null;
    let mut seconds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (name, v) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the run ended");
        match name.as_str() {
            "start" => start = v,
            "second" => seconds.push(v),
            "done" => return (start, seconds, v),
            other => panic!("{other}: {v}"),
        }
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn modes(s: &Value) -> Vec<&str> {
    s["gates"].as_array().unwrap().iter().map(|g| g["mode"].as_str().unwrap()).collect()
}

#[test]
fn the_fleet_view_streams_every_gates_mode_through_an_outage() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_server, url) = common::serve();
    let (start, seconds, done) = play(&url, "nodes=3&secs=11&outage=3:5&mode=hybrid");
    assert_eq!((start["nodes"].as_u64(), start["mode"].as_str()), (Some(3), Some("hybrid")), "{start}");
    let bound = f(&start["capacity"]);
    assert!(seconds.len() >= 9, "{} seconds", seconds.len());
    let known = ["granted", "learning", "frozen", "held-expired", "share", "fallback", "bootstrap", "starting"];
    for s in &seconds {
        assert_eq!(s["gates"].as_array().unwrap().len(), 3, "{s}");
        assert!(modes(s).iter().all(|m| known.contains(m)), "{s}");
    }
    // Through the outage each gate freezes and, its 1-s lease over, takes its share.
    let down: Vec<&Value> = seconds.iter().filter(|s| s["coordinator_up"] == false).collect();
    assert!(down.len() >= 4, "{} seconds down", down.len());
    // (The first second down may still show a fresh grant: the detector suspects the
    // coordinator after 3 refresh intervals, and a gate's line is up to 200 ms old.)
    assert!(down.iter().skip(1).all(|s| modes(s).iter().all(|m| ["frozen", "share"].contains(m))), "{down:?}");
    assert!(down.iter().any(|s| modes(s).contains(&"share")), "{down:?}");
    // Back to fresh grants by the end.
    let last = seconds.last().unwrap();
    assert!(modes(last).iter().all(|m| ["granted", "learning"].contains(m)), "{last}");
    // Within the bound through it (the buckets' burst allows a little over in one second),
    // and the shared pool serves what is admitted.
    let o = &done["outage"];
    assert!(f(&o["worst_second"]) <= 1.15 * bound, "{o}");
    assert!(f(&o["mean_succeeded"]) >= 0.8 * bound, "{o}");
    eprintln!("hybrid: {o}");
}

#[test]
fn fallback_shows_in_every_gate_and_overruns_the_bound() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_server, url) = common::serve();
    let (start, seconds, done) = play(&url, "nodes=3&secs=8&outage=2:5&mode=fallback");
    let bound = f(&start["capacity"]);
    let down: Vec<&Value> = seconds.iter().filter(|s| s["coordinator_up"] == false).collect();
    // The detector suspects the coordinator after 3 refresh intervals (0.75 s).
    assert!(down.iter().skip(1).all(|s| modes(s).iter().all(|m| *m == "fallback")), "{down:?}");
    let o = &done["outage"];
    assert!(f(&o["mean_admitted"]) >= 1.5 * bound, "{o}");
    eprintln!("fallback: {o}");
}

#[test]
fn one_run_at_a_time_freed_when_the_viewer_leaves_and_bad_queries_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_server, url) = common::serve();
    let (code, r) = get(&url, "/api/fleet/stream?nodes=99");
    assert_eq!(code, 400);
    let b = body(r);
    assert!(b.contains("nodes = 99"), "{b}");

    // A 60-s run: a second one (fleet or live) is refused while it plays…
    let (code, r) = get(&url, "/api/fleet/stream?nodes=2&secs=60&outage=");
    assert_eq!(code, 200);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || events(r, tx));
    let (name, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(name, "start");
    let (name, second) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(name, "second", "{second}");
    for path in ["/api/fleet/stream?nodes=2", "/api/live/stream?duration=5"] {
        let (code, r) = get(&url, path);
        assert_eq!(code, 409, "{path}");
        assert!(body(r).contains("one at a time"));
    }
    // …and stops when its viewer goes away, freeing the slot within seconds.
    drop(rx);
    let left = Instant::now();
    loop {
        let (code, r) = get(&url, "/api/fleet/stream?nodes=99");
        if code == 400 {
            break;
        }
        assert_eq!(code, 409, "{}", body(r));
        assert!(left.elapsed() < Duration::from_secs(10), "the slot was not freed 10 s after the viewer left");
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("slot freed {:.1} s after the viewer left", left.elapsed().as_secs_f64());
}

/// Descendants of `pid` (from `/proc/*/stat`'s parent field).
fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        // `pid (comm) state ppid …`; comm may hold spaces, so split after its `)`.
        let Some((head, tail)) = stat.rsplit_once(')') else { continue };
        let comm = head.split_once('(').map_or("", |x| x.1).to_string();
        let Some(ppid) = tail.split_whitespace().nth(1).and_then(|x| x.parse::<u32>().ok()) else { continue };
        all.push((p, ppid, comm));
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (p, pp, comm) in &all {
            if *pp == parent {
                out.push((*p, comm.clone()));
                frontier.push(*p);
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    // A zombie (`Z`) has exited and waits for its parent.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, t)| !t.trim_start().starts_with('Z')))
}

/// SIGTERM to `serve` while runs play stops each run's servers before the process ends
/// (before, the process ended at once and left the run's private redis-server running;
/// with Ctrl-C it waited for the run's bounded end).
#[test]
fn sigterm_stops_the_playing_run_and_its_servers_before_serve_exits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (path, first) in
        [("/api/live/stream?duration=60&speed=1", "progress"), ("/api/fleet/stream?nodes=2&secs=60", "second")]
    {
        let (mut server, url) = common::serve();
        let pid = server.0.id();
        let (code, r) = get(&url, path);
        assert_eq!(code, 200, "{path}: {}", body(r));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || events(r, tx));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (name, v) =
                rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the run started");
            assert_ne!(name, "error", "{v}");
            if name == first {
                break;
            }
        }
        let children = descendants(pid);
        assert!(
            children.iter().any(|(_, c)| c.starts_with("redis-server")),
            "{path}: no redis-server under serve: {children:?}"
        );
        let sent = Instant::now();
        assert!(std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
        // The stream ends with an error event saying why.
        let mut last = None;
        while let Ok((name, v)) = rx.recv_timeout(Duration::from_secs(15)) {
            last = Some((name, v));
        }
        let (name, v) = last.expect("an event after SIGTERM");
        assert_eq!(name, "error", "{v}");
        assert!(v["error"].as_str().unwrap().contains("server is stopping"), "{v}");
        let status = loop {
            if let Some(s) = server.0.try_wait().unwrap() {
                break s;
            }
            assert!(sent.elapsed() < Duration::from_secs(20), "{path}: serve still running 20 s after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{path}: {status:?}");
        let left: Vec<_> = children.iter().filter(|(p, _)| alive(*p)).collect();
        assert!(left.is_empty(), "{path}: left running after serve exited: {left:?}");
        eprintln!("{path}: serve and its {} processes stopped {:?} after SIGTERM", children.len(), sent.elapsed());
    }
}
