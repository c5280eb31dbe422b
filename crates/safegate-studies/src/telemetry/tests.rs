use super::traces::{generate, Fault, TraceSpec};
use super::*;
use std::path::Path;

/// The acceptance case: over generated traces with fixed seeds, every fault is flagged in
/// ≥ 95 % of its traces, and ≤ 5 % of the (trace, check) pairs without that fault are
/// flagged.
#[test]
fn flags_injected_faults_and_spares_clean_traces() {
    let seeds = 0..20u64;
    let (mut hits, mut faults, mut false_flags, mut negatives) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for fault in Fault::ALL {
        for seed in seeds.clone() {
            let tel = generate(&TraceSpec::new(fault, 1000 + seed));
            let r = check(&tel, &CheckOptions::default(), "generated").unwrap();
            let flagged = r.flagged();
            for kind in FindingKind::ALL {
                let injected = fault.finding() == Some(kind);
                let raised = flagged.contains(&kind);
                if injected {
                    faults += 1;
                    hits += raised as usize;
                    if !raised {
                        misses.push(format!("{} seed {seed}: missed", fault.name()));
                    }
                } else {
                    negatives += 1;
                    false_flags += raised as usize;
                    if raised {
                        misses.push(format!("{} seed {seed}: false {}", fault.name(), kind.name()));
                    }
                }
            }
        }
    }
    let detection = hits as f64 / faults as f64;
    let false_rate = false_flags as f64 / negatives as f64;
    eprintln!("detection {hits}/{faults}, false flags {false_flags}/{negatives}: {misses:?}");
    assert!(detection >= 0.95, "detection {hits}/{faults}: {misses:?}");
    assert!(false_rate <= 0.05, "false flags {false_flags}/{negatives}: {misses:?}");
}

