//! `safegate serve` in a real browser: starts the server on a free loopback port and runs
//! `tests/browser/check.mjs`, which drives headless Chromium with playwright-core (the
//! chart against the model, slider-to-redraw time, page weight, labels, a narrow screen;
//! `docs/serve.md §The browser test`).
//!
//! Needs node, Chromium (`/usr/bin/chromium` or `SAFEGATE_CHROMIUM`) and playwright-core
//! in `<target>/browser-test/node_modules` (or `SAFEGATE_NODE_MODULES`), and redis-server
//! for the live view's run; `scripts/test` installs the missing ones. Without them this test fails and says what to install: a
//! browser check that silently passes would check nothing.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::serve;

/// The target directory: the binary is `<target>/<profile>/safegate`.
fn target_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_safegate"));
    exe.parent().and_then(|p| p.parent()).expect("<target>/<profile>/safegate").to_path_buf()
}

fn from_env_or(key: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(key).map_or(default, PathBuf::from)
}

#[test]
fn the_page_redraws_the_model_as_the_sliders_move() {
    let chromium = from_env_or("SAFEGATE_CHROMIUM", PathBuf::from("/usr/bin/chromium"));
    assert!(
        chromium.is_file(),
        "Chromium not found at {}: run scripts/test (it runs apt-get install -y chromium), or set SAFEGATE_CHROMIUM",
        chromium.display()
    );
    let node_ok = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(node_ok, "node not found on PATH: install Node.js (apt-get install -y nodejs) and re-run scripts/test");
    let artifacts = target_dir().join("browser-test");
    let modules = from_env_or("SAFEGATE_NODE_MODULES", artifacts.join("node_modules"));
    assert!(
        modules.join("playwright-core").is_dir(),
        "playwright-core not found in {}: run scripts/test (it runs npm install playwright-core there), or set SAFEGATE_NODE_MODULES",
        modules.display()
    );
    std::fs::create_dir_all(&artifacts).unwrap();

    let (_server, url) = serve();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check.mjs");
    let out = Command::new("node")
        .arg(&script)
        .env("SAFEGATE_URL", &url)
        .env("SAFEGATE_NODE_MODULES", &modules)
        .env("SAFEGATE_CHROMIUM", &chromium)
        .env("SAFEGATE_ARTIFACTS", &artifacts)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", script.display());
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("check.mjs prints one JSON line");
    // The measurements, for the log (`cargo test -- --nocapture`) and the docs.
    println!("browser check: {v}");
    println!("screenshots: {}", artifacts.display());
    assert!(v["page_weight_bytes"].as_u64().unwrap() <= 150_000);
    assert!(v["redraw_ms"]["max"].as_f64().unwrap() <= 100.0);
}
