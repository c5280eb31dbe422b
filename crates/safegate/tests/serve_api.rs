//! `safegate serve`'s API refusals end to end, over raw sockets against the binary: what a
//! black-box review found it accepted (a host file read through a health trace, a
//! `text/plain` post, a run over the event budget, a body that never arrives, a live
//! stream with unknown keys), and what a second one found (an empty scenario run as the
//! default, a repeated query parameter, an empty 404, a request head that never ends, a
//! NaN reported by its column, a doubled `boundary:`). See `docs/serve.md §POST /api/run`.

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

/// `GET path` over HTTP/1.0: the status and the body.
fn get(url: &str, path: &str) -> (u16, String) {
    raw(url, &format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n"))
}

/// The first 300 characters of `body`, for a failure's message (a run's document is
/// hundreds of kilobytes).
fn short(body: &str) -> String {
    body.chars().take(300).collect()
}

/// The body's `error`, which every refusal has (a body that is not a JSON object with one
/// fails the test).
fn error_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    v["error"].as_str().unwrap_or_else(|| panic!("no \"error\" string: {body}")).to_string()
}

/// A scenario text with no table or key ran the embedded band-80 in silence, where
/// `safegate run` refuses an empty file; leaving `scenario` out still runs it.
#[test]
fn an_empty_or_comment_only_scenario_is_refused() {
    let (_server, url) = common::serve();
    for (ty, body, input) in [
        ("application/json", r#"{"scenario": ""}"#, "scenario"),
        ("application/json", r#"{"scenario": " \n\t\r\n", "set": {"traffic.rate": 55}}"#, "scenario"),
        ("application/json", r##"{"scenario": "# a comment\n\n   # another\n"}"##, "scenario"),
        ("application/toml", "", "request body"),
        ("application/toml", "\n  \n", "request body"),
        ("application/toml", "# name = \"x\"\n#[traffic]\n", "request body"),
    ] {
        let (code, resp) = post(&url, ty, body);
        assert_eq!(code, 400, "{body:?}: {}", short(&resp));
        let e = error_of(&resp);
        assert!(e.contains(input) && e.contains("empty") && e.contains("at least one table or key"), "{body:?}: {e}");
    }
    for body in ["", "{}", r#"{"scenario": null, "points": 10}"#] {
        let (code, resp) = post(&url, "application/json", body);
        assert_eq!(code, 200, "{body:?}: {}", short(&resp));
        assert!(resp.contains("\"band-80\""), "{body:?}: {}", short(&resp));
    }
    let (code, resp) = get(&url, "/api/live/stream?run=%7B%22scenario%22%3A%22%23%20x%22%7D");
    assert_eq!(code, 400, "{resp}");
    assert!(error_of(&resp).contains("run: scenario"), "{resp}");
}

/// `safegate live --duration 10 --duration 20` is refused; the query took the last one.
#[test]
fn a_repeated_query_parameter_is_refused() {
    let (_server, url) = common::serve();
    for (path, key) in [
        ("/api/live/stream?duration=10&duration=20", "duration"),
        ("/api/live/stream?speed=2&run=%7B%7D&speed=2", "speed"),
        ("/api/live/stream?duration=10&dur%61tion=10", "duration"),
        ("/api/fleet/stream?nodes=2&secs=10&nodes=3", "nodes"),
        ("/api/fleet/stream?outage=&outage=none", "outage"),
    ] {
        let (code, body) = get(&url, path);
        assert_eq!(code, 400, "{path}: {}", short(&body));
        let e = error_of(&body);
        assert!(e.starts_with(&format!("{key}: ")) && e.contains("given 2 times"), "{path}: {e}");
    }
}

/// Every error is `{"error"}`, a path that leads nowhere too.
#[test]
fn an_unknown_path_is_a_json_404_naming_it() {
    let (_server, url) = common::serve();
    for (method, path) in [("GET", "/nope"), ("GET", "/api/run/x"), ("POST", "/api/nothing"), ("DELETE", "/x%20y")] {
        let (code, body) = raw(&url, &format!("{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
        assert_eq!(code, 404, "{method} {path}: {body}");
        let e = error_of(&body);
        assert!(e.contains(&format!("{method} {path}")) && e.contains("not found"), "{e}");
    }
    let (code, body) = raw(&url, "PUT /api/fleet/stream HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(code, 405, "{body}");
    assert!(error_of(&body).contains("use GET"), "{body}");
}

/// A request line sent in part and never finished: the connection is closed after the
/// server's 10 s header timeout (it was held open for ever).
#[test]
fn a_request_head_that_never_ends_is_closed_within_the_timeout() {
    let (_server, url) = common::serve();
    let started = Instant::now();
    let (code, body) = raw(&url, "GET /api/run HT");
    let took = started.elapsed();
    eprintln!("an unfinished request head closed after {:.1} s", took.as_secs_f64());
    assert_eq!((code, body.as_str()), (0, ""), "no answer, only a close");
    assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(15), "{took:?}");
}

/// JSON has no NaN or Infinity: serde's "expected value at line 1 column 26" named neither
/// the token nor the field.
#[test]
fn a_non_finite_number_in_json_is_named_with_its_field() {
    let (_server, url) = common::serve();
    for (body, needle) in [
        (r#"{"set": {"run.duration": NaN}}"#, r#"request body: "run.duration": NaN is not JSON"#),
        (r#"{"set": {"traffic.rate": -Infinity}}"#, r#"request body: "traffic.rate": -Infinity is not JSON"#),
        ("{\n  \"points\":\n    Infinity\n}", r#"request body: "points": Infinity is not JSON"#),
    ] {
        let (code, resp) = post(&url, "application/json", body);
        assert_eq!(code, 400, "{body}: {resp}");
        let e = error_of(&resp);
        assert!(e.starts_with(needle) && e.contains("JSON numbers are finite"), "{body}: {e}");
    }
}

/// A boundary's range error said `boundary: boundary: …` through `/api/run`.
#[test]
fn a_boundary_error_says_boundary_once() {
    let (_server, url) = common::serve();
    for body in [
        r#"{"set": {"boundary.barrier.threshold": 1e-320}}"#,
        r#"{"set": {"boundary.barrier.threshold": 1.5}}"#,
        r#"{"policy": "gradient2", "set": {"boundary.barrier.threshold": 1.5}}"#,
    ] {
        let (code, resp) = post(&url, "application/json", body);
        assert_eq!(code, 400, "{body}: {resp}");
        let e = error_of(&resp);
        assert!(e.matches("boundary:").count() <= 1, "{body}: {e}");
        assert!(e.contains("barrier.threshold"), "{body}: {e}");
    }
}