fn err_of(text: &str) -> TelemetryError {
    match parse("t.csv", text) {
        Ok(_) => panic!("parsed: {text:?}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_csv_names_the_line_and_never_panics() {
    let cases: &[(&str, Option<usize>, &str)] = &[
        ("", None, "empty"),
        ("# only a comment\n", None, "empty"),
        ("time,queue\n", None, "no data rows"),
        ("time,queue\n1,2\n", None, "one data row"),
        ("queue,latency\n1,2\n2,3\n", Some(1), "no time column"),
        ("time,latency\n1,2\n2,3\n", Some(1), "no queue or in-flight column"),
        ("time,queue\n1,2\n2,abc\n", Some(3), "`abc` is not a number"),
        ("time,queue\n1,2\n2,NaN\n", Some(3), "not a finite number"),
        ("time,queue\n1,2\n2,inf\n", Some(3), "not a finite number"),
        ("time,queue\n1,2\n1,3\n", Some(3), "repeats"),
        ("time,queue\n2,2\n1,3\n", Some(3), "sorted"),
        ("time,queue\n1,2\n2\n", Some(3), "1 fields, the header has 2"),
        ("time,queue\n1,2\n2,3,4\n", Some(3), "3 fields"),
        ("time,queue\n1,2\n2,\n", Some(3), "is empty"),
        ("time,queue\n1,-2\n2,3\n", Some(2), "negative"),
        ("time,queue,health\n1,2,0.5\n2,3,1.5\n", Some(3), "outside [0, 1]"),
        ("time,queue,queue\n1,2,3\n2,3,4\n", Some(1), "given twice"),
        ("1,2\n2,3\n", Some(1), "no header"),
        ("time,queue,capacity\n1,2,0\n2,3,0\n", None, "never positive"),
        // A huge value is echoed short, not as its 301 digits.
        ("time,queue\n1,2\n2,1e300\n", Some(3), "1e300 is beyond"),
        ("time,queue\n1,2\n2,-1e300\n", Some(3), "-1e300 is negative"),
    ];
    for (text, line, what) in cases {
        let e = err_of(text);
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.to_string().contains(what), "{text:?}: {e}");
        assert!(e.to_string().starts_with("t.csv"), "{e}");
    }
}

#[test]
fn csv_reads_rates_counts_and_counters() {
    let text = "# a comment\nTime, Queue, retries, rejected_total, throughput, Foo\n0,1,2,10,5,x\n0.5,2,1,12,6,y\n1.5,0,0,15,7,z\n";
    let (t, f) = parse("t.csv", text).unwrap();
    assert_eq!(f, Format::Csv);
    assert_eq!(t.t, [0.0, 0.5, 1.5]);
    assert_eq!(t.x, [1.0, 2.0, 0.0]);
    // Counts per interval → per second (the first row takes the second's interval).
    assert_eq!(t.retries.unwrap(), [4.0, 2.0, 0.0]);
    // A counter → per second, the first row taking the second's rate.
    assert_eq!(t.rejections.unwrap(), [4.0, 4.0, 3.0]);
    assert_eq!(t.throughput.unwrap(), [5.0, 6.0, 7.0]);
    assert_eq!(t.ignored, ["Foo"]);
    // The in-flight signal when there is no queue.
    let (t, _) = parse("t.csv", "time,in_flight\n0,1\n1,2\n").unwrap();
    assert_eq!(t.signal, Some(Signal::InFlight));
}

#[test]
fn prometheus_scrapes_read_with_or_without_timestamps() {
    let stamped = "# HELP x\nsafegate_backlog 3 1000\nsafegate_requests_rejected_total{reason=\"a\"} 1 1000\nsafegate_requests_rejected_total{reason=\"b\"} 1 1000\n\
                   safegate_backlog 4 2000\nsafegate_requests_rejected_total{reason=\"a\"} 3 2000\nsafegate_requests_rejected_total{reason=\"b\"} 2 2000\n";
    let (t, f) = parse("m.prom", stamped).unwrap();
    assert_eq!(f, Format::Prometheus);
    assert_eq!(t.t, [1.0, 2.0]);
    assert_eq!(t.x, [3.0, 4.0]);
    // Label sets summed, then differenced.
    assert_eq!(t.rejections.unwrap(), [3.0, 3.0]);
    let unstamped =
        "safegate_model_time_seconds 0.5\nsafegate_waiting 1\nsafegate_model_time_seconds 1.5\nsafegate_waiting 2\n";
    let (t, _) = parse("m.prom", unstamped).unwrap();
    assert_eq!((t.t, t.x), (vec![0.5, 1.5], vec![1.0, 2.0]));
}

#[test]
fn malformed_prometheus_names_the_line() {
    let cases: &[(&str, Option<usize>, &str)] = &[
        ("safegate_backlog 1 1000\nsafegate_backlog abc 2000\n", Some(2), "not a number"),
        ("safegate_backlog 1 1000\nsafegate_backlog NaN 2000\n", Some(2), "not a finite number"),
        ("safegate_backlog 1 1000\nsafegate_backlog 2\n", Some(2), "some samples have timestamps"),
        ("safegate_backlog 1 1000\nsafegate_backlog 2 1.5\n", Some(2), "timestamp"),
        ("safegate_backlog 1 2000\nsafegate_backlog 2 1000\n", Some(2), "time order"),
        ("safegate_backlog 1\nsafegate_backlog 2\n", Some(1), "no time"),
        ("safegate_backlog{a=\"b\" 1 1000\n", Some(1), "without its"),
        ("safegate_limit 1 1000\nsafegate_limit 2 2000\n", None, "no queue metric"),
        ("safegate_backlog 1 1000\n", None, "one scrape"),
        ("safegate_backlog 1 1000\nsafegate_backlog 2 2000\nsafegate_limit 3 2000\n", Some(1), "no `safegate_limit`"),
    ];
    for (text, line, what) in cases {
        let e = err_of(text);
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.to_string().contains(what), "{text:?}: {e}");
    }
}

