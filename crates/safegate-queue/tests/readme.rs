//! The README's program is `examples/quickstart.rs`, character for character, and it runs
//! as written against a local redis-server.

mod common;

use std::process::Command;

#[test]
fn the_readme_program_is_the_quickstart_example_and_runs() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{dir}/examples/quickstart.rs")).unwrap();
    let start = readme.find("```rust").expect("README has a Rust block");
    let body = &readme[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let block = &body[..body.find("```").unwrap()];
    assert_eq!(block, example, "README.md's first Rust block and examples/quickstart.rs differ");
    // `cargo test` builds the examples beside the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples").join("quickstart");
    assert!(bin.is_file(), "{} not built (cargo test builds examples)", bin.display());
    let r = common::Redis::start(false);
    let out = Command::new(&bin).arg(r.url()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "quickstart failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.contains("completed 100 (100 by this worker); the books balance: true"), "{last}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("sent to user")).count(), 100);
}
