//! `safegate serve`'s API refusals end to end, over raw sockets against the binary: what a
//! black-box review found it accepted (a host file read through a health trace, a
//! `text/plain` post, a run over the event budget, a body that never arrives, a live
//! stream with unknown keys). See `docs/serve.md §POST /api/run`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Sends `request` (the whole of it, as written) and reads until the server closes or 20 s
/// pass: the status and the body.
fn raw(url: &str, request: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("the server answered and closed within 20 s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (code, body)
}

/// `POST /api/run` with `content_type` (none when empty), over HTTP/1.0 so the server
/// closes after answering.
fn post(url: &str, content_type: &str, body: &str) -> (u16, String) {
    let ty = if content_type.is_empty() { String::new() } else { format!("Content-Type: {content_type}\r\n") };
    raw(url, &format!("POST /api/run HTTP/1.0\r\nHost: x\r\n{ty}Content-Length: {}\r\n\r\n{body}", body.len()))
}

#[test]
fn the_api_refuses_files_simple_posts_and_runs_over_budget() {
    let (_server, url) = common::serve();
    let (code, body) = post(&url, "text/plain", r#"{"set": {"traffic.rate": 55}}"#);
    assert_eq!(code, 415, "{body}");
    assert!(body.contains("application/json or application/toml"), "{body}");
    let (code, body) = post(&url, "application/json", "[]");
    assert_eq!(code, 400, "{body}");

    for file in ["/etc/passwd", "/dev/zero", "/no/such/file"] {
        let started = Instant::now();
        let run = format!(r#"{{"set": {{"health.kind": "trace", "health.file": "{file}"}}}}"#);
        let (code, body) = post(&url, "application/json; charset=utf-8", &run);
        assert_eq!(code, 400, "{file}: {body}");
        assert!(body.contains("health.file") && body.contains("no file paths"), "{file}: {body}");
        assert!(!body.contains("root:") && !body.contains("No such file"), "{file}: {body}");
        assert!(started.elapsed() < Duration::from_secs(2), "{file}: {:?}", started.elapsed());
    }

    let started = Instant::now();
    let (code, body) = post(
        &url,
        "application/json",
        r#"{"set":{"run.mode":"stochastic","run.duration":99,"health.ramp_down":1e-6,"health.ramp_up":1e-6,"health.hold_high":1e-6,"health.hold_low":1e-6},"baseline":true,"points":10}"#,
    );
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("health pieces") && body.contains("2000000"), "{body}");
    eprintln!("the 1e-6 s ramps refused in {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    assert!(started.elapsed() < Duration::from_secs(2));

    let (code, body) = raw(&url, "GET /api/live/stream?foo=1 HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("foo: unknown query parameter"), "{body}");
    let (code, body) = raw(&url, "GET /api/run HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(code, 405, "{body}");
    assert!(body.contains("\"error\""), "{body}");
}

/// `Content-Length: 100` and 2 bytes sent: a 408 after the server's 10 s, then the
/// connection closed (it was held open for ever).
#[test]
fn a_body_that_never_arrives_gets_a_408_within_the_timeout() {
    let (_server, url) = common::serve();
    let started = Instant::now();
    let (code, body) = raw(
        &url,
        "POST /api/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}",
    );
    let took = started.elapsed();
    eprintln!("a stalled body answered {code} after {:.1} s", took.as_secs_f64());
    assert_eq!(code, 408, "{body}");
    assert!(body.contains("not received within 10 s"), "{body}");
    assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(15), "{took:?}");
}