#[test]
fn generated_telemetry_round_trips_through_both_formats() {
    let tel = generate(&TraceSpec { duration: 120.0, dt: 0.5, ..TraceSpec::new(Fault::RetryStorm, 3) });
    let (csv, _) = parse("g.csv", &tel.to_csv()).unwrap();
    let (prom, _) = parse("g.prom", &tel.to_prometheus()).unwrap();
    for back in [&csv, &prom] {
        assert_eq!(back.t.len(), tel.t.len());
        assert_eq!(back.x, tel.x);
        assert_eq!(back.capacity, tel.capacity);
        assert_eq!(back.limit, tel.limit);
    }
    // Counts survive as rates (rounded to whole requests per interval).
    let (a, b) = (tel.retries.as_ref().unwrap(), csv.retries.as_ref().unwrap());
    assert!(a.iter().zip(b).skip(1).all(|(x, y)| (x - y).abs() <= 1.0 / 0.5));
    let r1 = check(&csv, &CheckOptions::default(), "g.csv").unwrap();
    let r2 = check(&prom, &CheckOptions::default(), "g.prom").unwrap();
    assert!(r1.flagged().contains(&FindingKind::RetryStorm) && r2.flagged().contains(&FindingKind::RetryStorm));
}

#[test]
fn the_check_needs_a_capacity_and_sane_options() {
    let (t, _) = parse("t.csv", "time,queue\n0,1\n1,2\n").unwrap();
    let e = check(&t, &CheckOptions::default(), "t.csv").unwrap_err();
    assert!(matches!(e, CheckError::UnknownCapacity { signal: Signal::Queue, .. }), "{e}");
    assert!(e.to_string().contains("`capacity` option") && !e.to_string().contains("--"), "{e}");
    for bad in [
        CheckOptions { capacity: Some(-1.0), ..CheckOptions::default() },
        CheckOptions { capacity: Some(10.0), epsilon: 0.0, ..CheckOptions::default() },
        CheckOptions { capacity: Some(10.0), threshold: 1.5, ..CheckOptions::default() },
        CheckOptions { capacity: Some(10.0), horizon: f64::NAN, ..CheckOptions::default() },
        CheckOptions { capacity: Some(10.0), eta: 1.0, ..CheckOptions::default() },
    ] {
        assert!(check(&t, &bad, "t.csv").is_err(), "{bad:?}");
    }
    // Requests in flight against the largest published limit, when nothing else says.
    let (f, _) = parse("f.csv", "time,in_flight,limit\n0,1,4\n1,2,8\n").unwrap();
    assert_eq!(check(&f, &CheckOptions::default(), "f.csv").unwrap().margin.capacity, 8.0);
    // Two rows: no verdict on zero evidence.
    let r = check(&t, &CheckOptions { capacity: Some(10.0), ..CheckOptions::default() }, "t.csv").unwrap();
    assert_eq!(r.exits.verdict, safegate_core::stats::Verdict::NotEstablished);
    assert!(r.findings.iter().all(|f| !f.flagged));
}

/// The windows are counted, never held one flag each (a horizon of 1e-12 s over an hour of
/// data would be 3.6e15 of them): horizons a boundary file refuses, or shorter than a sample
/// interval, are refused naming the field; windows a gap in the data leaves empty are not
/// counted.
#[test]
fn horizons_are_bounded_and_empty_windows_are_no_evidence() {
    let (t, _) = parse("t.csv", "time,queue\n0,1\n1,2\n2,1\n3,2\n").unwrap();
    let opts = |horizon| CheckOptions { capacity: Some(10.0), horizon, ..CheckOptions::default() };
    for bad in [1e-12, 0.01, 1e7, f64::INFINITY, f64::NAN] {
        let e = check(&t, &opts(bad), "t.csv").unwrap_err();
        assert!(matches!(e, CheckError::Option { field: "horizon", .. }), "{bad}: {e}");
    }
    let e = check(&t, &opts(0.5), "t.csv").unwrap_err();
    assert!(e.to_string().contains("sampling interval of 1 s"), "{e}");
    // Rows at 0..=9 s, one above the line (7 of 10) at 4 s, then a gap to 1,000 s: of the
    // hundred whole 10-s windows only the first holds rows, and it has the exit.
    let mut csv = String::from("time,queue\n");
    for i in 0..10 {
        csv += &format!("{i},{}\n", if i == 4 { 9 } else { 1 });
    }
    csv += "1000,1\n";
    let (g, _) = parse("g.csv", &csv).unwrap();
    let r = check(&g, &opts(10.0), "g.csv").unwrap();
    assert_eq!((r.exits.frequency.trials, r.exits.frequency.exits), (1, 1));
    // A window that opens above the line counts as an exit though no row inside is above.
    let (h, _) = parse("h.csv", "time,queue\n0,1\n9,9\n10,1\n15,1\n20,1\n25,1\n30,1\n").unwrap();
    let r = check(&h, &opts(10.0), "h.csv").unwrap();
    assert_eq!((r.exits.frequency.trials, r.exits.frequency.exits), (3, 2));
}

#[test]
fn sniff_reads_several_labels_as_prometheus() {
    assert_eq!(sniff("safegate_backlog{a=\"1\",b=\"x\"} 1 1000\n"), Format::Prometheus);
    assert_eq!(sniff("safegate_backlog{a=\"1\"} 1\n"), Format::Prometheus);
    assert_eq!(sniff("time,queue\n0,1\n"), Format::Csv);
    assert_eq!(sniff("time{x,queue\n"), Format::Csv);
    let (tel, f) = parse("l", "m{a=\"1\",b=\"x\"} 1 1000\nsafegate_backlog{a=\"1\",b=\"x\"} 2 1000\nsafegate_backlog{a=\"1\",b=\"x\"} 3 2000\n").unwrap();
    assert_eq!((f, tel.x), (Format::Prometheus, vec![2.0, 3.0]));
}

#[test]
fn rows_and_series_are_capped() {
    let mut csv = String::from("time,queue\n");
    for i in 0..=super::MAX_ROWS {
        csv.push_str(&i.to_string());
        csv.push_str(",1\n");
    }
    let e = parse_as("big.csv", &csv, Format::Csv).unwrap_err();
    assert_eq!(e.line, Some(super::MAX_ROWS + 2));
    assert!(e.to_string().contains("more than 3000000 rows"), "{e}");
    drop(csv);
    let mut prom = String::new();
    for i in 0..=super::MAX_ROWS {
        prom.push_str("safegate_limit 1 ");
        prom.push_str(&(i * 1000).to_string());
        prom.push('\n');
    }
    let e = parse_as("big.prom", &prom, Format::Prometheus).unwrap_err();
    assert!(e.to_string().contains("more than 3000000 scrapes"), "{e}");
    drop(prom);
    let many: String = (0..=super::prom::MAX_SERIES).map(|i| format!("x{{i=\"{i}\"}} 1\n")).collect();
    let e = parse_as("many.prom", &many, Format::Prometheus).unwrap_err();
    assert!(e.to_string().contains("distinct series") && e.line == Some(super::prom::MAX_SERIES + 1), "{e}");
}

#[test]
fn values_beyond_the_ranges_name_their_line() {
    let e = parse_as("q", "time,queue\n0,1\n1,1e308\n", Format::Csv).unwrap_err();
    assert_eq!(e.line, Some(3));
    let e = parse_as("o", "time,queue,offered_total\n0,1,0\n1,1,1\n# c\n2,1,1e305\n", Format::Csv).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    let e = parse_as("r", "time,queue,rejections\n0,1,0\n0.001,1,1e5\n", Format::Csv).unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert!(parse_as("ok", "time,queue,offered\n0,1e8,1e7\n1,0,0\n", Format::Csv).is_ok());
    let e = parse_as("p", "safegate_backlog 1 1000\nsafegate_requests_offered_total 0 1000\nsafegate_backlog 1 2000\nsafegate_requests_offered_total 1e300 2000\n", Format::Prometheus).unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn options_outside_a_boundary_files_ranges_are_refused() {
    let tel = parse_as("t", "time,queue,capacity\n0,1,10\n1,2,10\n2,1,10\n", Format::Csv).unwrap();
    for (opts, field) in [
        (CheckOptions { capacity: Some(5e-324), ..CheckOptions::default() }, "capacity"),
        (CheckOptions { capacity: Some(1e308), ..CheckOptions::default() }, "capacity"),
        (CheckOptions { epsilon: 1e-300, ..CheckOptions::default() }, "epsilon"),
        (CheckOptions { eta: 1e-300, ..CheckOptions::default() }, "eta"),
        (CheckOptions { threshold: 1.0, ..CheckOptions::default() }, "threshold"),
        (CheckOptions { retry_budget: 1.0, ..CheckOptions::default() }, "retry_budget"),
    ] {
        let e = check(&tel, &opts, "t").unwrap_err();
        assert!(matches!(&e, CheckError::Option { field: f, .. } if *f == field), "{e}");
        // Named by field, never by a flag.
        assert!(e.to_string().starts_with(&format!("t: {field} = ")) && !e.to_string().contains("--"), "{e}");
    }
    let r = check(&tel, &CheckOptions { horizon: 1.0, ..CheckOptions::default() }, "t").unwrap();
    assert_eq!(r.draft_error, None);
}

/// Issue "boundary check on a directory or on binary data adds 'telemetry is read up to
/// 448 MiB (split it)' to an unrelated cause": the reader names the input and the cause,
/// and advises splitting only when the size is the cause.
#[test]
fn the_input_is_read_bounded_and_split_advice_is_for_size_alone() {
    let dir = std::env::temp_dir().join(format!("safegate-telemetry-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("binary.csv");
    std::fs::write(&binary, b"time,queue\n0,1\n\xff\xfe\x00\x01").unwrap();
    let big = dir.join("big.csv");
    std::fs::write(&big, "time,queue\n".repeat(200)).unwrap();
    let missing = dir.join("missing.csv");
    for (path, cause) in [(&dir, "directory"), (&binary, "not UTF-8"), (&missing, "No such file")] {
        let e = read_input(path, 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: cannot read: ", path.display())) && e.contains(cause), "{e}");
        assert!(!e.contains("split") && !e.contains("MiB"), "{e}");
    }
    let e = read_input(&big, 1000).unwrap_err().to_string();
    assert!(e.contains("cannot read: more than") && e.ends_with("; split it"), "{e}");
    let e = read_input(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string();
    assert!(e.contains("more than 1 MiB") && e.ends_with("split it"), "{e}");
    let (source, text) = read_input(&big, 1 << 20).unwrap();
    assert_eq!((source, text.len()), (big.display().to_string(), 2200));
    let _ = std::fs::remove_dir_all(&dir);
}

/// What is wrong quotes at most an excerpt of the input (a 100,000-character cell, metric
/// name or line).
#[test]
fn errors_quote_a_bounded_excerpt_of_the_input() {
    let long = "[".repeat(100_000);
    for text in [
        format!("time,queue\n1,2\n2,{long}\n"),
        format!("{},queue\n1,2\n2,3\n", "1".repeat(100_000)),
        format!("# TYPE x gauge\n{long} 1\n"),
        format!("# TYPE x gauge\nx {long}\n"),
    ] {
        let e = parse("t", &text).unwrap_err().to_string();
        assert!(e.len() < 400 && !e.contains(&"[".repeat(81)), "{} chars: {}", e.len(), &e[..200.min(e.len())]);
    }
}
